// Plain records that flow through the pipeline: what the readers produce, what the
// reducer sums, what travels over MPI. All are trivially copyable so that they can be
// sent as bytes and copied to a GPU unchanged.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace culprit {

// The six proxy phases of FORMATS.md §1, in the order of the CONTRACT's /edges columns.
enum Phase : int {
  kSendGpuWait = 0,
  kSendPeerWait = 1,
  kSendWait = 2,
  kRecvWait = 3,
  kRecvFlushWait = 4,
  kRecvGpuWait = 5,
  kPhaseCount = 6,
};

const char* phase_name(Phase p);

// One ProxyOp (one connection's share of one collective or p2p on one channel) as seen by
// the process that recorded it, with the durations of its valid steps summed per phase.
struct ProxyOpRecord {
  uint64_t comm_hash = 0;
  uint64_t seq = 0;            // collective SeqNum; for p2p an ordinal per (comm, rank, peer, dir)
  uint64_t bytes = 0;          // bytes moved by this op (bounded by steps x chunk size)
  uint64_t start_ns = 0;       // op start on the recording process's own clock
  uint64_t end_ns = 0;         // op end on the same clock (0 when unknown)
  uint64_t phase_ns[kPhaseCount] = {0, 0, 0, 0, 0, 0};
  // A send op's wire time: the union of its steps' SendWait intervals (isend accepted to
  // completion), over wire_steps steps. Queued sends overlap, so a busy healthy wire costs
  // about one chunk's transfer per step and a slow wire proportionally more; waiting for
  // data or credit is outside SendWait. 0 when unknown (probing exports only sums).
  uint64_t send_wire_busy_ns = 0;
  // Its shortest single-step SendWait: latency plus one chunk when some step found the wire
  // idle; more when every recorded step queued (only the last steps of a long op are kept).
  uint64_t send_wait_min_ns = 0;
  // A receive op's shortest single-step RecvGpuWait (the GPU consuming a slot), where
  // has_recv_gpu_wait_min says it is known (per-step traces; probing exports only sums). A
  // GPU slow to consume is slow on every slot; waiting for a sibling input or an output slot
  // lengthens only the steps that found them late.
  uint64_t recv_gpu_wait_min_ns = 0;
  uint32_t process = 0;        // index into the reading node's local process table
  int32_t rank = -1;           // communicator rank of the recording process
  int32_t peer = -1;           // communicator rank of the remote end
  int32_t channel = -1;
  uint32_t steps = 0;          // steps whose phases were summed
  uint32_t wire_steps = 0;     // steps in send_wire_busy_ns
  uint8_t is_send = 0;
  uint8_t is_p2p = 0;
  // The collective's sequence number is unknown (probing exports leave unsigned cells
  // blank): the record is kept whatever the sequence window, as p2p records are.
  uint8_t seq_unknown = 0;
  uint8_t has_recv_gpu_wait_min = 0;
  // Of the wire_steps, those whose SendWait began before the previous send had completed:
  // queued behind it, so the wire's time on them is one transfer, free of latency. A wire
  // that queues nearly every step is saturated: its busy time per step is its transfer time.
  uint32_t wire_queued_steps = 0;
};
static_assert(std::is_trivially_copyable_v<ProxyOpRecord>);

// NCCL's slots per connection (NCCL_STEPS): the buffer a GPU fills before it must wait, in
// steps. A GPU writes output step j once its send of step j - kSlotsPerConnection completed.
inline constexpr int kSlotsPerConnection = 8;

// A collective receive op's holds set against its GPU's output slots (io/slot_gates.hpp):
// over the recorded steps whose onward sends' gates are recorded too, the part of each hold
// (RecvGpuWait) after the step's inputs had all arrived and its output slots were free, which
// is the GPU's own time, and of that the part after it had freed the step before (its work on
// the step alone, not the queue before it). Only per-step traces have it, and only where the
// onward sends are the same process's network sends (a GPU that forwards over NVLink has none).
struct GatedHoldRecord {
  uint64_t comm_hash = 0;
  uint64_t seq = 0;
  uint64_t own_ns = 0;
  uint64_t work_ns = 0;
  uint32_t process = 0;  // index into the reading node's local process table
  int32_t rank = -1;
  uint32_t steps = 0;
  uint32_t pad_ = 0;
};
static_assert(std::is_trivially_copyable_v<GatedHoldRecord>);

