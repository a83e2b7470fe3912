// Own-time evidence of a GPU from the proxy alone (DESIGN.md, "Own time, not wait"), for
// inputs without kernel clocks (probing exports without coll_perf, 2.24-2.26 traces).
//
// SendGpuWait is the time the proxy waited for the local GPU to fill a buffer. A GPU waits
// either for its own work or for its input: in a ring or tree a sender's input is what it
// received the step before. So SendGpuWait above the communicator's typical one is the
// GPU's own time only where its inputs arrived on time: the excess not explained by the
// lateness of the data it received (RecvWait above the communicator's low reference) on the
// same channel of the same communicator. A victim downstream of a straggler waits for late
// input and is explained; the straggler's own input is on time (it posts its receives late,
// so they find the data there) and is not. Each channel is a ring or tree of its own, moving
// its own slice of the buffer: what a GPU sends on one channel is made of what it received on
// that channel, not on another (with several GPUs per node and channels that rotate them, a
// GPU receives from the network on one channel and sends to it on another, fed over NVLink).
//
// A tree's head GPU of a node sends to and receives from its parent (and each child) over one
// pair of connections, and what it receives from the GPU it sends to is not that send's input:
// its parent's broadcast comes down after what it sent up, and what it sends down to a child
// is made of what came from its parent (and its other children). A leaf's send up is made over
// NVLink from its node's chain. So where the sender's node holds other ranks of the
// communicator, its receive from the GPU it sends to is left out of that send's inputs (a
// ring's entry to a node and its exit there are then different GPUs: no ring input is lost).
// Without that, a healthy tree of two nodes named a leaf whose chain held a slower GPU: its
// parent's data arrived early, which "explained" nothing of its wait. On a node of one rank of
// the communicator, a ring of two nodes feeds each GPU from the GPU it sends to, and that
// input stays.
//
// What it cannot tell apart: a sender whose input comes over NVLink from a GPU of its own
// node (no receive of its own on that channel, while a GPU of its node receives that channel
// from another node) is not judged here, since its input's arrival is unseen; the
// node-interior holds of the attribution cover that case. Nor are point-to-point sends
// (pipelines): the data a stage sends is made by work that follows whatever the stream did
// before (a receive from the next stage, another communicator), so its receives on the same
// communicator do not bound what it waited for. The attribution feeds it collective
// connections only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "analysis/edge_stats.hpp"

namespace culprit {

// A connection's send half: its sender's SendGpuWait beyond the communicator's baseline
// (significant excess per step, 0 if none) over `steps` steps, and how many times its guard
// that excess is; and how late its receiver found the data of this connection (per step, as
// InputArrivalFact), negative where the receive half is unrecorded.
struct SendGpuWaitFact {
  uint32_t sender = 0;
  uint32_t node = 0;  // the sender's host
  uint64_t comm_hash = 0;
  int32_t channel = 0;
  double excess_per_step_ns = 0;
  double steps = 0;
  double margin = 0;
  double output_late_per_step_ns = -1;
  double wait_per_step_ns = 0;  // its SendGpuWait per step, as recorded
  std::optional<uint32_t> receiver;  // the process it sends to, where known
  bool node_holds_others = false;     // its node holds other ranks of the communicator
};

// A connection's receive half: how late its data arrived (RecvWait above the communicator's
// low reference, per step; 0 if on time), and whether it came from another node.
struct InputArrivalFact {
  uint32_t receiver = 0;
  uint32_t node = 0;  // the receiver's host
  uint64_t comm_hash = 0;
  int32_t channel = 0;
  double late_per_step_ns = 0;
  bool from_other_node = true;
  double wait_per_step_ns = -1;      // its RecvWait per step as recorded (-1: not given)
  std::optional<uint32_t> sender;  // the process it came from, where known
};

// A GPU late with its own data makes its receiver wait for it: what it held back beyond what
// its receiver waited on that connection was not the receiver's loss. Where SendPeerWait is
// not recorded apart (NCCL 2.24-2.26 traces), SendGpuWait also holds the wait for the
// receiver's credit, and a sender held by a slow receiver shows a long SendGpuWait while that
// receiver finds the data waiting. So a send's unexplained part is at most its receiver's
// lateness on the same connection, where that is recorded.
//
// The lateness above and the excess are each judged against their own phase's reference,
// and those differ (a receive is posted when the GPU frees a slot, a send slot when an
// earlier send is done): where the input's RecvWait is given, a send's unexplained part is
// also at most its SendGpuWait beyond that RecvWait, both as recorded. A GPU that waited to
// fill a buffer no longer than its input took to arrive waited for that input. (A tree's root
// on a wire-bound channel returns its child's data as it comes: its long SendGpuWait is its
// child's data, late behind the root's own queued wire.)
//
// Per process: the SendGpuWait time its inputs' arrival does not explain (ns, summed over
// its sends), for the processes that have both sends with excess and recorded inputs on the
// same channel of the same communicator. Where a sender records no input on a channel and no
// GPU of its node receives that channel from another node, the data it sends there was made
// in its node from what it received on the others (a job whose recorded connections stay
// inside one node): the latest of its inputs on any channel of the communicator stands in.
// Absent: nothing unexplained, or nothing to judge it by. Its margin is the strongest of its
// sends': the unexplained part per step over the guard its excess cleared.
std::map<uint32_t, Excess> unexplained_send_gpu_wait(std::span<const SendGpuWaitFact> sends,
                                                     std::span<const InputArrivalFact> inputs);

// Per send, in order: its SendGpuWait per step as recorded less its input's lateness (at
// most its receiver's lateness on the connection, as above), any sign: the figure a sender
// is compared with its peers on (place_peers.hpp). None where its input is unseen.
std::vector<std::optional<double>> unexplained_per_step(std::span<const SendGpuWaitFact> sends,
                                                        std::span<const InputArrivalFact> inputs);

}  // namespace culprit
