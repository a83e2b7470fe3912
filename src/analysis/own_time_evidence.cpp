#include "analysis/own_time_evidence.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "analysis/queue_pair_wires.hpp"
#include "analysis/unexplained_send_gpu_wait.hpp"

namespace culprit {

void offer_unexplained_send_gpu_wait(const Observations& obs, const ProcessContext& context,
                                     const std::vector<EdgeFacts>& facts, const OwnDelay& own_delay,
                                     std::vector<Evidence>& evidence, std::vector<std::string>& notes) {
  const bool all_measured = own_delay.all_work_measured();
  std::vector<SendGpuWaitFact> sends;
  std::vector<InputArrivalFact> arrivals;
  std::map<std::string, uint32_t> nodes;  // host -> its index
  auto node_of = [&](uint32_t process) {
    return nodes.emplace(context.host_of(process), static_cast<uint32_t>(nodes.size())).first->second;
  };
  for (size_t i = 0; i < facts.size() && !all_measured; ++i) {  // kernel clocks judge every GPU's own work
    const EdgeFacts& f = facts[i];
    const EdgeSummary& e = obs.edges[i];
    if (f.src == f.dst || f.p2p) continue;  // collectives only (unexplained_send_gpu_wait.hpp says why)
    if (f.view.has_send)
      sends.push_back({.sender = f.src,
                       .node = node_of(f.src),
                       .comm_hash = e.key.comm_hash,
                       .channel = e.key.channel,
                       .excess_per_step_ns = f.anomaly[kSendGpuWait],
                       .steps = static_cast<double>(e.send_steps),
                       .margin = f.margin[kSendGpuWait],
                       .output_late_per_step_ns = f.view.has_recv ? f.late_data_ns : -1});
    if (f.view.has_recv)
      arrivals.push_back({.receiver = f.dst,
                          .node = node_of(f.dst),
                          .comm_hash = e.key.comm_hash,
                          .channel = e.key.channel,
                          .late_per_step_ns = f.late_data_ns,
                          .from_other_node = node_of(f.src) != node_of(f.dst)});
  }
  for (const auto& [p, own] : unexplained_send_gpu_wait(sends, arrivals))
    if (!own_delay.work_measured[p]) evidence[p].offer(own.ns, CulpritClass::kGpuProducer, std::nullopt, own.margin);
  const auto& measured = own_delay.work_measured;
  if (std::none_of(measured.begin(), measured.end(), [](bool m) { return m; }) && !obs.edges.empty())
    notes.push_back("no GPU kernel windows in the input (KernelCh with StopGpuClk, nccl.coll_perf): a GPU's own "
                    "work is judged by its SendGpuWait beyond what its inputs' arrival explains, and a late post of "
                    "its buffers only where it came far later than its peers (the slowest healthy GPU posts late too)");
}

void offer_kernel_lateness(const OwnDelay& own_delay, std::vector<Evidence>& evidence) {
  for (uint32_t p = 0; p < own_delay.late_ns.size(); ++p) {
    if (own_delay.late_ns[p] <= 0) continue;
    evidence[p].offer(own_delay.late_ns[p], CulpritClass::kGpuProducer, std::nullopt, own_delay.margin[p]);
    // A GPU whose own work is measurably slow also consumes and frees buffers slowly: that
    // is one straggler, not a consumer fault.
    if (evidence[p].culprit_class == CulpritClass::kGpuConsumer) evidence[p].culprit_class = CulpritClass::kGpuProducer;
  }
}

void offer_slow_wires(const Observations& obs, const std::vector<EdgeFacts>& facts, std::vector<Evidence>& evidence) {
  for (size_t i = 0; i < facts.size(); ++i)
    if (facts[i].slow_link)
      evidence[facts[i].src].offer(facts[i].link_excess_ns * static_cast<double>(obs.edges[i].send_steps),
                                   CulpritClass::kNetworkLink, facts[i].dst, facts[i].link_margin);
}

void offer_slow_queue_pairs(const Observations& obs, const std::vector<EdgeFacts>& facts,
                            const AttributionConfig& cfg, std::vector<Evidence>& evidence) {
  std::vector<OutboundSendWait> sends;
  for (const EdgeFacts& f : facts)
    if (f.view.has_send) sends.push_back({f.src, f.dst, f.view.step_ns[kSendWait]});
  for (const SlowQueuePair& q : slow_queue_pairs(obs.qps, sends, evidence.size(), cfg))
    evidence[q.process].offer(q.excess_ns, CulpritClass::kNetworkLink, q.peer, q.margin);
}

}  // namespace culprit
