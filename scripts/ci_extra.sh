#!/usr/bin/env bash
# Extra CI checks of the input readers (docs/formats.md, "Hardening"), run after the normal
# test suite:
#   1. libFuzzer: every reader target for FUZZ_SECONDS (default 10) on its seed corpus,
#      built with clang -fsanitize=fuzzer,address,undefined (tests/fuzz/build_and_run.sh);
#   2. an AddressSanitizer + UndefinedBehaviorSanitizer build of unit_tests, run in full.
# About 11 minutes on 2 cores (CI_JOBS=2; measured 689 s: fuzzers 141 s, the sanitized build
# 6.6 min, its tests 2.4 min).
# Any finding fails the script (exit 1).
#
# Environment:
#   FUZZ_SECONDS=N            seconds per fuzz target (default 10; longer runs find more)
#   CI_EXTRA_SKIP_FUZZ=1      skip step 1;  CI_EXTRA_SKIP_SANITIZE=1  skip step 2
#                             (a skip prints "ci_extra: SKIP <step>: <reason>" and is appended
#                             to $CULPRIT_SKIP_FILE when set; under CI=true it fails the script)
#   SANITIZE_BUILD_DIR=DIR    build directory of step 2 (default build-asan)
#   FUZZ_BUILD_DIR=DIR        build directory of step 1 (default build-fuzz)
#   CI_JOBS=N                 parallel compile jobs (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."

jobs="${CI_JOBS:-2}"
started=$(date +%s)
status=0

skip_step() {  # skip_step STEP REASON
  echo "ci_extra: SKIP $1: $2"
  if [ -n "${CULPRIT_SKIP_FILE:-}" ]; then printf '%s\t%s\n' "$1" "$2" >> "$CULPRIT_SKIP_FILE"; fi
  if [ "${CI:-}" = true ]; then
    echo "ci_extra: FAIL: CI=true and $1 skipped ($2): CI must run it" >&2
    status=1
  fi
}

if [ "${CI_EXTRA_SKIP_FUZZ:-0}" = 1 ]; then
  skip_step "reader fuzzers (ci_extra step 1)" "CI_EXTRA_SKIP_FUZZ=1"
else
  echo "ci_extra: fuzzing the readers (${FUZZ_SECONDS:-10} s per target)"
  if ! FUZZ_JOBS="$jobs" tests/fuzz/build_and_run.sh "${FUZZ_SECONDS:-10}"; then
    echo "ci_extra: fuzzing found a problem" >&2
    status=1
  fi
fi

if [ "${CI_EXTRA_SKIP_SANITIZE:-0}" = 1 ]; then
  skip_step "ASan+UBSan unit_tests (ci_extra step 2)" "CI_EXTRA_SKIP_SANITIZE=1"
else
  build="${SANITIZE_BUILD_DIR:-build-asan}"
  echo "ci_extra: ASan+UBSan build of unit_tests in $build"
  mkdir -p "$build"
  logs="$build/ci_extra"  # logs stay inside the (ignored) build directory
  # -O0 keeps the sanitized build quick to compile (3x faster than -O1 here);
  # -fno-sanitize-recover turns every UBSan report into a failure.
  cmake -S . -B "$build" -DCULPRIT_SANITIZE=ON -DCULPRIT_WITH_CUDA=OFF -DCULPRIT_BUILD_BENCH=OFF \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" \
    -DCMAKE_CXX_FLAGS="-fno-sanitize-recover=undefined" > "$logs.configure.log" 2>&1 ||
    { tail -n 30 "$logs.configure.log" >&2; exit 1; }
  cmake --build "$build" -j "$jobs" --target unit_tests > "$logs.build.log" 2>&1 ||
    { grep -E "error|Error" "$logs.build.log" | head -n 30 >&2; exit 1; }
  # One shard per compile job: the sanitized tests run single-threaded and take about 4 min
  # of CPU, mostly the simulator's; GoogleTest deals the tests round-robin to the shards.
  echo "ci_extra: running the sanitized unit_tests in $jobs shards"
  pids=()
  for ((shard = 0; shard < jobs; ++shard)); do
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 GTEST_TOTAL_SHARDS="$jobs" GTEST_SHARD_INDEX="$shard" \
      "$build/tests/unit_tests" --gtest_brief=1 > "$logs.test.$shard.log" 2>&1 &
    pids+=("$!")
  done
  for ((shard = 0; shard < jobs; ++shard)); do
    log="$logs.test.$shard.log"
    if ! wait "${pids[$shard]}"; then
      echo "ci_extra: sanitized unit_tests (shard $shard of $jobs) failed; last lines of $log:" >&2
      tail -n 60 "$log" >&2
      status=1
    elif ! grep -Eq '^\[  PASSED  \] [1-9][0-9]* test' "$log"; then
      echo "ci_extra: the sanitized unit_tests (shard $shard of $jobs) ran no test; last lines of $log:" >&2
      tail -n 20 "$log" >&2
      status=1
    else
      echo "ci_extra: shard $shard of $jobs: $(grep -E '^\[  PASSED  \]' "$log")"
    fi
  done
fi

echo "ci_extra: done in $(( $(date +%s) - started )) s (status $status)"
exit "$status"
