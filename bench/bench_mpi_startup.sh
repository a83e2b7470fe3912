#!/usr/bin/env bash
# Wall time of `nccl-culprit analyze` on a 16 x 8 probing export (CSV and JSON, written by
# the simulator) in one process without a launcher, under `mpirun -np 1` and `-np 4`, with
# the tool's MPI transport (ob1 over shared memory and TCP) and with the site's; the
# MPI start-up share is the part of the mpirun wall time the single process does not spend.
#
#   bench/bench_mpi_startup.sh [path/to/nccl-culprit] [runs per figure, default 5]
#
# Prints one line per figure (median of the runs). Nothing is asserted: the targets live in
# the notes and docs (README "Benchmarks").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$root/build/nccl-culprit}")
runs=${2:-5}
[ -x "$bin" ] || { echo "bench_mpi_startup: $bin is not an executable (build first)" >&2; exit 2; }
cd "$root"
# shellcheck source=scripts/mpi_env.sh
. scripts/mpi_env.sh
unset OMPI_MCA_pml OMPI_MCA_btl OMPI_MCA_osc OMPI_MCA_coll_hcoll_enable OMPI_MCA_mpi_yield_when_idle  # the binary's own choice

tmp=$(mktemp -d /tmp/nccl-culprit-bench-mpi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
spec=topology=ring,nodes=16,gpus=8,channels=2,seqs=20,fault=slow_gpu:13
for fmt in csv json; do
  "$bin" mock --out "$tmp/$fmt" --format "probing-$fmt" --scenario "$spec" > /dev/null
done

# Median wall seconds of `runs` runs of the command.
median_wall() {
  local times=() i start end
  for ((i = 0; i < runs; i++)); do
    start=$(date +%s%N)
    "$@" > /dev/null 2>&1 || { echo "bench_mpi_startup: failed: $*" >&2; exit 1; }
    end=$(date +%s%N)
    times+=("$((end - start))")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]/1e9}'
}

share() {  # mpirun wall, in-process wall -> percent of the mpirun wall spent outside the analysis
  awk -v m="$1" -v s="$2" 'BEGIN {printf "%.0f%%", (m > 0 ? 100 * (m - s) / m : 0)}'
}

# The floor: an MPI program that only starts and stops, with the tool's transport.
floor=""
if command -v mpicc > /dev/null; then
  printf '#include <mpi.h>\nint main(int c, char** v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n' > "$tmp/empty.c"
  mpicc -O2 "$tmp/empty.c" -o "$tmp/empty_mpi" 2> /dev/null && floor=$tmp/empty_mpi
fi

echo "bench_mpi_startup: 16 x 8 ring, 20 sequences, probing exports ($(du -sh "$tmp/csv" | cut -f1) CSV, $(du -sh "$tmp/json" | cut -f1) JSON); median of $runs runs"
if [ -n "$floor" ]; then
  for np in 1 4; do
    # shellcheck source=scripts/mpi_transport.sh
    wall=$(. scripts/mpi_transport.sh; median_wall mpirun -np "$np" "$floor")
    echo "  MPI_Init + MPI_Finalize alone, mpirun -np $np, transport tool  $wall s"
  done
fi
for fmt in csv json; do
  args=(analyze --shared "$tmp/$fmt" --output "$tmp/out.h5" --quiet)
  in_process=$(median_wall "$bin" "${args[@]}")
  echo "  $fmt  in process (no launcher)          ${in_process} s"
  for transport in tool site; do
    for np in 1 4; do
      wall=$(export NCCL_CULPRIT_MPI_TRANSPORT=$transport; median_wall mpirun -np "$np" "$bin" "${args[@]}")
      echo "  $fmt  mpirun -np $np, transport $transport  ${wall} s   MPI start-up share $(share "$wall" "$in_process")"
    done
  done
done
