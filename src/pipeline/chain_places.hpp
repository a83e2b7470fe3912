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
#pragma once

#include <vector>

#include "analysis/observations.hpp"
#include "io/local_data.hpp"

namespace culprit {

// Sums each rank's place into chain_place_* (observations.hpp), over the collectives of the
// window where all of its node's GPUs of that communicator, three or more, recorded a stop.
void measure_chain_places(const LocalData& data, const std::vector<CommWindow>& windows,
                          std::vector<GlobalCommRank>& ranks);

}  // namespace culprit
