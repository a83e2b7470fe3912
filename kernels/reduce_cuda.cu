// CUDA reduction of ProxyOp records to edge summaries: the same contract as
// reduce_edges_cpu (window filter, saturating integer sums, output sorted by EdgeKey),
// bit-identical results.
//
// The records are processed in chunks. Two buffer sets (pinned host staging, device
// records, keys, indices, outputs, CUB scratch), each with its own stream, alternate: while
// the device copies and reduces chunk c, the host copies chunk c+1 into the other pinned
// buffer and collects the result of chunk c-1. Per chunk, on the device:
//   1. one thread per record: window test, key of the edge (records outside the window get
//      one "dropped" key that sorts after every real key), record index;
//   2. CUB radix sort of (key, index) pairs, the key decomposed into its integer fields;
//   3. CUB reduce-by-key over the sorted keys; each record's contribution (its send or
//      receive half) is read through a transform iterator and summed with a saturating add.
// The host keeps each chunk's sorted distinct edges and merges them at the end (sort and a
// saturating sum of equal keys). Saturating addition is associative and commutative, so the
// result does not depend on the chunking or on the order in which the device sums.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cuda/std/tuple>
#include <mutex>
#include <string>
#include <thread>
#include <thrust/iterator/transform_iterator.h>
#include <vector>

#include "kernels/reduce_cuda.hpp"

namespace culprit {
namespace {

constexpr std::size_t kDefaultChunkRecords = std::size_t{1} << 21;
constexpr std::size_t kMinChunkRecords = std::size_t{1} << 14;
constexpr uint32_t kSignFlip = 0x80000000u;

// Sort key of an edge. Ranks and channel are stored with the sign bit flipped so that the
// unsigned order of the fields is the signed order of EdgeKey::operator<.
struct DevKey {
  uint64_t comm_hash;
  uint32_t src;
  uint32_t dst;
  uint32_t channel;
  uint8_t dropped;  // 1: outside the window; most significant, so dropped keys sort last

