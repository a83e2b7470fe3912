// Local reduction of ProxyOp records to edge summaries: the CPU path and the dispatcher.
//
// CPU path: the records are split into contiguous ranges, one per thread; each thread sums
// its range into its own open-addressing hash table keyed by EdgeKey (one pass, the record
// array is read sequentially), sorts its distinct edges, and the sorted per-thread lists are
// merged pairwise. Saturating addition and the minimum of known values (the shortest
// RecvGpuWait step) are associative and commutative, so the result does
// not depend on the number of threads or on how the records were split.
#include "reduce/edge_reduce.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>

#include "kernels/reduce_cuda.hpp"

namespace culprit {

bool parse_reduce_path(const std::string& text, ReducePath* out) {
  ReducePath p;
  if (text == "cpu") {
    p = ReducePath::kCpu;
  } else if (text == "cuda") {
    p = ReducePath::kCuda;
  } else if (text == "auto") {
    p = ReducePath::kAuto;
  } else {
    return false;
  }
  if (out != nullptr) *out = p;
  return true;
}

bool collective_in_window(uint64_t comm_hash, uint64_t seq, std::span<const CommWindow> windows) {
  auto it = std::lower_bound(
      windows.begin(), windows.end(), comm_hash,
      [](const CommWindow& w, uint64_t hash) { return w.comm_hash < hash; });
  if (it == windows.end() || it->comm_hash != comm_hash) return true;
  return seq >= it->min_seq;
}

bool record_in_window(const ProxyOpRecord& r, std::span<const CommWindow> windows) {
  return r.is_p2p || r.seq_unknown || collective_in_window(r.comm_hash, r.seq, windows);
}

namespace {

// Records per thread below which another thread is not worth starting.
constexpr std::size_t kMinRecordsPerThread = 1 << 16;

inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

inline uint64_t hash_key(const EdgeKey& k) {
  uint64_t h = mix64(k.comm_hash ^ 0x9e3779b97f4a7c15ULL);
  h ^= (static_cast<uint64_t>(static_cast<uint32_t>(k.src_rank)) << 32) |
       static_cast<uint32_t>(k.dst_rank);
  h = mix64(h + static_cast<uint32_t>(k.channel));
  return h;
}

// The shortest of two minima over `a_ops` and `b_ops` ops (a count of 0: unknown).
inline uint64_t min_of_known(uint64_t a, uint64_t a_ops, uint64_t b, uint64_t b_ops) {
  if (a_ops == 0) return b;
  if (b_ops == 0) return a;
  return std::min(a, b);
}

// The worst receive op of two (recv_worst_op_*): the longer per step, ties to the larger sum,
// then steps, so that any order of merging keeps the same one.
inline void keep_worst_recv_op(EdgeSummary& into, uint64_t step_ns, uint64_t gpu_wait_ns, uint64_t steps) {
  const auto candidate = std::tie(step_ns, gpu_wait_ns, steps);
  if (candidate <= std::tie(into.recv_worst_op_step_ns, into.recv_worst_op_gpu_wait_ns, into.recv_worst_op_steps))
    return;
  into.recv_worst_op_step_ns = step_ns;
  into.recv_worst_op_gpu_wait_ns = gpu_wait_ns;
  into.recv_worst_op_steps = steps;
}

inline void add_record(EdgeSummary& s, const ProxyOpRecord& r) {
  if (r.is_send) {
    s.phase_ns[kSendGpuWait] = saturating_add(s.phase_ns[kSendGpuWait], r.phase_ns[kSendGpuWait]);
    s.phase_ns[kSendPeerWait] =
        saturating_add(s.phase_ns[kSendPeerWait], r.phase_ns[kSendPeerWait]);
    s.phase_ns[kSendWait] = saturating_add(s.phase_ns[kSendWait], r.phase_ns[kSendWait]);
    s.send_steps = saturating_add(s.send_steps, r.steps);
    s.send_ops = saturating_add(s.send_ops, 1);
    s.send_bytes = saturating_add(s.send_bytes, r.bytes);
    s.send_wire_busy_ns = saturating_add(s.send_wire_busy_ns, r.send_wire_busy_ns);
    s.send_wire_steps = saturating_add(s.send_wire_steps, r.wire_steps);
    s.send_wire_queued_steps = saturating_add(s.send_wire_queued_steps, r.wire_queued_steps);
    if (r.send_wait_min_ns) {
      s.send_wait_min_sum_ns = saturating_add(s.send_wait_min_sum_ns, r.send_wait_min_ns);
      s.send_wait_min_ops = saturating_add(s.send_wait_min_ops, 1);
      s.send_wait_min_max_ns = std::max(s.send_wait_min_max_ns, r.send_wait_min_ns);
    }
    if (r.steps) {
      const uint64_t per_step = r.phase_ns[kSendWait] / r.steps;
      s.send_op_wait_min_ns = min_of_known(s.send_op_wait_min_ns, s.send_op_wait_min_ops, per_step, 1);
      s.send_op_wait_min_ops = saturating_add(s.send_op_wait_min_ops, 1);
    }
  } else {
    s.phase_ns[kRecvWait] = saturating_add(s.phase_ns[kRecvWait], r.phase_ns[kRecvWait]);
    s.phase_ns[kRecvFlushWait] =
        saturating_add(s.phase_ns[kRecvFlushWait], r.phase_ns[kRecvFlushWait]);
    s.phase_ns[kRecvGpuWait] = saturating_add(s.phase_ns[kRecvGpuWait], r.phase_ns[kRecvGpuWait]);
    s.recv_steps = saturating_add(s.recv_steps, r.steps);
    s.recv_ops = saturating_add(s.recv_ops, 1);
    s.recv_bytes = saturating_add(s.recv_bytes, r.bytes);
    if (r.has_recv_gpu_wait_min) {
      s.recv_gpu_wait_min_ns = min_of_known(s.recv_gpu_wait_min_ns, s.recv_gpu_wait_min_ops, r.recv_gpu_wait_min_ns, 1);
      s.recv_gpu_wait_min_ops = saturating_add(s.recv_gpu_wait_min_ops, 1);
    }
    if (r.steps) keep_worst_recv_op(s, r.phase_ns[kRecvGpuWait] / r.steps, r.phase_ns[kRecvGpuWait], r.steps);
  }
}

inline void add_summary(EdgeSummary& into, const EdgeSummary& s) {
  for (int p = 0; p < kPhaseCount; ++p) into.phase_ns[p] = saturating_add(into.phase_ns[p], s.phase_ns[p]);
  into.send_steps = saturating_add(into.send_steps, s.send_steps);
  into.recv_steps = saturating_add(into.recv_steps, s.recv_steps);
  into.send_ops = saturating_add(into.send_ops, s.send_ops);
  into.recv_ops = saturating_add(into.recv_ops, s.recv_ops);
  into.send_bytes = saturating_add(into.send_bytes, s.send_bytes);
  into.recv_bytes = saturating_add(into.recv_bytes, s.recv_bytes);
  into.send_wire_busy_ns = saturating_add(into.send_wire_busy_ns, s.send_wire_busy_ns);
  into.send_wire_steps = saturating_add(into.send_wire_steps, s.send_wire_steps);
  into.send_wire_queued_steps = saturating_add(into.send_wire_queued_steps, s.send_wire_queued_steps);
  into.send_wait_min_sum_ns = saturating_add(into.send_wait_min_sum_ns, s.send_wait_min_sum_ns);
  into.send_wait_min_ops = saturating_add(into.send_wait_min_ops, s.send_wait_min_ops);
  into.send_wait_min_max_ns = std::max(into.send_wait_min_max_ns, s.send_wait_min_max_ns);
  into.recv_gpu_wait_min_ns = min_of_known(into.recv_gpu_wait_min_ns, into.recv_gpu_wait_min_ops,
                                           s.recv_gpu_wait_min_ns, s.recv_gpu_wait_min_ops);
  into.recv_gpu_wait_min_ops = saturating_add(into.recv_gpu_wait_min_ops, s.recv_gpu_wait_min_ops);
  into.send_op_wait_min_ns = min_of_known(into.send_op_wait_min_ns, into.send_op_wait_min_ops,
                                          s.send_op_wait_min_ns, s.send_op_wait_min_ops);
  into.send_op_wait_min_ops = saturating_add(into.send_op_wait_min_ops, s.send_op_wait_min_ops);
  keep_worst_recv_op(into, s.recv_worst_op_step_ns, s.recv_worst_op_gpu_wait_ns, s.recv_worst_op_steps);
}

inline bool window_less(const CommWindow& a, const CommWindow& b) { return a.comm_hash < b.comm_hash; }

inline bool windows_sorted(std::span<const CommWindow> windows) {
  return std::is_sorted(windows.begin(), windows.end(), window_less);
}

inline bool key_less(const EdgeSummary& a, const EdgeSummary& b) { return a.key < b.key; }

// Open-addressing (linear probing) table from EdgeKey to a dense array of summaries.
class EdgeTable {
 public:
  EdgeTable() { rehash(64); }

