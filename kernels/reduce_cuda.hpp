// CUDA reduction of wait counters: the same contract as reduce_edges_cpu (window filter,
// saturating integer sums, output sorted by EdgeKey), bit-identical results.
// This header includes no CUDA header: callers stay CUDA-free.
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/records.hpp"

namespace culprit {

struct CudaAvailability {
  bool usable = false;
  std::string reason;  // why not, when !usable ("built without CUDA", "no CUDA device", ...)
  std::string device;  // device name when usable
};

// Probes once per process: compiled in, driver present and new enough, a device exists.
CudaAvailability cuda_availability();

// Thrown when the CUDA path fails at run time (out of memory, launch failure, ...); the
// dispatcher falls back to the CPU path with this message.
struct CudaReduceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::vector<EdgeSummary> reduce_edges_cuda(std::span<const ProxyOpRecord> records,
                                           std::span<const CommWindow> windows);

// The same with an explicit number of records per chunk (records copied and reduced on the
// device at a time); 0 means the default. For tests (many chunks on small inputs) and tuning.
std::vector<EdgeSummary> reduce_edges_cuda_chunked(std::span<const ProxyOpRecord> records,
                                                   std::span<const CommWindow> windows,
                                                   std::size_t chunk_records);

}  // namespace culprit
