#include "analysis/entry_holds_slots.hpp"

#include <optional>

namespace culprit {

void take_slots_held_by_entry(const BacklogReadings& r, const ProcessContext& context, EdgeFacts& f) {
  const EdgeKey& key = f.view.edge->key;
  if (f.slow_consume || f.slow_flush || f.p2p || !f.view.has_recv || f.view.step_ns[kRecvGpuWait] <= 0 ||
      r.held.count({context.host_of(f.dst), key.comm_hash}))
    return;
  const std::optional<double> margin = r.passages.slots_held_margin(f.dst, key.comm_hash);
  if (!margin || lane_delivered_in_time(r, context, f.dst, key)) return;
  f.anomaly[kRecvGpuWait] = f.view.step_ns[kRecvGpuWait];
  f.margin[kRecvGpuWait] = *margin;
  f.slow_consume = true;
}

}  // namespace culprit
