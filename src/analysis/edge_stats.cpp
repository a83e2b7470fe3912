#include "analysis/edge_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/robust_stats.hpp"

namespace culprit {

Robust robust_of(std::vector<double> values) {
  Robust r;
  r.n = values.size();
  if (values.empty()) return r;
  r.minimum = *std::min_element(values.begin(), values.end());
  r.maximum = *std::max_element(values.begin(), values.end());
  r.median = median_in_place(values);
  for (double& v : values) v = std::fabs(v - r.median);
  r.sigma = 1.4826 * median_in_place(values);
  return r;
}

EdgeView view_of(const EdgeSummary& e) {
  EdgeView v;
  v.edge = &e;
  v.has_send = e.send_steps > 0;
  v.has_recv = e.recv_steps > 0;
  for (int p = 0; p < kPhaseCount; ++p) {
    bool send_phase = p <= kSendWait;
    uint64_t steps = send_phase ? e.send_steps : e.recv_steps;
    v.step_ns[p] = steps ? static_cast<double>(e.phase_ns[p]) / static_cast<double>(steps) : 0;
  }
  v.send_cycle_ns = v.step_ns[kSendGpuWait] + v.step_ns[kSendPeerWait] + v.step_ns[kSendWait];
  v.recv_cycle_ns = v.step_ns[kRecvWait] + v.step_ns[kRecvFlushWait] + v.step_ns[kRecvGpuWait];
  if (e.send_wire_steps) {
    v.wire_ns = static_cast<double>(e.send_wire_busy_ns) / static_cast<double>(e.send_wire_steps);
    // Time a send spent queued behind others on the wire, at most: its SendWait beyond one
    // busy interval (the rest is its own transfer, and latency). A wire whose sends waited
    // longer for the receiver's credit is paced by the receiver. (Not so for the wait for
    // data: the proxy posts a send's steps up to a buffer ahead, and each posted step waits
    // for its data however fast the wire, so a saturated wire's sender shows that wait too.)
    const double queued_ns = v.step_ns[kSendWait] - v.wire_ns;
    v.wire_saturated = static_cast<double>(e.send_wire_queued_steps) >=
                           kSaturatedShare * static_cast<double>(e.send_wire_steps) &&
                       v.step_ns[kSendWait] >= kSaturatedDepth * v.wire_ns &&
                       queued_ns > v.step_ns[kSendPeerWait];
  }
  if (e.send_wait_min_ops)
    v.send_wait_min_ns = e.send_wait_min_ops >= kMinOpsForWorstLeftOut
                             ? static_cast<double>(e.send_wait_min_sum_ns - e.send_wait_min_max_ns) /
                                   static_cast<double>(e.send_wait_min_ops - 1)
                             : static_cast<double>(e.send_wait_min_sum_ns) / static_cast<double>(e.send_wait_min_ops);
  // Send ops of one step each (a small message over many channels): no busy time after a first
  // completion, but that one step found its wire idle (the op before on the connection ended
  // with its last send completed) and nothing queued behind it, so its SendWait is the wire's
  // own time for one chunk, latency included: an unsaturated wire's busy time per step.
  if (!e.send_wire_steps && e.send_wait_min_ops && e.send_steps == e.send_wait_min_ops &&
      e.send_ops == e.send_wait_min_ops)
    v.wire_ns = v.send_wait_min_ns;
  if (e.recv_gpu_wait_min_ops) v.consume_min_ns = static_cast<double>(e.recv_gpu_wait_min_ns);
  if (e.send_op_wait_min_ops) v.quickest_op_send_wait_ns = static_cast<double>(e.send_op_wait_min_ns);
  if (v.send_wait_min_ns > 0 && v.quickest_op_send_wait_ns && *v.quickest_op_send_wait_ns > 0)
    v.send_wait_min_ns = std::min(v.send_wait_min_ns, *v.quickest_op_send_wait_ns);
  v.consume_typical_ns = v.step_ns[kRecvGpuWait];
  if (e.recv_ops >= kMinOpsForWorstLeftOut && e.recv_worst_op_steps && e.recv_worst_op_steps < e.recv_steps)
    v.consume_typical_ns = static_cast<double>(e.phase_ns[kRecvGpuWait] - e.recv_worst_op_gpu_wait_ns) /
                           static_cast<double>(e.recv_steps - e.recv_worst_op_steps);
  return v;
}

uint64_t wire_group_of(uint64_t comm, const WireGroups& groups) {
  auto it = groups.find(comm);
  return it == groups.end() ? comm : it->second;
}

std::map<uint64_t, CommBaseline> baselines_of(const std::vector<EdgeView>& views, const WireGroups& wire_groups) {
  std::map<uint64_t, std::vector<const EdgeView*>> by_comm, by_wire_group;
  for (const EdgeView& v : views) {
    by_comm[v.edge->key.comm_hash].push_back(&v);
    by_wire_group[wire_group_of(v.edge->key.comm_hash, wire_groups)].push_back(&v);
  }
  std::map<uint64_t, std::pair<Robust, Robust>> wires;  // per wire group: busy time, shortest send
  for (const auto& [group, members] : by_wire_group) {
    std::vector<double> wire, shortest;
    for (const EdgeView* v : members) {
      if (v->wire_ns > 0) wire.push_back(v->wire_ns);
      if (v->send_wait_min_ns > 0) shortest.push_back(v->send_wait_min_ns);
    }
    wires[group] = {robust_of(std::move(wire)), robust_of(std::move(shortest))};
  }
  std::map<uint64_t, CommBaseline> out;
  for (auto& [comm, members] : by_comm) {
    CommBaseline b;
    for (int p = 0; p < kPhaseCount; ++p) {
      bool send_phase = p <= kSendWait;
      std::vector<double> values;
      for (const EdgeView* v : members)
        if (send_phase ? v->has_send : v->has_recv) values.push_back(v->step_ns[p]);
      b.phase[p] = robust_of(std::move(values));
    }
    std::tie(b.wire, b.send_wait_min) = wires[wire_group_of(comm, wire_groups)];
    std::vector<double> cycles, ops;
    for (const EdgeView* v : members) {
      cycles.push_back(std::max(v->send_cycle_ns, v->recv_cycle_ns));
      const EdgeSummary& e = *v->edge;
      if (e.send_ops) ops.push_back(v->send_cycle_ns * static_cast<double>(e.send_steps) /
                                    static_cast<double>(e.send_ops));
      else if (e.recv_ops) ops.push_back(v->recv_cycle_ns * static_cast<double>(e.recv_steps) /
                                         static_cast<double>(e.recv_ops));
    }
    b.cycle_ns = b.phase[kSendWait].n ? b.phase[kSendWait].median : robust_of(cycles).median;
    b.op_ns = robust_of(ops).median;
    out[comm] = b;
  }
  return out;
}

double low_reference(const Robust& r) { return r.n < kMinRobustSample ? r.minimum : r.median; }
double high_reference(const Robust& r) { return r.n < kMinRobustSample ? r.maximum : r.median; }

Excess beyond_guard(double excess, double guard) {
  if (!(excess > guard)) return {};
  return {excess, guard > 0 ? excess / guard : std::numeric_limits<double>::infinity()};
}

bool data_ready_at_once(const EdgeView& v, const AttributionConfig& cfg) {
  return v.has_send && v.step_ns[kSendGpuWait] < cfg.rel_floor * v.send_cycle_ns;
}

double ratio_margin(double value, double reference, double ratio) {
  const double asked = (ratio - 1) * reference;
  return asked > 0 ? (value - reference) / asked : std::numeric_limits<double>::infinity();
}

Excess significant_excess(double value, const Robust& base, double cycle_ns, const AttributionConfig& config) {
  // With fewer than kMinRobustSample connections a median and MAD describe the outlier as
  // much as the rest (two links: the median is halfway to the culprit). Then the quietest
  // connection is the reference and only the floors guard.
  bool small = base.n < kMinRobustSample;
  double reference = low_reference(base);
  double excess = value - reference;
  double guard = std::max({small ? 0.0 : config.mad_k * base.sigma, config.rel_floor * cycle_ns,
                           config.abs_floor_ns});
  Excess beyond = beyond_guard(std::fabs(excess), guard);
  if (excess < 0) beyond.ns = -beyond.ns;
  return beyond;
}

}  // namespace culprit