  EdgeSummary& find_or_insert(const EdgeKey& key) {
    if (have_last_ && last_key_ == key) return sums_[last_index_];
    std::size_t pos = static_cast<std::size_t>(hash_key(key)) & mask_;
    for (;;) {
      uint32_t slot = slots_[pos];
      if (slot == 0) break;
      if (sums_[slot - 1].key == key) {
        remember(key, slot - 1);
        return sums_[slot - 1];
      }
      pos = (pos + 1) & mask_;
    }
    if (sums_.size() >= UINT32_MAX - 1) throw std::length_error("too many distinct edges");
    EdgeSummary s;
    s.key = key;
    s.key.pad_ = 0;
    sums_.push_back(s);
    slots_[pos] = static_cast<uint32_t>(sums_.size());
    std::size_t index = sums_.size() - 1;
    if (sums_.size() * 2 > slots_.size()) rehash(slots_.size() * 2);
    remember(key, index);
    return sums_[index];
  }

  std::vector<EdgeSummary> take() { return std::move(sums_); }

 private:
  void remember(const EdgeKey& key, std::size_t index) {
    have_last_ = true;
    last_key_ = key;
    last_index_ = index;
  }

  void rehash(std::size_t capacity) {
    slots_.assign(capacity, 0);
    mask_ = capacity - 1;
    for (std::size_t i = 0; i < sums_.size(); ++i) {
      std::size_t pos = static_cast<std::size_t>(hash_key(sums_[i].key)) & mask_;
      while (slots_[pos] != 0) pos = (pos + 1) & mask_;
      slots_[pos] = static_cast<uint32_t>(i + 1);
    }
  }

