// Builds without nvcc: the CUDA path reports itself unavailable and the dispatcher in
// src/reduce/edge_reduce.cpp falls back to the CPU path. Compiled only when the CUDA
// reduction is not built (see the CUDA section of the top-level CMakeLists.txt).
#include "kernels/reduce_cuda.hpp"

namespace culprit {

CudaAvailability cuda_availability() {
  CudaAvailability a;
  a.usable = false;
  a.reason = "built without CUDA";
  return a;
}

std::vector<EdgeSummary> reduce_edges_cuda_chunked(std::span<const ProxyOpRecord>,
                                                   std::span<const CommWindow>, std::size_t) {
  throw CudaReduceError("built without CUDA");
}

std::vector<EdgeSummary> reduce_edges_cuda(std::span<const ProxyOpRecord> records,
                                           std::span<const CommWindow> windows) {
  return reduce_edges_cuda_chunked(records, windows, 0);
}

}  // namespace culprit
