// Local reduction: ProxyOp records -> one EdgeSummary per connection, after the
// sequence-window filter. The CPU path is always available; the CUDA path (kernels/) gives
// bit-identical results and is chosen by --reduce.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/records.hpp"

namespace culprit {

enum class ReducePath { kCpu, kCuda, kAuto };

// Parses "cpu", "cuda", "auto"; returns false on anything else.
bool parse_reduce_path(const std::string& text, ReducePath* out);

// True when a record passes the window (collective records of listed communicators with
// seq >= min_seq, every p2p record and every record whose sequence is unknown, every
// record of an unlisted communicator).
// `windows` must be sorted by comm_hash.
bool record_in_window(const ProxyOpRecord& r, std::span<const CommWindow> windows);
// The same for anything else of a collective with a known sequence number: whether
// collective `seq` of communicator `comm_hash` is in the window.
bool collective_in_window(uint64_t comm_hash, uint64_t seq, std::span<const CommWindow> windows);

// CPU reduction. `windows` sorted by comm_hash. `threads` 0 means all hardware threads.
// Output sorted by EdgeKey; sums saturate at UINT64_MAX.
std::vector<EdgeSummary> reduce_edges_cpu(std::span<const ProxyOpRecord> records,
                                          std::span<const CommWindow> windows,
                                          unsigned threads = 0);

// Merge summaries of the same key (halves of one connection reported by different nodes).
// Input in any order; output sorted by EdgeKey; saturating sums.
std::vector<EdgeSummary> merge_edge_summaries(std::span<const EdgeSummary> parts);

struct ReduceOutcome {
  std::vector<EdgeSummary> edges;
  std::string path_used;  // "cpu" or "cuda"
  std::string note;       // why CUDA was not used when it was asked for or auto; empty otherwise
};

// Dispatch: kCpu -> CPU; kCuda -> CUDA, falling back to CPU with a note if unusable;
// kAuto -> CUDA only when a usable device exists.
ReduceOutcome reduce_edges(std::span<const ProxyOpRecord> records,
                           std::span<const CommWindow> windows, ReducePath path);

}  // namespace culprit
