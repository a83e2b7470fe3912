// Which GPU of a node consumes slowly, from the passage lags (pipeline/passage_lag.hpp).
//
// The receive explanations name a slow consumer from the network receives it frees late. The
// entry of a channel (its network receive) shows that the same way when it is slow itself and
// when a GPU after it on the node is: its slots fill either way (hidden_consumers.hpp). What
// tells them apart is where the data waits. An entry that holds its slots frees each a full
// buffer after it passed the data on, so the node's exit sends the data before the entry frees
// its slot: a negative lag. An entry held by a GPU after it frees a slot as soon as it
// forwards the data, which then reaches the exit a passage later or, behind full buffers,
// later still: a lag of zero or more. And only a slow exit leaves every buffer before it full,
// a backlog of kSlotsPerConnection steps per GPU between the entry and the exit.
//
// Per GPU of the named one's node and communicator, over its samples (one per collective and
// channel of the window) and at a one-sided 1e-3:
//   holds      its lag as an entry is below -1 step:     it is the slow consumer;
//   passes on  its lag as an entry is above 0:           it is not (between, a step of slack
//              for joining the two processes' clocks, nothing is concluded);
//   full       as an exit, its shortfall from the full backlog is above half a buffer (a
//              backlog one GPU shorter is a full buffer short): it is the slow consumer,
//              unless its network sends wait for credit more than for their data (the data
//              is then held beyond the node, and every buffer of the node fills anyway).
// One GPU that holds or is full is placed; else, where all but one GPU pass on, that one.
// Where several remain and the named one passes on with a backlog after it
// (backlog_inside_node.hpp), the backlog's length along the node's chain (chain_order.hpp)
// names the GPU, where it lies within a quarter of a buffer of a whole number of buffers (one
// per GPU between); with no backlog (its lag within a quarter of a buffer of the straight
// passage) the next GPU along the chain is: an entry held at all is held behind full buffers
// up to the slow GPU. In a ring, whose stops give no chain order, the GPU that stopped last of
// the node's in every collective is the slow one: a ring's slow consumer takes the last step of
// all (pipeline/chain_places.hpp; where a step's passage to the next GPU outlasts its
// consumption, latency rather than the consumer orders the stops, and no GPU may stop last
// every time). Neither where a GPU of the node sends waiting for credit more than for
// its data (every buffer of the node then fills from beyond). Else the first of them is placed
// with the share 1 / (GPUs left) (Evidence::identified_share); else nothing is moved.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "analysis/connection_facts.hpp"
#include "analysis/process_context.hpp"
#include "analysis/self_evidence.hpp"

namespace culprit {

struct ConsumerPlacement {
  uint32_t named = 0;      // the root the receive explanations named gpu_consumer
  uint32_t placed = 0;     // the GPU the lags place the slow consumption on (may be `named`)
  uint32_t left = 1;       // GPUs the lags could not tell apart, `placed` among them; 0: nothing concluded
  std::string why;         // for the note
  std::vector<std::string> readings;  // each GPU's lags, for NCCL_CULPRIT_DEBUG
  bool concluded() const { return left > 0; }
};

// One placement per root named gpu_consumer (not stopped) with slow-consuming receives; where
// the lags conclude nothing, one with left = 0 (its readings only). A root in `own_measured`
// (own_holds.hpp: its holds set against its own output slots stood out) consumed slowly
// itself and is not placed.
std::vector<ConsumerPlacement> place_slow_consumers(const Observations& observations,
                                                    const std::vector<EdgeFacts>& facts,
                                                    const ProcessContext& context,
                                                    const std::vector<Evidence>& evidence,
                                                    const std::vector<uint32_t>& roots,
                                                    const std::set<uint32_t>& own_measured = {});

// Moves each named root's evidence to the placed GPU (scaled by 1 / left), in `evidence` and
// `roots`, with a note where the GPU changed.
void apply_consumer_placements(const std::vector<ConsumerPlacement>& placements, const ProcessContext& context,
                               std::vector<Evidence>& evidence, std::vector<uint32_t>& roots,
                               std::vector<std::string>& notes);

}  // namespace culprit