  __host__ __device__ friend bool operator==(const DevKey& a, const DevKey& b) {
    return a.dropped == b.dropped && a.comm_hash == b.comm_hash && a.src == b.src &&
           a.dst == b.dst && a.channel == b.channel;
  }
};

struct KeyDecomposer {
  __host__ __device__ ::cuda::std::tuple<uint8_t&, uint64_t&, uint32_t&, uint32_t&, uint32_t&>
  operator()(DevKey& k) const {
    return {k.dropped, k.comm_hash, k.src, k.dst, k.channel};
  }
};

// The twenty-five values of an EdgeSummary, in its field order after the key: sums, except
// the minima: slot kMinSlot, the shortest RecvGpuWait step over the kMinSlot + 1 ops that
// know it, and slot kSendOpMinSlot, the quickest send op's SendWait per step over the
// kSendOpMinSlot + 1 send ops with steps; the worst receive op's three values from
// kWorstRecvSlot (per step, RecvGpuWait, steps), the larger of two by that order; and a
// maximum, slot kSendWaitMinMaxSlot, the largest shortest SendWait step of a send op.
constexpr int kSumCount = 25;
constexpr int kMinSlot = 16;
constexpr int kSendOpMinSlot = 19;
constexpr int kWorstRecvSlot = 21;
constexpr int kSendWaitMinMaxSlot = 24;
struct Sums {
  uint64_t v[kSumCount];
};
static_assert(sizeof(Sums) == sizeof(EdgeSummary) - sizeof(EdgeKey));

__host__ __device__ inline uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t s = a + b;
  return s < a ? ~uint64_t{0} : s;  // unsigned overflow wrapped around
}

// Whether a's worst receive op is worse than (or the same as) b's.
__host__ __device__ inline bool worse_recv_op(const Sums& a, const Sums& b) {
  for (int k = kWorstRecvSlot; k < kWorstRecvSlot + 3; ++k)
    if (a.v[k] != b.v[k]) return a.v[k] > b.v[k];
  return true;
}

struct MergeSums {
  __host__ __device__ Sums operator()(const Sums& a, const Sums& b) const {
    Sums r;
    for (int i = 0; i < kSumCount; ++i) r.v[i] = sat_add(a.v[i], b.v[i]);
    // As min_of_known on the CPU: a count of 0 means the minimum is unknown.
    const int min_slots[] = {kMinSlot, kSendOpMinSlot};
    for (int m : min_slots) {
      const uint64_t a_ops = a.v[m + 1], b_ops = b.v[m + 1];
      r.v[m] = a_ops == 0 ? b.v[m] : b_ops == 0 ? a.v[m] : (a.v[m] < b.v[m] ? a.v[m] : b.v[m]);
    }
    // As keep_worst_recv_op on the CPU: the lexicographically larger triple.
    const Sums& worst = worse_recv_op(a, b) ? a : b;
    for (int k = kWorstRecvSlot; k < kWorstRecvSlot + 3; ++k) r.v[k] = worst.v[k];
    const uint64_t a_max = a.v[kSendWaitMinMaxSlot], b_max = b.v[kSendWaitMinMaxSlot];
    r.v[kSendWaitMinMaxSlot] = a_max > b_max ? a_max : b_max;
    return r;
  }
};

// One record's contribution: its send half (phases 0-2) or its receive half (phases 3-5).
struct Contribution {
  const ProxyOpRecord* records;
  __host__ __device__ Sums operator()(uint32_t i) const {
    const ProxyOpRecord& r = records[i];
    Sums s;
    for (int k = 0; k < kSumCount; ++k) s.v[k] = 0;
    const uint64_t steps = r.steps;
    if (r.is_send) {
      s.v[0] = r.phase_ns[0];
      s.v[1] = r.phase_ns[1];
      s.v[2] = r.phase_ns[2];
      s.v[6] = steps;  // send_steps
      s.v[8] = 1;      // send_ops
      s.v[10] = r.bytes;
      s.v[12] = r.send_wire_busy_ns;
      s.v[13] = r.wire_steps;  // send_wire_steps
      if (r.send_wait_min_ns) {
        s.v[14] = r.send_wait_min_ns;  // send_wait_min_sum_ns
        s.v[15] = 1;                   // send_wait_min_ops
        s.v[kSendWaitMinMaxSlot] = r.send_wait_min_ns;  // send_wait_min_max_ns
      }
      s.v[18] = r.wire_queued_steps;  // send_wire_queued_steps
      if (steps) {
        s.v[kSendOpMinSlot] = r.phase_ns[2] / steps;  // send_op_wait_min_ns (SendWait per step)
        s.v[kSendOpMinSlot + 1] = 1;                  // send_op_wait_min_ops
      }
    } else {
      s.v[3] = r.phase_ns[3];
      s.v[4] = r.phase_ns[4];
      s.v[5] = r.phase_ns[5];
      s.v[7] = steps;  // recv_steps
      s.v[9] = 1;      // recv_ops
      s.v[11] = r.bytes;
      if (r.has_recv_gpu_wait_min) {
        s.v[kMinSlot] = r.recv_gpu_wait_min_ns;  // recv_gpu_wait_min_ns
        s.v[kMinSlot + 1] = 1;                   // recv_gpu_wait_min_ops
      }
      if (steps) {
        s.v[kWorstRecvSlot] = r.phase_ns[5] / steps;  // recv_worst_op_step_ns
        s.v[kWorstRecvSlot + 1] = r.phase_ns[5];      // recv_worst_op_gpu_wait_ns
        s.v[kWorstRecvSlot + 2] = steps;              // recv_worst_op_steps
      }
    }
    return s;
  }
};

__global__ void make_keys(const ProxyOpRecord* __restrict__ records, uint32_t n,
                          const CommWindow* __restrict__ windows, uint32_t n_windows,
                          DevKey* __restrict__ keys, uint32_t* __restrict__ indices) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const ProxyOpRecord& r = records[i];
    bool keep = true;
    if (!r.is_p2p && !r.seq_unknown) {  // as record_in_window on the CPU
      uint32_t lo = 0, hi = n_windows;  // lower_bound on comm_hash
      while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (windows[mid].comm_hash < r.comm_hash) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      if (lo < n_windows && windows[lo].comm_hash == r.comm_hash) keep = r.seq >= windows[lo].min_seq;
    }
    DevKey k;
    if (keep) {
      k.comm_hash = r.comm_hash;
      k.src = static_cast<uint32_t>(r.is_send ? r.rank : r.peer) ^ kSignFlip;
      k.dst = static_cast<uint32_t>(r.is_send ? r.peer : r.rank) ^ kSignFlip;
      k.channel = static_cast<uint32_t>(r.channel) ^ kSignFlip;
      k.dropped = 0;
    } else {
      k.comm_hash = 0;
      k.src = k.dst = k.channel = 0;
      k.dropped = 1;
    }
    keys[i] = k;
    indices[i] = i;
  }
}

std::string cuda_message(const char* what, cudaError_t err) {
  return std::string(what) + ": " + cudaGetErrorString(err);
}

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // clear a non-sticky error
    throw CudaReduceError(cuda_message(what, err));
  }
}

