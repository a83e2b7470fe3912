#!/usr/bin/env bash
# The phases of `analyze` as the job grows (issue 14): the simulator writes a ring job of
# NODES x 8 GPUs x 3 iterations to disk, then `analyze --shared` reads it in one process and
# under `mpirun -np 4`, with NCCL_CULPRIT_TIMING=1 so that rank 0 prints the wall time of
# each phase (read, reduce, exchange, analyse, write). Prints one line per size and process
# count, with the peak resident set of the largest process, then the growth per doubling of
# the job of each phase (the ratio between two sizes to the power 1 / log2 of their ratio).
#
#   bench/bench_scale.sh [path/to/nccl-culprit] [nodes ...]   (default: 128 512 2048, i.e.
#                                                              1k, 4k and 16k processes)
#
# About 10 minutes at 2048 nodes, most of it the simulator. Nothing is asserted.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/build/nccl-culprit}")
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(128 512 2048)
[ -x "$bin" ] || { echo "bench_scale: $bin is not an executable (build first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench_scale: needs /usr/bin/time (GNU time) for the peak RSS" >&2; exit 2; }
# shellcheck disable=SC1091  # the project's MPI settings (root, oversubscription, transport)
. "$root/scripts/mpi_env.sh"

tmp=$(mktemp -d /tmp/nccl-culprit-bench-scale.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
table=$tmp/table
printf '%-10s %4s %8s %8s %9s %8s %8s %8s %10s\n' processes np read reduce exchange analyse write "wall s" "peak RSS"
for nodes in "${sizes[@]}"; do
  spec="topology=ring,nodes=$nodes,gpus=8,seqs=3,fault=slow_gpu:$((nodes * 4 + 3))"
  "$bin" mock --out "$tmp/data" --scenario "$spec" > /dev/null
  for np in 1 4; do
    launcher=()
    [ "$np" -gt 1 ] && launcher=(mpirun -np "$np")
    NCCL_CULPRIT_TIMING=1 /usr/bin/time -v "${launcher[@]}" "$bin" analyze --shared "$tmp/data" \
      --output "$tmp/r.h5" --quiet > /dev/null 2> "$tmp/err" ||
      { cat "$tmp/err" >&2; echo "bench_scale: analyze failed at $nodes nodes, np $np" >&2; exit 1; }
    awk -v n=$((nodes * 8)) -v np="$np" -F': ' '
      /phases on rank 0/ { split($0, parts, "rank 0: "); m = split(parts[2], ph, ", ");
                           for (i = 1; i <= m; i++) { split(ph[i], kv, " "); t[kv[1]] = kv[2] } }
      /Elapsed \(wall clock\)/ { k = split($2, c, ":"); s = 0; for (i = 1; i <= k; i++) s = s * 60 + c[i]; wall = s }
      /Maximum resident set size/ { rss = $2 / 1024 }
      END { printf "%-10d %4d %8.3f %8.3f %9.3f %8.3f %8.3f %8.1f %7.0f MB\n", n, np, t["read"], t["reduce"],
                   t["exchange"], t["analyse"], t["write"], wall, rss }' "$tmp/err" | tee -a "$table"
  done
  rm -rf "$tmp/data"
done
echo
echo "growth per doubling of the job (np 1):"
awk 'function g(now, before, d) { return ((now > 0 ? now : 5e-4) / (before > 0 ? before : 5e-4)) ^ (1 / d) }
     $2 == 1 { if (have) { d = log($1 / n0) / log(2);
                 printf "  %d -> %d processes: read x%.2f, reduce x%.2f, exchange x%.2f, analyse x%.2f, write x%.2f\n",
                        n0, $1, g($3, r0, d), g($4, e0, d), g($5, x0, d), g($6, a0, d), g($7, w0, d) }
               n0 = $1; r0 = $3; e0 = $4; x0 = $5; a0 = $6; w0 = $7; have = 1 }' "$table"
