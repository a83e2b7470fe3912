#!/usr/bin/env bash
# The first README command: install, build, and analyse the embedded mock cluster
# (4 nodes x 8 GPUs, ring AllReduce, one straggler GPU) with 4 analyzer processes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh -DCULPRIT_BUILD_TESTS=OFF -DCULPRIT_BUILD_BENCH=OFF
# shellcheck source=scripts/mpi_env.sh
. scripts/mpi_env.sh
spec=${MOCK_SPEC:-topology=ring,nodes=4,gpus=8,channels=2,seqs=20,fault=slow_gpu:13}
mkdir -p out
mpirun -np "${NP:-4}" build/nccl-culprit analyze --mock "$spec" --output out/mock.h5 --json out/mock.json --html out/mock.html
echo "results: out/mock.h5 (and out/mock.json; the picture: out/mock.html, open it in a browser)"