using ValueIterator = thrust::transform_iterator<Contribution, const uint32_t*, Sums>;

// Scratch bytes CUB needs for a chunk of n records.
std::size_t scratch_bytes(std::size_t n) {
  std::size_t sort_bytes = 0, rbk_bytes = 0;
  cub::DoubleBuffer<DevKey> keys(nullptr, nullptr);
  cub::DoubleBuffer<uint32_t> vals(nullptr, nullptr);
  check(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys, vals, static_cast<int>(n),
                                        KeyDecomposer{}),
        "sizing the radix sort");
  ValueIterator values(static_cast<const uint32_t*>(nullptr), Contribution{nullptr});
  check(cub::DeviceReduce::ReduceByKey(nullptr, rbk_bytes, static_cast<const DevKey*>(nullptr),
                                       static_cast<DevKey*>(nullptr), values,
                                       static_cast<Sums*>(nullptr), static_cast<int*>(nullptr),
                                       MergeSums{}, static_cast<int>(n)),
        "sizing the reduce-by-key");
  return std::max(sort_bytes, rbk_bytes);
}

// One set of buffers for one chunk in flight.
struct Slot {
  ProxyOpRecord* h_records = nullptr;  // pinned staging
  int* h_runs = nullptr;               // pinned
  ProxyOpRecord* d_records = nullptr;
  DevKey* d_keys[2] = {nullptr, nullptr};
  uint32_t* d_idx[2] = {nullptr, nullptr};
  DevKey* d_unique = nullptr;
  Sums* d_sums = nullptr;
  int* d_runs = nullptr;
  void* d_scratch = nullptr;
  std::size_t scratch = 0;
  cudaStream_t stream = nullptr;
  std::size_t pending = 0;  // records of the chunk in flight, 0 when idle
};

// Device buffers kept between calls (allocation and pinning are expensive); guarded by the
// mutex below. Never freed: the process exit releases them.
struct Context {
  std::size_t capacity = 0;  // records per chunk the slots can hold
  Slot slots[2];
  CommWindow* d_windows = nullptr;
  std::size_t windows_capacity = 0;
  std::string broken;  // set after a sticky error: the context is unusable
};

std::mutex g_mutex;
Context g_ctx;

void free_slot(Slot& s) {
  cudaFreeHost(s.h_records);
  cudaFreeHost(s.h_runs);
  cudaFree(s.d_records);
  for (int i = 0; i < 2; ++i) {
    cudaFree(s.d_keys[i]);
    cudaFree(s.d_idx[i]);
  }
  cudaFree(s.d_unique);
  cudaFree(s.d_sums);
  cudaFree(s.d_runs);
  cudaFree(s.d_scratch);
  cudaStream_t stream = s.stream;
  s = Slot{};
  s.stream = stream;
}

template <typename T>
void dev_alloc(T** p, std::size_t count, const char* what) {
  check(cudaMalloc(reinterpret_cast<void**>(p), std::max<std::size_t>(count, 1) * sizeof(T)), what);
}

void alloc_slot(Slot& s, std::size_t n) {
  if (s.stream == nullptr) {
    check(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "creating a stream");
  }
  check(cudaHostAlloc(reinterpret_cast<void**>(&s.h_records), n * sizeof(ProxyOpRecord),
                      cudaHostAllocDefault),
        "allocating pinned staging memory");
  check(cudaHostAlloc(reinterpret_cast<void**>(&s.h_runs), sizeof(int), cudaHostAllocDefault),
        "allocating pinned memory");
  dev_alloc(&s.d_records, n, "allocating device memory for records");
  for (int i = 0; i < 2; ++i) {
    dev_alloc(&s.d_keys[i], n, "allocating device memory for keys");
    dev_alloc(&s.d_idx[i], n, "allocating device memory for indices");
  }
  dev_alloc(&s.d_unique, n, "allocating device memory for edges");
  dev_alloc(&s.d_sums, n, "allocating device memory for sums");
  dev_alloc(&s.d_runs, 1, "allocating device memory");
  s.scratch = scratch_bytes(n);
  check(cudaMalloc(&s.d_scratch, std::max<std::size_t>(s.scratch, 1)), "allocating CUB scratch memory");
}

// Makes both slots hold at least `want` records, halving on out-of-memory down to a floor.
void ensure_capacity(Context& ctx, std::size_t want) {
  if (ctx.capacity >= want) return;
  std::string last_error;
  for (std::size_t n = want;; n /= 2) {
    n = std::max(n, std::min(want, kMinChunkRecords));
    for (Slot& s : ctx.slots) free_slot(s);
    ctx.capacity = 0;
    try {
      for (Slot& s : ctx.slots) alloc_slot(s, n);
      ctx.capacity = n;
      return;
    } catch (const CudaReduceError& e) {
      last_error = e.what();
      for (Slot& s : ctx.slots) free_slot(s);
    }
    if (n <= kMinChunkRecords || n <= 1) break;
  }
  throw CudaReduceError("out of memory for the CUDA reduction (" + last_error + ")");
}

