#!/usr/bin/env bash
# GPU checks of the CUDA reduction (kernels/), for a machine with an NVIDIA GPU.
#
# Configures and builds the project (unit tests and the reduction benchmark), runs the CUDA
# reduction tests (bit-for-bit against the CPU path) and the reduction benchmark at 1M, 10M
# and 100M records, and prints every figure. Finishes in well under 5 minutes on one GPU.
#
# Environment:
#   BUILD_DIR           build directory (default build-gpu)
#   CULPRIT_CUDA_ARCH   CMAKE_CUDA_ARCHITECTURES (default: the first GPU's compute
#                       capability from nvidia-smi, else "native"; e.g. 90 for H100/H200)
#   BENCH_SIZES         benchmark sizes (default 1000000,10000000,100000000)
#
# If the full project cannot be configured on this machine (MPI, HDF5, Boost or
# nlohmann_json missing), a reduction-only project is built instead: it needs only the CUDA
# toolkit, CMake and GoogleTest.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-build-gpu}"
case "${BUILD_DIR}" in
  /*) ;;
  *) BUILD_DIR="${ROOT}/${BUILD_DIR}" ;;
esac
ARCH="${CULPRIT_CUDA_ARCH:-}"
SIZES="${BENCH_SIZES:-1000000,10000000,100000000}"
JOBS="$(nproc)"
START="$(date +%s)"

step() { printf '\n=== %s (t=%ss)\n' "$1" "$(($(date +%s) - START))"; }

step "device"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv || true
else
  echo "nvidia-smi not found"
fi
NVCC="$(command -v nvcc || true)"
if [[ -z "${NVCC}" && -x /usr/local/cuda/bin/nvcc ]]; then NVCC=/usr/local/cuda/bin/nvcc; fi
if [[ -z "${NVCC}" ]]; then
  echo "nvcc not found: the CUDA reduction cannot be built here" >&2
  exit 1
fi
"${NVCC}" --version | tail -n 2
if [[ -z "${ARCH}" ]]; then
  # The first GPU's compute capability ("9.0" -> 90); CMake's "native" when it cannot be read.
  ARCH="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '. ' || true)"
  [[ "${ARCH}" =~ ^[0-9]+$ ]] || ARCH=native
fi

# Reduction-only project: the sources of src/reduce, kernels/ and the reduction tests.
write_standalone() {
  local dir="$1"
  mkdir -p "${dir}"
  cat >"${dir}/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.24)
project(culprit_reduce_gpu_checks LANGUAGES CXX CUDA)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
find_package(Threads REQUIRED)
find_package(CUDAToolkit REQUIRED)
find_package(GTest REQUIRED)
set(M "${ROOT}")
file(GLOB RED \${M}/src/reduce/*.cpp \${M}/kernels/*.cu \${M}/kernels/*.cpp)
list(FILTER RED EXCLUDE REGEX "_stub\\\\.cpp$")
add_library(red STATIC \${RED})
target_include_directories(red PUBLIC \${M}/src \${M})
target_compile_options(red PRIVATE \$<\$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
target_link_libraries(red PUBLIC CUDA::cudart_static Threads::Threads)
file(GLOB T \${M}/tests/unit/test_reduce*.cpp \${M}/tests/gpu/*.cpp)
add_executable(unit_tests \${T})
target_link_libraries(unit_tests PRIVATE red GTest::gtest GTest::gtest_main)
add_executable(bench_reduce \${M}/bench/bench_reduce.cpp)
target_link_libraries(bench_reduce PRIVATE red)
CMAKE
}

step "configure (${BUILD_DIR}, CUDA architectures ${ARCH})"
TESTS_BIN="${BUILD_DIR}/tests/unit_tests"
BENCH_BIN="${BUILD_DIR}/bench/bench_reduce"
if timeout 120 cmake -S "${ROOT}" -B "${BUILD_DIR}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="${NVCC}" -DCMAKE_CUDA_ARCHITECTURES="${ARCH}" \
  -DCULPRIT_BUILD_TESTS=ON -DCULPRIT_BUILD_BENCH=ON; then
  step "build (full project, ${JOBS} jobs)"
  timeout 180 cmake --build "${BUILD_DIR}" -j "${JOBS}" --target unit_tests bench_reduce
else
  echo "full project did not configure here; building the reduction-only project"
  BUILD_DIR="${BUILD_DIR}/reduce-only"
  write_standalone "${BUILD_DIR}/src"
  timeout 120 cmake -S "${BUILD_DIR}/src" -B "${BUILD_DIR}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_COMPILER="${NVCC}" -DCMAKE_CUDA_ARCHITECTURES="${ARCH}"
  step "build (reduction only, ${JOBS} jobs)"
  timeout 180 cmake --build "${BUILD_DIR}" -j "${JOBS}" --target unit_tests bench_reduce
  TESTS_BIN="${BUILD_DIR}/unit_tests"
  BENCH_BIN="${BUILD_DIR}/bench_reduce"
fi

STATUS=0
step "CUDA reduction tests"
if ! timeout 240 "${TESTS_BIN}" --gtest_filter='ReduceCuda.*:ReduceDispatch.*' --gtest_color=no; then
  echo "CUDA reduction tests FAILED"
  STATUS=1
fi
# A skipped CUDA test here means the device was not usable: that is a failure of this check.
PROBE_OUT="$("${TESTS_BIN}" --gtest_filter='ReduceCuda.ProbeReportsDevice' --gtest_color=no 2>&1 || true)"
if grep -q SKIPPED <<<"${PROBE_OUT}"; then
  echo "CUDA tests were skipped: no usable device"
  STATUS=1
fi

step "reduction benchmark (sizes ${SIZES})"
if ! timeout 240 "${BENCH_BIN}" --sizes "${SIZES}"; then
  echo "benchmark FAILED"
  STATUS=1
fi

step "done, status ${STATUS}"
exit "${STATUS}"
