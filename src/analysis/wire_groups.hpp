// Which communicators' wires are compared with each other (edge_stats.hpp, WireGroups).
//
// The communicators of one kind (send/recv only, or collective) and size in a job are
// replicas: the same stage of replicated pipelines, the data-parallel groups of the model's
// shards. They move the same chunks over the same kind of links, so their wires pool into
// one baseline and one population of saturated links; a communicator of two ranks alone has
// two links, too few to compare. But a wire's time per step is latency plus the chunk over
// the bandwidth, so communicators that move chunks of different sizes (another message size
// or protocol: a tensor-parallel and a data-parallel group of one size, say) are not
// replicas whatever their size and kind: the chunk (the median bytes per send step of the
// communicator's connections) is part of the key, in bins of a factor sqrt(2) (chunk sizes
// are powers of two or close to them; a communicator whose chunk sits at a bin's edge from
// its replicas only loses their company). A communicator with no recorded send step is
// grouped by kind and size alone.
#pragma once

#include <span>
#include <vector>

#include "analysis/edge_stats.hpp"
#include "analysis/process_context.hpp"

namespace culprit {

// Each communicator mapped to the first (in hash order) of its kind, size and chunk bin,
// from the connections' views or their summaries.
WireGroups wire_groups_of(const ProcessContext& context, const std::vector<EdgeView>& views);
WireGroups wire_groups_of(const ProcessContext& context, std::span<const EdgeSummary> edges);

// Each communicator mapped to the first of its replicas: communicators of one kind, size and
// chunk whose members are other GPUs (the data-parallel groups of a job, the pipelines of a
// pipeline-parallel one), which reach their calls at the same point of the same program.
// Communicators over the same GPUs (a world and a data-parallel communicator of a job of one
// GPU per node) are calls at different points of it, and stay apart.
WireGroups replica_groups_of(const ProcessContext& context, const Observations& obs);

}  // namespace culprit
