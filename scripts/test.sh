#!/usr/bin/env bash
# The second README command: install, build, and run the whole test suite: the sanitizer
# build and fuzzers of the readers (scripts/ci_extra.sh; SKIP_EXTRA=1 leaves them out), then
# every CTest entry (unit, MPI under mpirun -np 1/2/4, end-to-end with h5py, live capture,
# a real one-node Slurm, the accuracy matrix).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
# shellcheck source=scripts/mpi_env.sh
. scripts/mpi_env.sh
if [ "${SKIP_EXTRA:-0}" != 1 ]; then
  scripts/ci_extra.sh
fi
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 -j "${CTEST_JOBS:-2}"