// Copies records into pinned memory, with a few threads for large chunks.
void stage(ProxyOpRecord* dst, const ProxyOpRecord* src, std::size_t n) {
  const std::size_t bytes = n * sizeof(ProxyOpRecord);
  unsigned hw = std::thread::hardware_concurrency();
  std::size_t threads = std::min<std::size_t>({8, std::max(1u, hw / 2), bytes / (8u << 20) + 1});
  if (threads <= 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  std::vector<std::thread> workers;
  for (std::size_t t = 1; t < threads; ++t) {
    std::size_t b = n * t / threads, e = n * (t + 1) / threads;
    workers.emplace_back([=] { std::memcpy(dst + b, src + b, (e - b) * sizeof(ProxyOpRecord)); });
  }
  std::memcpy(dst, src, (n / threads) * sizeof(ProxyOpRecord));
  for (auto& w : workers) w.join();
}

// Enqueues the reduction of the staged chunk of `n` records of slot `s`.
void launch(Slot& s, std::size_t n, const CommWindow* d_windows, std::size_t n_windows) {
  const int items = static_cast<int>(n);
  check(cudaMemcpyAsync(s.d_records, s.h_records, n * sizeof(ProxyOpRecord),
                        cudaMemcpyHostToDevice, s.stream),
        "copying records to the device");
  const int block = 256;
  const int grid = static_cast<int>(std::min<std::size_t>((n + block - 1) / block, 65535));
  make_keys<<<grid, block, 0, s.stream>>>(s.d_records, static_cast<uint32_t>(n), d_windows,
                                          static_cast<uint32_t>(n_windows), s.d_keys[0], s.d_idx[0]);
  check(cudaGetLastError(), "launching the key kernel");
  cub::DoubleBuffer<DevKey> keys(s.d_keys[0], s.d_keys[1]);
  cub::DoubleBuffer<uint32_t> idx(s.d_idx[0], s.d_idx[1]);
  std::size_t scratch = s.scratch;
  check(cub::DeviceRadixSort::SortPairs(s.d_scratch, scratch, keys, idx, items, KeyDecomposer{},
                                        s.stream),
        "sorting edge keys");
  ValueIterator values(idx.Current(), Contribution{s.d_records});
  scratch = s.scratch;
  check(cub::DeviceReduce::ReduceByKey(s.d_scratch, scratch, keys.Current(), s.d_unique, values,
                                       s.d_sums, s.d_runs, MergeSums{}, items, s.stream),
        "reducing by edge");
  check(cudaMemcpyAsync(s.h_runs, s.d_runs, sizeof(int), cudaMemcpyDeviceToHost, s.stream),
        "copying the edge count");
  s.pending = n;
}

// Waits for slot `s` and appends its distinct edges to `out`.
void collect(Slot& s, std::vector<EdgeSummary>& out) {
  if (s.pending == 0) return;
  s.pending = 0;
  check(cudaStreamSynchronize(s.stream), "reducing a chunk");
  std::size_t runs = static_cast<std::size_t>(*s.h_runs);
  if (runs == 0) return;
  std::vector<DevKey> keys(runs);
  std::vector<Sums> sums(runs);
  check(cudaMemcpyAsync(keys.data(), s.d_unique, runs * sizeof(DevKey), cudaMemcpyDeviceToHost,
                        s.stream),
        "copying edges to the host");
  check(cudaMemcpyAsync(sums.data(), s.d_sums, runs * sizeof(Sums), cudaMemcpyDeviceToHost,
                        s.stream),
        "copying sums to the host");
  check(cudaStreamSynchronize(s.stream), "copying results to the host");
  out.reserve(out.size() + runs);
  for (std::size_t i = 0; i < runs; ++i) {
    if (keys[i].dropped) continue;  // records outside the window (sorted last)
    EdgeSummary e;
    e.key.comm_hash = keys[i].comm_hash;
    e.key.src_rank = static_cast<int32_t>(keys[i].src ^ kSignFlip);
    e.key.dst_rank = static_cast<int32_t>(keys[i].dst ^ kSignFlip);
    e.key.channel = static_cast<int32_t>(keys[i].channel ^ kSignFlip);
    e.key.pad_ = 0;
    std::memcpy(e.phase_ns, sums[i].v, sizeof(Sums));
    out.push_back(e);
  }
}

// Sorted, distinct keys from the concatenation of several sorted chunk results.
std::vector<EdgeSummary> merge_chunks(std::vector<EdgeSummary> all, std::size_t chunks) {
  if (chunks <= 1) return all;
  std::sort(all.begin(), all.end(),
            [](const EdgeSummary& a, const EdgeSummary& b) { return a.key < b.key; });
  std::vector<EdgeSummary> out;
  out.reserve(all.size());
  MergeSums add;
  for (const EdgeSummary& e : all) {
    if (!out.empty() && out.back().key == e.key) {
      Sums a, b;
      std::memcpy(a.v, out.back().phase_ns, sizeof(Sums));
      std::memcpy(b.v, e.phase_ns, sizeof(Sums));
      Sums r = add(a, b);
      std::memcpy(out.back().phase_ns, r.v, sizeof(Sums));
    } else {
      out.push_back(e);
    }
  }
  return out;
}

std::vector<EdgeSummary> run(Context& ctx, std::span<const ProxyOpRecord> records,
                             std::span<const CommWindow> windows, std::size_t chunk) {
  const std::size_t n = records.size();
  auto window_less = [](const CommWindow& a, const CommWindow& b) { return a.comm_hash < b.comm_hash; };
  std::vector<CommWindow> sorted_windows;
  if (!std::is_sorted(windows.begin(), windows.end(), window_less)) {
    sorted_windows.assign(windows.begin(), windows.end());
    std::stable_sort(sorted_windows.begin(), sorted_windows.end(), window_less);
    windows = sorted_windows;
  }
  chunk = std::min(chunk, n);
  ensure_capacity(ctx, chunk);
  chunk = std::min(chunk, ctx.capacity);

  if (windows.size() > ctx.windows_capacity) {
    cudaFree(ctx.d_windows);
    ctx.d_windows = nullptr;
    ctx.windows_capacity = 0;
    dev_alloc(&ctx.d_windows, windows.size(), "allocating device memory for windows");
    ctx.windows_capacity = windows.size();
  }
  if (!windows.empty()) {
    check(cudaMemcpy(ctx.d_windows, windows.data(), windows.size() * sizeof(CommWindow),
                     cudaMemcpyHostToDevice),
          "copying windows to the device");
  }

  std::vector<EdgeSummary> all;
  std::size_t chunks = 0;
  for (std::size_t begin = 0; begin < n; begin += chunk, ++chunks) {
    Slot& s = ctx.slots[chunks % 2];
    collect(s, all);  // the chunk before last used this slot
    const std::size_t count = std::min(chunk, n - begin);
    stage(s.h_records, records.data() + begin, count);
    launch(s, count, ctx.d_windows, windows.size());
  }
  collect(ctx.slots[chunks % 2], all);  // the older of the two in flight first
  collect(ctx.slots[(chunks + 1) % 2], all);
  return merge_chunks(std::move(all), chunks);
}

}  // namespace

