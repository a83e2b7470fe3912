#!/usr/bin/env bash
# Builds the libFuzzer targets of the input readers with clang (-fsanitize=fuzzer,address,
# undefined; only src/io's reader sources, no other dependency) and runs each for a bounded
# time on a copy of the seed corpus in tests/fuzz/corpus.
#
#   tests/fuzz/build_and_run.sh [SECONDS_PER_TARGET]      (default $FUZZ_SECONDS or 20)
#
# Environment: FUZZ_CXX (default clang++-14, else clang++), FUZZ_BUILD_DIR (default
# build-fuzz), FUZZ_JOBS (parallel compiles, default 2). A crash leaves its input in
# $FUZZ_BUILD_DIR/artifacts/ and makes the script fail; reproduce it with
#   $FUZZ_BUILD_DIR/<target> $FUZZ_BUILD_DIR/artifacts/<file>
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
seconds="${1:-${FUZZ_SECONDS:-20}}"
out="${FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${FUZZ_JOBS:-2}"

cxx="${FUZZ_CXX:-}"
if [ -z "$cxx" ]; then
  if command -v clang++-14 > /dev/null; then cxx=clang++-14; else cxx=clang++; fi
fi
if ! command -v "$cxx" > /dev/null; then
  echo "fuzz: $cxx not found (apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 1
fi

flags=(-std=c++20 -g -O1 -fno-omit-frame-pointer "-fsanitize=fuzzer,address,undefined"
       -fno-sanitize-recover=undefined -I"$root/src" -I"$root")
sources=(trace_line line_reader local_data nccl_trace_reader slot_gates probing_rows profiler_counters probing_csv_reader
         probing_json_reader safe_unpickler flight_recorder_reader)
targets=(fuzz_trace_line fuzz_nccl_trace fuzz_probing_csv fuzz_probing_json fuzz_flight_recorder_pickle)

mkdir -p "$out/obj" "$out/artifacts"
started=$(date +%s)

# Compile the readers once, then each target; $jobs compilers at a time.
compile() {  # source object
  "$cxx" "${flags[@]}" -c "$1" -o "$2"
}
pids=()
for s in "${sources[@]}"; do
  compile "$root/src/io/$s.cpp" "$out/obj/$s.o" &
  pids+=($!)
  if [ "${#pids[@]}" -ge "$jobs" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for t in "${targets[@]}"; do
  compile "$here/$t.cpp" "$out/obj/$t.o" &
  pids+=($!)
  if [ "${#pids[@]}" -ge "$jobs" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done
objects=()
for s in "${sources[@]}"; do objects+=("$out/obj/$s.o"); done
for t in "${targets[@]}"; do
  "$cxx" "${flags[@]}" "$out/obj/$t.o" "${objects[@]}" -o "$out/$t"
done
echo "fuzz: built ${#targets[@]} targets with $cxx in $(( $(date +%s) - started )) s"

status=0
for t in "${targets[@]}"; do
  corpus_name="${t#fuzz_}"
  work="$out/corpus/$corpus_name"
  mkdir -p "$work"
  if ! compgen -G "$here/corpus/$corpus_name/*" > /dev/null; then
    echo "fuzz: $t: no seed corpus in $here/corpus/$corpus_name" >&2
    status=1
    continue
  fi
  cp -n "$here/corpus/$corpus_name/"* "$work/" 2> /dev/null || true
  echo "fuzz: $t for ${seconds} s"
  if ! UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
      "$out/$t" "$work" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$out/artifacts/$t-" -print_final_stats=1 > "$out/$t.log" 2>&1; then
    echo "fuzz: $t FAILED; last lines of $out/$t.log:" >&2
    tail -n 40 "$out/$t.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|Done " "$out/$t.log" | tr '\n' ' '
    echo
    # A run that executed no input tested nothing: that is a failure, not a pass.
    units=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$out/$t.log" | tail -n 1)
    if [ "${units:-0}" -eq 0 ]; then
      echo "fuzz: $t executed no input (see $out/$t.log)" >&2
      status=1
    fi
  fi
done
echo "fuzz: finished in $(( $(date +%s) - started )) s"
exit "$status"
