// Run-time probe of the CUDA path: a device exists, the driver is new enough for this
// runtime, and a kernel compiled into this binary runs on device 0. Done once per process.
#include <cuda_runtime.h>

#include <mutex>
#include <string>

#include "kernels/reduce_cuda.hpp"

namespace culprit {
namespace {

__global__ void probe_kernel(int* out) { *out = 42; }

std::string error_text(const char* what, cudaError_t err) {
  return std::string(what) + " failed: " + cudaGetErrorString(err) + " (" +
         cudaGetErrorName(err) + ")";
}

CudaAvailability probe() {
  CudaAvailability a;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    a.reason = "no usable CUDA device: " + error_text("cudaGetDeviceCount", err);
    return a;
  }
  if (count <= 0) {
    a.reason = "no CUDA device";
    return a;
  }
  cudaDeviceProp prop{};
  err = cudaGetDeviceProperties(&prop, 0);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    a.reason = error_text("cudaGetDeviceProperties", err);
    return a;
  }
  // A kernel must actually run: catches devices older than the compiled architectures.
  int* d_out = nullptr;
  err = cudaMalloc(reinterpret_cast<void**>(&d_out), sizeof(int));
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    a.reason = std::string("on ") + prop.name + ": " + error_text("cudaMalloc", err);
    return a;
  }
  probe_kernel<<<1, 1>>>(d_out);
  err = cudaGetLastError();
  int host = 0;
  if (err == cudaSuccess) err = cudaMemcpy(&host, d_out, sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(d_out);
  if (err != cudaSuccess || host != 42) {
    (void)cudaGetLastError();
    a.reason = std::string("probe kernel on ") + prop.name + " (sm_" + std::to_string(prop.major) +
               std::to_string(prop.minor) + ") " +
               (err != cudaSuccess ? error_text("launch", err) : "returned a wrong value");
    return a;
  }
  a.usable = true;
  a.device = std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
             std::to_string(prop.minor) + ", " +
             std::to_string(prop.totalGlobalMem >> 20) + " MiB)";
  return a;
}

}  // namespace

CudaAvailability cuda_availability() {
  static std::once_flag once;
  static CudaAvailability result;
  std::call_once(once, [] { result = probe(); });
  return result;
}

}  // namespace culprit