std::vector<EdgeSummary> reduce_edges_cuda_chunked(std::span<const ProxyOpRecord> records,
                                                   std::span<const CommWindow> windows,
                                                   std::size_t chunk_records) {
  CudaAvailability a = cuda_availability();
  if (!a.usable) throw CudaReduceError(a.reason);
  if (records.empty()) return {};
  std::size_t chunk = chunk_records != 0 ? chunk_records : kDefaultChunkRecords;
  chunk = std::min<std::size_t>(chunk, INT32_MAX / 2);  // CUB item counts are int here

  std::lock_guard<std::mutex> lock(g_mutex);
  Context& ctx = g_ctx;
  if (!ctx.broken.empty()) throw CudaReduceError("CUDA unusable after an earlier error: " + ctx.broken);
  try {
    return run(ctx, records, windows, chunk);
  } catch (const CudaReduceError& e) {
    // Leave no work in flight that could touch the buffers, and mark the context broken if
    // the error was sticky (the device can no longer be used by this process).
    for (Slot& s : ctx.slots) {
      if (s.stream != nullptr) (void)cudaStreamSynchronize(s.stream);
      s.pending = 0;
    }
    cudaError_t sticky = cudaDeviceSynchronize();
    if (sticky != cudaSuccess) ctx.broken = e.what();
    (void)cudaGetLastError();
    throw;
  }
}

std::vector<EdgeSummary> reduce_edges_cuda(std::span<const ProxyOpRecord> records,
                                           std::span<const CommWindow> windows) {
  return reduce_edges_cuda_chunked(records, windows, 0);
}

}  // namespace culprit
