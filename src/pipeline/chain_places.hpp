// The order of a node's GPUs along its chain: when each stopped its collective's kernel.
//
// A tree channel chains the GPUs of a node between the one that meets the parent and the one
// that meets the children (NCCL's BALANCED_TREE). An AllReduce ends with the parent's data
// coming down: each GPU of the chain receives the last step from the one before it, hands it
// to the one after it, and its kernel stops. So the node's GPUs stop one after another, in
// their order along the chain, one NVLink hop apart, and the one that meets the parent first.
// The proxy records only the chain's two ends; this gives the order of the GPUs between them,
// which the analysis needs to name the one the passage lags point at
// (analysis/consumer_position.hpp: a lag of S (p - 1) steps puts the slow GPU p GPUs after
// the entry, and this says which GPU that is).
//
// Per collective of the window whose every GPU of the node in its communicator recorded a
// kernel stop (KernelStartRecord::stop_gpu_clk_ns, on the node's GPU clock), each GPU's place
// is the number of those GPUs that stopped before it. Where the chains of a communicator's
// channels differ (NCCL rotates them where there are several channels per tree), the stop is
// the last channel's and the places of one GPU vary between collectives: the analysis then
// reads no order (its places' spread).
//
// Tree collectives only (KernelStartRecord::tree). A ring has no such last pass down a chain:
// with a slow consumer on the node its GPUs stop in one order every time, the slow one last and
// the one before it next to last, which is not their order along the chain (a ring 4x8x1
// under LL128 whose 2.86x consumer cost 110 % had its node's GPUs stop 24, 31, 30, ..., 27, 25,
// 26, fresh seed 11091; read as a chain it put the consumer four GPUs off, at 0.98).
//
// What a ring's stops do say is which GPU stopped last. Every GPU's last step receives a
// chunk that completes its output and goes no further, and every chunk passes every GPU of the
// ring, one step of each after the other: a GPU's last chunk left a slow consumer at least one
// of the consumer's steps before the consumer took its own last one, so the consumer stops
// after every other GPU, in every collective it slows (analysis/consumer_position.hpp).
#pragma once

#include <vector>

#include "analysis/observations.hpp"
#include "io/local_data.hpp"

namespace culprit {

// Sums each rank's place into chain_place_* (observations.hpp), over the tree collectives of
// the window where all of its node's GPUs of that communicator, three or more, recorded a stop;
// over the other collectives, counts them and those where it stopped last (last_stop*).
void measure_chain_places(const LocalData& data, const std::vector<CommWindow>& windows,
                          std::vector<GlobalCommRank>& ranks);

}  // namespace culprit
