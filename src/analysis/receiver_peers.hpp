// Signal of the connection facts pass: how a receiver's buffer handling compares with its
// peers'. Three phases are the receiver's doing: SendPeerWait (the sender waits for the
// receiver's credit), RecvFlushWait and RecvGpuWait (the receiver's GPU consuming the data).
//
// Receivers that combine several network inputs on one channel (tree parents) hold early
// data until the last input arrives: their RecvGpuWait and withheld credit are structural.
// So receivers are judged among their own kind (same wire group, combining or not), and a
// combining receiver's hold on an input is first reduced by how much later its latest
// sibling input arrived (that much is explained). Send/recv communicators are different: a
// stage's inputs from both neighbours (forward and backward) are separate calls that never
// wait for each other, so no p2p receiver combines. A kind spans a wire group (wire_groups.hpp):
// replicas of one kind, size and chunk consume the same chunks with the same kernels, and a
// communicator alone may be too small to judge its members by (a pipeline has two middle
// stages, a data-parallel pair two receivers).
//
// A receiver is judged against the connections into the other receivers of its kind, never
// its own: a slow receiver is slow on all of its inputs alike, and where it holds a large
// share of its kind's connections (half of them in a tree of three GPUs, in a data-parallel
// pair, or in a pipeline's middle stages) they would move the median halfway to it.
//
// Held buffers (withheld credit, slow consumption) only throttle a pipeline when they cost a
// good part of a transfer, so those two are judged at credit_rel_floor of the step scale;
// flush at rel_floor. With fewer than kMinRobustSample connections into other receivers there
// is no robust baseline: an outlier must then stand above every one of them. For consumption,
// each hold counts there less its receiver's own wait for credit on that channel, the judged
// one's too: a GPU whose output is full holds its input for that (under LL, a tree's GPUs wait
// on each other's credit in a loop), and its hold is no bar for how fast a GPU consumes. Nor
// is a combining peer's hold on an input that its later sibling input explains: it counts less
// that delay, as the judged one's does. Measured on a tree 4x8x2 under LL128 (fresh seed
// 11159): the up-entry of the node whose interior GPU consumed 4.38x slowly (80 % slower) held
// both of its inputs 1.64 ms a step; the only other combining receiver held one input 1.66 ms
// while its other input came 1.66 ms later, from behind that node, and nobody was named. Where
// many receivers are judged, their median is left as it is: healthy loops of credit hold every
// input of a large LL tree alike, and held holds as the reference keep them from standing out
// (less their blocked output, they named up to 17 GPUs of one healthy tree+dp job). Measured on
// a tree of three nodes of one GPU under LL: a 2.42x consumer, 39 % slower, held its inputs
// 84-86 us a step with its sends waiting for no credit; the other two held theirs as long while
// waiting 87 us a step for credit. Judged against their holds, it was named by nobody.
//
// A receiver of a collective that meets one peer alone on a channel, receiving from it and
// sending to it only (a binary tree's root and its one child, NCCL's ncclGetBtree; a ring of
// two), returns that peer's data to it: it frees an input slot once its output to the same
// peer has credit. A GPU slow to consume holds every input longer, its quickest too. So where
// the receiver holds its quickest input of the communicator no longer than the communicator's
// receivers typically hold theirs (beyond rel_floor of the step and abs_floor_ns), its hold
// there counts less its sends' wait for credit. The records cannot tell such a root from a
// leaf, which meets its parent alone too. A GPU slow to consume is judged by its holds whole,
// the wait of a loop of LL credit included, where its own hold comes round as its sends' wait
// (a tree of three nodes; a 1.75x consumer of a tree+dp under LL held its quickest input 11 us
// a step against its communicator's 1 us, and made the job twice as slow). Measured on a
// healthy tree+dp of 26 nodes under LL (seed 242621): the data-parallel root held its child's
// data 31 us a step while its sends back down waited 33 us for the child's credit, and held the
// other tree's broadcast 1 us; its peers by kind, the leaves, held the broadcast 1 us, and it
// was named a consumer at 0.98.
//
// Slow consumption must also be in every step. A GPU slow to consume frees every slot late;
// a GPU that holds a slot while it waits for something else (an input over NVLink, which no
// record shows, or a free output slot) holds only the steps that found that late, and its
// quickest step is as quick as anyone's. So where the input times single steps, the
// connection's shortest RecvGpuWait step must stand above its kind's typical shortest step by
// the floors of §1 (rel_floor of the step scale and abs_floor_ns); else it is no slow
// consumption. Without step times (probing's sums) the mean alone judges.
//
// And in every operation. A GPU slow to consume holds every receive op alike; one operation's
// stall (a kernel that started late, a burst of work) holds that op's steps alone, and summed
// over the window it can look like a consumer. So a connection's consumption is judged by its
// RecvGpuWait per step without its worst receive op, where it has three or more receive ops
// (with fewer, one op is a third of what is known), its peers' alike. Measured on two healthy
// trees under LL with heavy compute (fresh seeds 11137 and 11143, both named gpu_consumer at
// 0.98): an interior GPU held one input 24-36 us a step in seven ops and 1062 us in the eighth;
// in the other, 25-33 us in seven and 3552 us in one, where the other interior GPU of the same
// channel held its input as long in the same op. A slow consumer of a tree (4.66x) held 464-537
// us in each of its eight.
#pragma once