// When a proxy op's GPU handed each recorded step's slot over (a receive: RecvGpuWait's end,
// the slot freed; a send: SendGpuWait's end, the data ready), as a line over the step number:
// the mean end on the recording process's own clock, the mean step number and the slope (ns
// per step, least squares) over `steps` steps (at least 3). Only per-step traces have it, one
// per collective proxy op. A node's receive and send of one channel, set on one clock, show
// where along the node's GPUs the data waits (pipeline/passage_lag.hpp). Kept apart from
// ProxyOpRecord, which the reducer streams by the million.
struct HandoffLine {
  uint64_t comm_hash = 0;
  uint64_t seq = 0;
  int64_t mean_ns = 0;
  double step_mean = 0;
  double ns_per_step = 0;
  uint32_t process = 0;  // index into the reading node's local process table
  int32_t rank = -1;
  int32_t channel = -1;
  uint32_t steps = 0;
  uint8_t is_send = 0;
  uint8_t pad_[7] = {0, 0, 0, 0, 0, 0, 0};
};
static_assert(std::is_trivially_copyable_v<HandoffLine>);

// Kernel start and stop of one collective or p2p operation on one GPU (KernelCh
// StartGpuClk/StopGpuClk, the GPU global timer, comparable across the GPUs of one node).
// Earliest start over channels.
struct KernelStartRecord {
  uint64_t comm_hash = 0;
  uint64_t seq = 0;              // collective SeqNum; meaningless for p2p
  uint64_t start_gpu_clk_ns = 0;
  uint64_t stop_gpu_clk_ns = 0;  // maximum StopGpuClk over channels, 0 when not recorded
  // The time on the recording process's own clock of the KernelCh event whose StartGpuClk is
  // start_gpu_clk_ns (0: unknown): the two clocks' offset, within the profiler's polling.
  int64_t start_host_ns = 0;
  uint32_t process = 0;
  int32_t rank = -1;
  uint8_t is_p2p = 0;            // a Send or Recv: counts for the GPU's gaps only
  // 1: the record orders the GPU's kernels, but its window is not the kernel's (probing's
  // coll_perf timed by proxy ops or the host's enqueue, or with child events lost): no gap,
  // start or busy time is taken from it.
  uint8_t window_unknown = 0;
  // 1: the collective ran NCCL's tree algorithm, whose GPUs of a node stop one after another
  // along the node's chain (pipeline/chain_places.hpp); in a ring the order of the stops is
  // not the chain's (a slow GPU stops last whatever its place).
  uint8_t tree = 0;
  uint8_t pad_[5] = {0, 0, 0, 0, 0};
};
static_assert(std::is_trivially_copyable_v<KernelStartRecord>);

// When one channel of a collective's kernel stopped (KernelCh StopGpuClk, on the GPU's timer):
// a tree's channels each chain the node's GPUs in their own order (NCCL rotates the chains of
// several channels), and each channel's GPUs stop in its chain's order
// (pipeline/chain_places.hpp). From 2.28 only channel 0's stop is recorded.
struct ChannelStopRecord {
  uint64_t comm_hash = 0;
  uint64_t seq = 0;
  uint64_t stop_gpu_clk_ns = 0;
  uint32_t process = 0;
  int32_t rank = -1;
  int32_t channel = -1;
  uint8_t pad_[4] = {0, 0, 0, 0};
};
static_assert(std::is_trivially_copyable_v<ChannelStopRecord>);

// Whether an algorithm's name, as a profiler or an export writes it ("Tree" from NCCL's
// names, "TREE" from the example profiler's), is NCCL's tree (not NVLS_TREE or a CollNet chain).
inline bool names_tree_algorithm(std::string_view name) {
  constexpr std::string_view kTree = "tree";
  if (name.size() != kTree.size()) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if ((name[i] | 0x20) != kTree[i]) return false;
  return true;
}

// How many send (or receive) calls one rank made to (from) one peer of a communicator: the
// k-th Send of a rank to a peer meets the k-th Recv of that peer from it, so a count that
// exceeds its partner's says the partner never posted the matching call.
struct P2pCallCount {
  uint64_t comm_hash = 0;
  uint64_t calls = 0;
  uint32_t process = 0;
  int32_t rank = -1;
  int32_t peer = -1;
  uint8_t is_send = 0;
  uint8_t pad_[3] = {0, 0, 0};
};
static_assert(std::is_trivially_copyable_v<P2pCallCount>);

// An operation still alive when a watchdog took its snapshot (probing's nccl.inflight_ops,
// FORMATS.md §3): which rank is still inside which sequence, and for how long. Several
// snapshots of one operation are kept as one record with the largest age.
enum class InflightKind : uint8_t { kCollective = 0, kP2p = 1, kProxyOp = 2 };

struct InflightRecord {
  uint64_t comm_hash = 0;
  uint64_t seq = 0;           // collective sequence; meaningless when seq_unknown
  uint64_t age_ns = 0;        // how long it had been alive at the newest snapshot
  uint32_t process = 0;       // index into the reading node's (or rank 0's) process table
  int32_t rank = -1;          // communicator rank of the recording process
  int32_t peer = -1;          // communicator rank of the remote end, -1 unknown
  int32_t channel = -1;       // proxy ops only
  InflightKind kind = InflightKind::kCollective;
  int8_t is_send = -1;        // proxy ops: 1 send, 0 receive; -1 unknown
  uint8_t seq_unknown = 0;
  uint8_t pad_[5] = {0, 0, 0, 0, 0};
};
static_assert(std::is_trivially_copyable_v<InflightRecord>);

