#!/usr/bin/env bash
# Wall time and peak memory of the simulator writing a whole cluster's NCCL traces node by
# node (`nccl-culprit mock --out DIR`, docs/simulator.md "Memory"): ring AllReduce, 8 GPUs a
# node, 3 iterations, other scenario keys at their defaults. 2048 nodes is the issue's 16k-GPU
# target (peak RSS under 2 GB); the time grows with the square of the GPUs (a ring's
# 2(n-1) steps per rank), about 7 minutes on one core at 2048 nodes.
# With --general, the general engine instead: tree AllReduce, tree with world+dp, and a
# pipeline of 1 MiB sends, each 8 GPUs a node, 3 iterations (seconds at 2048 nodes, but up to
# 6 GB written to /tmp and removed after each scenario).
#
#   bench/bench_simulator.sh [--general] [path/to/nccl-culprit] [nodes ...]   (default: 128 512 2048)
#
# Prints one line per size: GPUs, wall seconds, peak resident set (/usr/bin/time -v's
# "Maximum resident set size"), files and bytes written. Nothing is asserted: benchmarks
# print figures, the targets live in the docs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
templates=("topology=ring,nodes=NODES,gpus=8,seqs=3")
if [ "${1:-}" = "--general" ]; then
  templates=("topology=tree,nodes=NODES,gpus=8,seqs=3" "topology=tree,comms=world+dp,nodes=NODES,gpus=8,seqs=3"
             "topology=pipeline,nodes=NODES,gpus=8,seqs=3,bytes=1M")
  shift
fi
bin=$(realpath "${1:-$root/build/nccl-culprit}")
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(128 512 2048)
[ -x "$bin" ] || { echo "bench_simulator: $bin is not an executable (build first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench_simulator: needs /usr/bin/time (GNU time) for the peak RSS" >&2; exit 2; }

tmp=$(mktemp -d /tmp/nccl-culprit-bench-sim.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
printf '%-58s %8s %10s %8s %10s\n' "scenario" "wall s" "peak RSS" "files" "written"
for nodes in "${sizes[@]}"; do for template in "${templates[@]}"; do
  spec=${template/NODES/$nodes}
  "/usr/bin/time" -v "$bin" mock --out "$tmp/out" --scenario "$spec" > /dev/null 2> "$tmp/time" ||
    { cat "$tmp/time" >&2; echo "bench_simulator: failed: mock --scenario $spec" >&2; exit 1; }
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; printf "%.1f", s}' "$tmp/time")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f MB", $2 / 1024}' "$tmp/time")
  files=$(find "$tmp/out" -type f | wc -l)
  bytes=$(du -sh "$tmp/out" | cut -f1)
  printf '%-58s %8s %10s %8s %10s\n' "$spec" "$wall" "$rss" "$files" "$bytes"
  rm -rf "$tmp/out"
done; done
