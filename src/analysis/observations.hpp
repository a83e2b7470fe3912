// Everything rank 0 knows after the exchange: the processes of all nodes, who is which rank
// of which communicator, and the merged connection summaries. The attribution reads only
// this, so it is unit-testable on hand-built graphs.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/flight_recorder_records.hpp"
#include "core/records.hpp"

namespace culprit {

// A GPU process of the job (LocalProcess after the exchange: pid, global rank or label,
// whichever the inputs name).
struct GlobalProcess {
  std::string host;
  int64_t pid = -1;
  int64_t rank = -1;
  std::string label;
};

// One gap (own work before a collective's kernel) of a rank, keyed by the collective's
// sequence number, so that the same gap of its role peers can be found.
struct GapSample {
  uint64_t key = 0;
  double log_ns = 0;  // log of the gap in ns
};
static_assert(std::is_trivially_copyable_v<GapSample>);

// Most gaps kept per communicator rank (the newest): enough for the statistics, small at 16k GPUs.
inline constexpr size_t kMaxGapSamples = 256;

// Most GPUs of a node in one communicator whose order along a tree's chain is kept (NCCL's nodes
// hold 8, some 16).
inline constexpr size_t kMaxChainGpus = 16;

// A communicator rank's fixed-size facts: everything of a GlobalCommRank but its list of
// gaps. Trivially copyable, so the exchange sends it as it is (pipeline/exchange_wire.hpp):
// a member added here reaches rank 0 without further code.
struct CommRankFixed {
  uint64_t comm_hash = 0;
  int32_t rank = -1;
  uint32_t process = 0;          // index into Observations::processes
  uint64_t newest_seq = 0;       // newest collective sequence recorded
  bool has_collective = false;
  bool seq_unknown = false;      // collectives seen, but no sequence number (newest_seq unknown)
  bool cut_short = false;        // its trace ended inside a collective
  // Kernel start lateness against the median of the GPUs of the same node in the same
  // collective (KernelCh StartGpuClk), summed over the window's collectives.
  int64_t kernel_late_sum_ns = 0;
  uint32_t kernel_samples = 0;
  // Duration of its collective receive ops (end - start on its own clock), summed over the
  // window. A rank that arrives late at every collective has the shortest ops: the others
  // started theirs and waited for it.
  uint64_t op_time_sum_ns = 0;
  uint32_t op_samples = 0;
  // Time its GPU spent outside NCCL before each collective of the window: kernel start minus
  // the stop of the GPU's previous collective (any communicator). Durations on one GPU's
  // own timer, so comparable across nodes. A straggler's own work shows here; a victim that
  // finished the previous collective late does not.
  uint64_t gap_sum_ns = 0;
  // The periods of those gaps: start of the GPU's previous kernel to the start of this one.
  // gap_sum_ns / gap_period_sum_ns is the share of its time the GPU spent on its own work.
  uint64_t gap_period_sum_ns = 0;
  uint32_t gap_samples = 0;
  // Time it spent inside its NCCL operations of this communicator in the window: kernel
  // durations (KernelCh, coll_perf), else the span of its proxy ops per operation; 0 when
  // no input times them. The denominator of a root's job_share.
  uint64_t busy_sum_ns = 0;
  // Passage lags (pipeline/passage_lag.hpp), in steps of the channel's pace, summed over the
  // window's (collective, channel) samples: as the node's entry of a channel (its network
  // receive), the time from its freeing a slot to the node's exit sending that data on; as the
  // exit, that lag less the backlog it would show if the GPUs before it held every slot.
  double entry_lag_sum = 0;
  double entry_lag_sq_sum = 0;
  // The same lags in ns, and the entry's time per step (its handoffs' pace), over the same
  // samples: a lag in steps of a collective whose pace was unusual reads long or short.
  double entry_lag_ns_sum = 0;
  double entry_lag_ns_sq_sum = 0;
  double entry_step_ns_sum = 0;
  double exit_shortfall_sum = 0;
  double exit_shortfall_sq_sum = 0;
  uint32_t entry_lag_samples = 0;
  uint32_t exit_shortfall_samples = 0;
  // As the GPU where a tree's data turns back (its root's GPU that meets the child: the network
  // receive and send of a tree channel are both its own), the time from freeing a slot to
  // sending that step's data back down to the child, in steps of the receive's pace, summed
  // over the window's (collective, channel) samples: a passage up the node's chain and back
  // (pipeline/passage_lag.hpp).
  double loop_lag_sum = 0;
  double loop_lag_sq_sum = 0;
  uint32_t loop_lag_samples = 0;
  // Its node's GPUs of the communicator along the chain of the tree channels it ends, as comm
  // ranks: itself first, then the next along the chain, and so on to the other end
  // (pipeline/chain_places.hpp, read from the order the GPUs stop each channel). chain_length
  // is 0 where no order was read, or where the chains of the channels it ends differ.
  int32_t chain_from[kMaxChainGpus] = {};
  uint32_t chain_length = 0;
  // In the collectives of another algorithm than the tree (a ring's), where all of its node's
  // GPUs of the communicator recorded a stop: how many there were, and in how many it stopped
  // last of them (pipeline/chain_places.hpp: a ring's slow consumer stops last).
  uint32_t last_stop_samples = 0;
  uint32_t last_stops = 0;
  // Its network receives' holds where its output slots' gates are known (GatedHoldRecord,
  // core/records.hpp), summed over the window: the steps, and the part of each hold after the
  // step's inputs were all in and its output slots free (its own), and of that the part after
  // it had freed the step before (its work on each step, without the queue of earlier steps).
  uint64_t gated_steps = 0;
  uint64_t gated_own_sum_ns = 0;
  uint64_t gated_work_sum_ns = 0;
};
static_assert(std::is_trivially_copyable_v<CommRankFixed>);

struct GlobalCommRank : CommRankFixed {
  // The single gaps of the window, oldest first; empty where only the sums are known.
  std::vector<GapSample> gaps;
};

// Wire time of one InfiniBand queue pair (probing's nccl.net_qp), summed.
struct QpObservation {
  uint32_t process = 0;
  int32_t device = -1;
  uint32_t qp_num = 0;
  uint64_t count = 0;    // work requests
  uint64_t bytes = 0;
  uint64_t sum_ns = 0;   // their durations
  // Its sends of the largest length that found it idle (the wire's own time: latency, one
  // transfer and the acknowledgement), as the sums of the logs of their durations and of their
  // squares.
  uint64_t wr_length = 0;
  uint64_t idle_sends = 0;
  double idle_log_ns_sum = 0;
  double idle_log_ns_sq_sum = 0;
};

static_assert(std::is_trivially_copyable_v<QpObservation>);

struct Observations {
  std::vector<GlobalProcess> processes;
  std::vector<QpObservation> qps;
  std::vector<GlobalCommRank> comm_ranks;
  std::vector<EdgeSummary> edges;  // sorted by key, halves merged
  std::vector<P2pCallCount> p2p_calls;  // one per (comm, rank, peer, direction)
  std::vector<InflightRecord> inflight;  // ops alive at a watchdog snapshot (process: index above)
  // Flight Recorder dumps: how far each rank got in each process group (one per group and
  // process), the groups' members (one per group and global rank) and the ring entries.
  std::vector<FrGroupState> fr_groups;
  std::vector<FrMemberRun> fr_members;
  std::vector<FrOpRecord> fr_ops;
  int seq_window = 20;
};

}  // namespace culprit