// Window of sequence numbers to keep for one communicator: collective records with
// seq >= min_seq are kept. Communicators absent from the window list keep every record.
// P2P records are always kept (they have no collective sequence).
struct CommWindow {
  uint64_t comm_hash = 0;
  uint64_t min_seq = 0;
};

// Key of a connection: who sends to whom on which channel of which communicator.
struct EdgeKey {
  uint64_t comm_hash = 0;
  int32_t src_rank = -1;
  int32_t dst_rank = -1;
  int32_t channel = -1;
  int32_t pad_ = 0;

  friend bool operator==(const EdgeKey& a, const EdgeKey& b) {
    return a.comm_hash == b.comm_hash && a.src_rank == b.src_rank && a.dst_rank == b.dst_rank &&
           a.channel == b.channel;
  }
  friend bool operator<(const EdgeKey& a, const EdgeKey& b) {
    if (a.comm_hash != b.comm_hash) return a.comm_hash < b.comm_hash;
    if (a.src_rank != b.src_rank) return a.src_rank < b.src_rank;
    if (a.dst_rank != b.dst_rank) return a.dst_rank < b.dst_rank;
    return a.channel < b.channel;
  }
};

// Sum over the kept records of one connection. Send phases come from the sender's records,
// receive phases from the receiver's; either half may be absent (its node had no data).
// All sums saturate at UINT64_MAX so that the result is order-independent and exact.
struct EdgeSummary {
  EdgeKey key;
  uint64_t phase_ns[kPhaseCount] = {0, 0, 0, 0, 0, 0};
  uint64_t send_steps = 0;
  uint64_t recv_steps = 0;
  uint64_t send_ops = 0;
  uint64_t recv_ops = 0;
  uint64_t send_bytes = 0;
  uint64_t recv_bytes = 0;
  // The wire's time: ProxyOpRecord::send_wire_busy_ns and wire_steps summed. Per step, a
  // slow link raises it; queueing behind other sends does not.
  uint64_t send_wire_busy_ns = 0;
  uint64_t send_wire_steps = 0;
  // ProxyOpRecord::send_wait_min_ns summed over the send ops that have it, and their count.
  uint64_t send_wait_min_sum_ns = 0;
  uint64_t send_wait_min_ops = 0;
  // The shortest ProxyOpRecord::recv_gpu_wait_min_ns of the receive ops that have it, and
  // their count (0: unknown, and then the minimum is 0).
  uint64_t recv_gpu_wait_min_ns = 0;
  uint64_t recv_gpu_wait_min_ops = 0;
  // ProxyOpRecord::wire_queued_steps summed (of send_wire_steps).
  uint64_t send_wire_queued_steps = 0;
  // The quickest send op's SendWait per step (its phase_ns[kSendWait] / steps, in whole ns)
  // over the send ops that carry steps, and their count (0: unknown, and then it is 0). A
  // slow wire makes every send op slow; the queue of a healthy one, which traffic bunched in
  // time fills now and then, leaves some op quick (analysis/send_wait_peers.hpp).
  uint64_t send_op_wait_min_ns = 0;
  uint64_t send_op_wait_min_ops = 0;
  // The receive op with the longest RecvGpuWait per step (its phase_ns[kRecvGpuWait] / steps,
  // in whole ns; ties to the larger sum, then steps): that per step, its RecvGpuWait and its
  // steps (all 0: no receive op with steps). A GPU slow to consume holds every op; a hold of one
  // operation (a late kernel, a stall) is that op alone (analysis/receiver_peers.hpp).
  uint64_t recv_worst_op_step_ns = 0;
  uint64_t recv_worst_op_gpu_wait_ns = 0;
  uint64_t recv_worst_op_steps = 0;
  // The largest ProxyOpRecord::send_wait_min_ns of the send ops that have it (of
  // send_wait_min_sum_ns): a slow wire slows the quickest step of every op; one op whose steps
  // all queued (a burst of credit) is that op alone (analysis/slow_wire.hpp).
  uint64_t send_wait_min_max_ns = 0;
};
static_assert(std::is_trivially_copyable_v<EdgeSummary>);

// The key under which a record is summed: the sender is the recording rank for a send,
// the peer for a receive.
inline EdgeKey edge_key_of(const ProxyOpRecord& r) {
  EdgeKey k;
  k.comm_hash = r.comm_hash;
  k.src_rank = r.is_send ? r.rank : r.peer;
  k.dst_rank = r.is_send ? r.peer : r.rank;
  k.channel = r.channel;
  return k;
}

inline uint64_t saturating_add(uint64_t a, uint64_t b) {
  uint64_t s = a + b;
  return s < a ? UINT64_MAX : s;
}

}  // namespace culprit