#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/edge_stats.hpp"

namespace culprit {

class ReceiverPeers {
 public:
  // `views` must outlive this object (it keeps pointers to them). p2p_sizes: the send/recv-only
  // communicators and their sizes (every other communicator runs collectives).
  // wire_groups: the communicators judged together (absent: each alone).
  ReceiverPeers(const std::vector<EdgeView>& views, const AttributionConfig& config,
                const std::map<uint64_t, int32_t>& p2p_sizes = {}, const WireGroups& wire_groups = {});

  // Significant excess per step of `phase` (kSendPeerWait, kRecvFlushWait or kRecvGpuWait)
  // of connection `view` above its peers (0: none), with its margin over the tightest of its
  // guards; cycle_ns is its communicator's step scale. `every_step` false leaves out the
  // guard that a slow consumer holds every step (backlog_inside_node.hpp: a hold behind a
  // backlog inside the receiver's node).
  Excess anomaly(const EdgeView& view, int phase, double cycle_ns, bool every_step = true) const;

  // Whether the receiver of `key` combines several network inputs on that channel.
  bool combining(const EdgeKey& key) const;

 private:
  using Channel = std::tuple<uint64_t, int32_t, int32_t>;  // (comm, receiving rank, channel)
  // (wire group; whether it runs send/recv only; combining)
  using Kind = std::tuple<uint64_t, bool, bool>;
  using Receiver = std::pair<uint64_t, int32_t>;  // (comm, receiving rank)
  using Values = std::vector<std::pair<double, Receiver>>;
  struct Group {
    Values members;   // each connection's value
    Values shortest;  // its shortest step, where known (kRecvGpuWait only)
    Values unblocked;  // its hold less what explains it (unexplained_hold; kRecvGpuWait only)
    std::vector<double> sorted;         // the members' values, ascending
    std::map<Receiver, size_t> inputs;  // the members of each receiver
    // Per receiver, the baseline of the other receivers' connections (a slow receiver is slow
    // on all of its inputs alike, so its own connections are no reference for it), made when
    // first needed: one per receiver of a large kind would cost the kind's size squared.
    mutable std::map<Receiver, Robust> base_without;
    mutable std::map<Receiver, Robust> shortest_without;
    mutable std::map<Receiver, Robust> unblocked_without;
  };
  // Whether `value` of `receiver` may stand above the other receivers' median by `floor`:
  // false where it cannot, whatever their spread (their median is at least the full group's
  // order statistic at the same place).
  static bool may_stand_out(const Group& group, const Receiver& receiver, double value, double floor);
  static const Robust& others_of(const Values& values, std::map<Receiver, Robust>& cache, const Receiver& receiver);
  Kind kind_of(const EdgeKey& key) const;
  // How far a receiver's shortest consumption step stands above its kind's typical shortest
  // (0: not in every step; infinite where steps are not timed).
  double every_step_margin(const EdgeView& view, const Robust& shortest, double cycle_ns) const;
  // The held time judged: a combining receiver's hold less its latest sibling input's delay.
  double held_value(const EdgeView& view, int phase, bool combines) const;
  // A connection's RecvGpuWait per step less its receiver's longest SendPeerWait per step on
  // the same communicator and channel (at least 0).
  double unblocked_hold(const EdgeView& view) const;
  // A hold as a bar among few peers: less the larger of what its blocked output and a later
  // sibling input explain (held_value, unblocked_hold).
  double unexplained_hold(const EdgeView& view) const;
  // Whether `view`'s receiver returns its data to its sender alone (returns_to_sender) and
  // holds its quickest input of the communicator no longer, beyond `floor`, than the
  // communicator's receivers typically hold theirs (no GPU slow to consume).
  bool held_for_returned_data(const EdgeView& view, double floor) const;
  // Whether the receiver of `key` meets its sender alone on that channel, in both directions, in a
  // collective (a send/recv stage's forward and backward calls never wait for each other).
  bool returns_to_sender(const EdgeKey& key) const;
  // `value` against `base`, the other receivers' connections, with the floors at `scale`.
  Excess excess_over_peers(double value, const Robust& base, double scale) const;
  double sibling_wait(const EdgeView& view) const;

  const AttributionConfig& config_;
  std::map<uint64_t, int32_t> p2p_sizes_;
  WireGroups wire_groups_;
  std::map<Channel, int> fan_in_;  // connections into each receiving channel
  std::map<Channel, std::vector<const EdgeView*>> inputs_of_;
  std::map<Channel, double> output_blocked_;  // (comm, sending rank, channel): its longest SendPeerWait per step
  // (comm, sending rank, channel): the one rank it sends to (-2: several).
  std::map<Channel, int32_t> only_output_;
  std::map<Receiver, double> quickest_hold_;  // the shortest RecvGpuWait per step of its inputs
  std::map<uint64_t, double> typical_quickest_hold_;  // per communicator: its receivers' median
  std::map<Kind, std::map<int, Group>> groups_;
};

}  // namespace culprit
