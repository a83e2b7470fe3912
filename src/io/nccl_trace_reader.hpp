// Reader for NCCL's example-profiler traces, 2.27+ layout (FORMATS.md §2): rebuilds the
// LIFO nesting of "b"/"e" lines, attaches every proxy op to the enclosing COLL or P2P,
// measures the six phases of every valid step and sums them per ProxyOp.
#pragma once

#include <string>
#include <string_view>

#include "io/local_data.hpp"

namespace culprit {

// Reads a trace file from disk; appends records and one InputReport to `data`.
void read_nccl_trace_file(const std::string& path, const std::string& host, LocalData& data);

// The same for a trace held in memory (`name` is reported as its path).
void read_nccl_trace_buffer(std::string_view content, const std::string& name,
                            const std::string& host, LocalData& data);

}  // namespace culprit
