#!/usr/bin/env bash
# The second README command: install, build, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
# shellcheck source=scripts/mpi_env.sh
. scripts/mpi_env.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 -j "${CTEST_JOBS:-2}"