  std::vector<uint32_t> slots_;  // index + 1 into sums_, 0 = empty
  std::vector<EdgeSummary> sums_;
  std::size_t mask_ = 0;
  bool have_last_ = false;
  EdgeKey last_key_;
  std::size_t last_index_ = 0;
};

// Sums one contiguous range of records; returns its distinct edges sorted by key.
std::vector<EdgeSummary> reduce_range(std::span<const ProxyOpRecord> records,
                                      std::span<const CommWindow> windows) {
  EdgeTable table;
  // Cache of the last communicator's window lookup: records come in runs of one comm.
  bool have_comm = false;
  uint64_t cached_comm = 0;
  bool cached_listed = false;
  uint64_t cached_min_seq = 0;
  for (const ProxyOpRecord& r : records) {
    if (!r.is_p2p && !r.seq_unknown) {
      if (!have_comm || cached_comm != r.comm_hash) {
        auto it = std::lower_bound(
            windows.begin(), windows.end(), r.comm_hash,
            [](const CommWindow& w, uint64_t hash) { return w.comm_hash < hash; });
        have_comm = true;
        cached_comm = r.comm_hash;
        cached_listed = it != windows.end() && it->comm_hash == r.comm_hash;
        cached_min_seq = cached_listed ? it->min_seq : 0;
      }
      if (cached_listed && r.seq < cached_min_seq) continue;
    }
    add_record(table.find_or_insert(edge_key_of(r)), r);
  }
  std::vector<EdgeSummary> out = table.take();
  std::sort(out.begin(), out.end(), key_less);
  return out;
}

// Merges two lists sorted by key with distinct keys into one such list.
std::vector<EdgeSummary> merge_sorted(const std::vector<EdgeSummary>& a,
                                      const std::vector<EdgeSummary>& b) {
  std::vector<EdgeSummary> out;
  out.reserve(a.size() + b.size());
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i].key < b[j].key) {
      out.push_back(a[i++]);
    } else if (b[j].key < a[i].key) {
      out.push_back(b[j++]);
    } else {
      out.push_back(a[i++]);
      add_summary(out.back(), b[j++]);
    }
  }
  out.insert(out.end(), a.begin() + static_cast<std::ptrdiff_t>(i), a.end());
  out.insert(out.end(), b.begin() + static_cast<std::ptrdiff_t>(j), b.end());
  return out;
}

