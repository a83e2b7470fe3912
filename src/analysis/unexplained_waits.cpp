#include "analysis/unexplained_waits.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace culprit {

std::vector<UnexplainedWaitTarget> unexplained_wait_targets(const std::vector<WaitEdge>& holds,
                                                            const std::vector<Evidence>& evidence,
                                                            const std::vector<bool>& work_measured) {
  std::set<uint32_t> waiting;
  std::map<uint32_t, double> waited_on;
  for (const WaitEdge& h : holds) {
    if (h.from == h.to) continue;
    waiting.insert(h.from);
    waited_on[h.to] += h.weight_ns;
  }
  std::vector<UnexplainedWaitTarget> out;
  for (const auto& [process, waited] : waited_on) {
    const bool explained = process < evidence.size() && evidence[process].any();
    const bool measured = process < work_measured.size() && work_measured[process];
    if (!explained && !measured && !waiting.count(process) && waited > 0) out.push_back({process, waited});
  }
  std::sort(out.begin(), out.end(), [](const UnexplainedWaitTarget& a, const UnexplainedWaitTarget& b) {
    return a.waited_ns != b.waited_ns ? a.waited_ns > b.waited_ns : a.process < b.process;
  });
  return out;
}

void note_unexplained_wait_targets(const std::vector<UnexplainedWaitTarget>& targets, double all_waiting_ns,
                                   const ProcessContext& context, std::vector<std::string>& notes) {
  if (targets.empty()) return;
  constexpr size_t kNamed = 3;
  std::string named;
  for (size_t i = 0; i < targets.size() && i < kNamed; ++i) {
    char waited[64];
    const double share = all_waiting_ns > 0 ? 100 * targets[i].waited_ns / all_waiting_ns : 0;
    std::snprintf(waited, sizeof waited, "%.3g s, %.2g %% of all waiting", targets[i].waited_ns / 1e9, share);
    named += (named.empty() ? "" : ", ") + context.name_of(targets[i].process) + " (" + waited + ")";
  }
  if (targets.size() > kNamed) named += ", ...";
  notes.push_back("waits lead to " + std::to_string(targets.size()) +
                  " GPU(s) without kernel clocks that nothing recorded of their own explains (waited on, summed "
                  "over connections): " + named +
                  "; whether each came late, was slow, or was held by what no record shows (a slow link into it), "
                  "and whether it differs from the slowest healthy GPU, which is waited for too, the data cannot "
                  "tell, so none is named a culprit by that alone (nccl.coll_perf times a GPU's own work)");
}

}  // namespace culprit
