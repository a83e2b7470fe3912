// Where along a node's GPUs a channel's data waits: the passage lag.
//
// A ring channel enters a node at one GPU (its entry: a network receive), passes the node's
// other GPUs over NVLink and leaves at its exit (a network send); the proxy records only the
// two ends. Every connection has kSlotsPerConnection (NCCL_STEPS, 8) slots. Data received by
// the entry at step k leaves the exit at step k + g (g: the node's GPUs in the communicator;
// each GPU forwards a step one step later). When one GPU frees its receive slots late (a slow
// consumer), every GPU before it on the channel fills its slots and waits; the ones after it
// are starved. So, on the node's GPU clock, the time from the entry freeing the slot of step k
// to the exit handing step k + g to its proxy, in steps of the channel's pace (the entry's time
// per step), is about (S = kSlotsPerConnection):
//   the entry itself holds its slots:     -S (it frees a slot a full buffer after it forwarded
//                                          its data);
//   the GPU after the entry is slow:       about 0 (the passage itself);
//   p GPUs after the entry:                S (p - 1): p - 1 full buffers wait between;
//   the exit is slow (p = g - 1):          S (g - 2).
// A buffer only partly full lowers the backlog, never raises it.
//
// A tree channel crosses a node both ways: NCCL chains the node's GPUs between the one that
// meets the parent and the one that meets the children (BALANCED_TREE). The children's data
// enters at the second and leaves at the first, the parent's the other way, and each GPU
// forwards step k as step k, so the exit hands over step k (not k + g). The same table holds
// for each way, with one difference: a slow GPU paces the way up, and the parent's data comes
// down at that pace, so no backlog builds on the way down and a slow exit of the way down
// shows no full buffers. The slow GPU still holds, or fills the buffers, on the way up. The
// analysis
// (analysis/consumer_position.hpp) reads the lags to find which GPU of the node consumes
// slowly; the proxy alone sees only that the entry's slots are freed late.
//
// At the tree's root the chain meets the network at one end: the GPU that meets the child
// receives the child's data, which goes up the chain to the top GPU and comes back down to it
// as the same step, to be sent to the child. Its lag, from freeing step k to sending step k
// back, is a passage up the chain and down again (twice the one-way passage, about) plus the
// same backlog as an entry's: S (p - 1) steps with the slow GPU p GPUs up the chain from it,
// the top GPU included (p = g - 1). A leaf's GPU, which meets its parent the same way, reads a
// negative lag: its data of step k must go up to the root and back before its parent's step k
// comes. A channel is taken as a turn only where every collective of the window reads a
// positive lag (loop_lag_*), and only in tree collectives.
//
// Needs per-step traces (HandoffLine, core/records.hpp) and kernel clocks with their host time
// (KernelStartRecord::start_host_ns) to set both processes on one clock; other inputs give no
// samples.
#pragma once

#include <vector>

#include "analysis/observations.hpp"
#include "io/local_data.hpp"

namespace culprit {

// Sums each (collective, channel) of the window whose node holds exactly one network receive
// and one network send, by two different processes (a ring), or two of each by two processes (a
// tree's interior node), into the entry's entry_lag_* and the exit's exit_shortfall_*; and, for
// a tree channel whose network receives and sends are all one process's in every collective,
// and whose lags are all positive (the root's turn), into that GPU's loop_lag_*
// (observations.hpp).
void measure_passage_lags(const LocalData& data, const std::vector<CommWindow>& windows,
                          std::vector<GlobalCommRank>& ranks);

}  // namespace culprit