// Runs fn(i) for i in [0, n) on up to n threads (the caller's thread does i = 0); the first
// exception thrown by any of them is rethrown after all have finished.
template <typename Fn>
void parallel_for(std::size_t n, Fn&& fn) {
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> workers;
  workers.reserve(n > 0 ? n - 1 : 0);
  auto guarded = [&](std::size_t i) {
    try {
      fn(i);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  for (std::size_t i = 1; i < n; ++i) workers.emplace_back(guarded, i);
  if (n > 0) guarded(0);
  for (auto& w : workers) w.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

std::vector<EdgeSummary> reduce_edges_cpu(std::span<const ProxyOpRecord> records,
                                          std::span<const CommWindow> windows,
                                          unsigned threads) {
  // The window lookups binary-search: tolerate a caller that did not sort (stable, so that
  // duplicate entries resolve as lower_bound does on the CUDA path).
  std::vector<CommWindow> sorted_windows;
  if (!windows_sorted(windows)) {
    sorted_windows.assign(windows.begin(), windows.end());
    std::stable_sort(sorted_windows.begin(), sorted_windows.end(), window_less);
    windows = sorted_windows;
  }
  std::size_t n_threads = threads != 0 ? threads : std::thread::hardware_concurrency();
  if (n_threads == 0) n_threads = 1;
  n_threads = std::min(n_threads, std::max<std::size_t>(1, records.size() / kMinRecordsPerThread));
  if (n_threads <= 1) return reduce_range(records, windows);

  std::vector<std::vector<EdgeSummary>> parts(n_threads);
  const std::size_t n = records.size();
  parallel_for(n_threads, [&](std::size_t t) {
    std::size_t begin = n * t / n_threads;
    std::size_t end = n * (t + 1) / n_threads;
    parts[t] = reduce_range(records.subspan(begin, end - begin), windows);
  });
  // Pairwise merge rounds, each round in parallel.
  while (parts.size() > 1) {
    std::size_t pairs = parts.size() / 2;
    std::vector<std::vector<EdgeSummary>> next(pairs + parts.size() % 2);
    parallel_for(pairs, [&](std::size_t p) {
      next[p] = merge_sorted(parts[2 * p], parts[2 * p + 1]);
      std::vector<EdgeSummary>().swap(parts[2 * p]);
      std::vector<EdgeSummary>().swap(parts[2 * p + 1]);
    });
    if (parts.size() % 2 != 0) next.back() = std::move(parts.back());
    parts = std::move(next);
  }
  return std::move(parts.front());
}

std::vector<EdgeSummary> merge_edge_summaries(std::span<const EdgeSummary> parts) {
  std::vector<EdgeSummary> sorted(parts.begin(), parts.end());
  std::stable_sort(sorted.begin(), sorted.end(), key_less);
  std::vector<EdgeSummary> out;
  out.reserve(sorted.size());
  for (const EdgeSummary& s : sorted) {
    if (!out.empty() && out.back().key == s.key) {
      add_summary(out.back(), s);
    } else {
      out.push_back(s);
      out.back().key.pad_ = 0;
    }
  }
  return out;
}

ReduceOutcome reduce_edges(std::span<const ProxyOpRecord> records,
                           std::span<const CommWindow> windows, ReducePath path) {
  ReduceOutcome outcome;
  if (path == ReducePath::kCpu) {
    outcome.edges = reduce_edges_cpu(records, windows);
    outcome.path_used = "cpu";
    return outcome;
  }
  std::string reason;
  CudaAvailability cuda;
  try {
    cuda = cuda_availability();
  } catch (const std::exception& e) {
    cuda.usable = false;
    cuda.reason = e.what();
  }
  if (cuda.usable) {
    try {
      outcome.edges = reduce_edges_cuda(records, windows);
      outcome.path_used = "cuda";
      return outcome;
    } catch (const CudaReduceError& e) {
      reason = e.what();
    } catch (const std::exception& e) {  // e.g. host allocation failure of the staging buffers
      reason = std::string("CUDA path failed: ") + e.what();
    }
  } else {
    reason = cuda.reason.empty() ? "no usable CUDA device" : cuda.reason;
  }
  outcome.edges = reduce_edges_cpu(records, windows);
  outcome.path_used = "cpu";
  if (path == ReducePath::kCuda) {
    outcome.note = "CUDA reduction unavailable (" + reason + "); used the CPU path";
  } else {
    outcome.note = "CUDA not used: " + reason;
  }
  return outcome;
}

}  // namespace culprit
