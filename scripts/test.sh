#!/usr/bin/env bash
# The second README command: install, build, and run the whole test suite: the sanitizer
# build and fuzzers of the readers (scripts/ci_extra.sh; SKIP_EXTRA=1 leaves them out), then
# every CTest entry (unit, MPI under mpirun -np 1/2/4, end-to-end with h5py, live capture,
# a real one-node Slurm, the accuracy matrix).
#
# Always configures with the tests and benchmarks on (scripts/run_mock.sh turns them off in
# the same cache), and a CTest run that executes no test fails. CTest's own summary is
# followed by one "skipped: <name>: <reason>" line per skipped test, check or step and a
# final "test.sh: ..." line. Exit 0 only when nothing failed; under CI=true also only when
# nothing was skipped but for want of a GPU (CI has all that scripts/setup.sh installs).
# Arguments go to cmake (scripts/build.sh); BUILD_DIR (default build), CTEST_JOBS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${BUILD_DIR:-build}
case "$build" in /*) ;; *) build=$root/$build ;; esac
scripts/setup.sh
scripts/build.sh -DCULPRIT_BUILD_TESTS=ON -DCULPRIT_BUILD_BENCH=ON "$@"
# shellcheck disable=SC1091  # not followed: a sourced helper outside this check
. scripts/mpi_env.sh

export CULPRIT_SKIP_FILE=$build/skips.tsv  # skips outside CTest (scripts/ci_extra.sh appends)
: > "$CULPRIT_SKIP_FILE"
extra_rc=0
if [ "${SKIP_EXTRA:-0}" = 1 ]; then
  echo "test.sh: SKIP reader fuzzers and ASan+UBSan unit_tests (scripts/ci_extra.sh): SKIP_EXTRA=1"
  printf '%s\t%s\n' "reader fuzzers and ASan+UBSan unit_tests (scripts/ci_extra.sh)" "SKIP_EXTRA=1" \
    >> "$CULPRIT_SKIP_FILE"
else
  scripts/ci_extra.sh || extra_rc=$?
fi

cd "$build"
rm -f junit.xml
ctest_rc=0
# The outputs go whole into junit.xml (the skip reasons are read from there).
ctest --output-on-failure --no-tests=error --timeout 900 -j "${CTEST_JOBS:-2}" --output-junit junit.xml \
  --test-output-size-passed 4194304 --test-output-size-failed 4194304 || ctest_rc=$?

echo
ci=()
if [ "${CI:-}" = true ]; then ci=(--ci); fi
report_rc=0
/usr/bin/python3 "$root/tests/skip_report.py" --junit junit.xml --extra "$CULPRIT_SKIP_FILE" "${ci[@]}" ||
  report_rc=$?
problems=()
[ "$ctest_rc" -eq 0 ] || problems+=("ctest exit $ctest_rc")
[ "$extra_rc" -eq 0 ] || problems+=("scripts/ci_extra.sh exit $extra_rc")
[ "$report_rc" -eq 0 ] || problems+=("skip report exit $report_rc")
if [ "${#problems[@]}" -gt 0 ]; then
  summary=$(printf '%s; ' "${problems[@]}")
  echo "test.sh: FAILED (${summary%; })"
  exit 1
fi
echo "test.sh: PASSED"
