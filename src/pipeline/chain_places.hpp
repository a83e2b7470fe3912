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
// Per channel of each tree collective of the window whose every GPU of the node in its
// communicator (three or more) recorded a stop of that channel (ChannelStopRecord, KernelCh's
// StopGpuClk on the node's GPU clock), each GPU's place is the number of those GPUs that stopped
// that channel before it. NCCL rotates the chains of a tree's channels (the simulator's tree
// 12x8x4 chains channels 1 and 3 half a node round from 0 and 2), so each channel has its own
// order: read where every GPU's mean place lies within a quarter of a whole place and no two
// share one. Each GPU that ends the chain of every channel its network records came from gets
// the chain from it (GlobalCommRank::chain_from), where those chains agree. Inputs with the
// kernel's last stop only (our live-capture shards) give one order for the whole kernel: the
// last channel's, which varies between collectives where chains rotate, and then none is read.
// From 2.28 only channel 0 records its stop: channel 0's chain alone is known.
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

// Sets each rank's chain_from (observations.hpp) from the tree collectives of the window, each
// channel's chain read from its stops; over the other collectives, counts them and those where it
// stopped last (last_stop*).
void measure_chain_places(const LocalData& data, const std::vector<CommWindow>& windows,
                          std::vector<GlobalCommRank>& ranks);

}  // namespace culprit
