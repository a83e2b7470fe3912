#include "analysis/unexplained_send_gpu_wait.hpp"

#include <algorithm>
#include <utility>

namespace culprit {

std::map<uint32_t, Excess> unexplained_send_gpu_wait(std::span<const SendGpuWaitFact> sends,
                                                     std::span<const InputArrivalFact> inputs) {
  // The latest of each (process, communicator)'s inputs: a GPU combining several inputs
  // waits for the last one.
  std::map<std::pair<uint32_t, uint64_t>, double> input_lateness;
  for (const InputArrivalFact& in : inputs) {
    auto [it, added] = input_lateness.emplace(std::make_pair(in.receiver, in.comm_hash), in.late_per_step_ns);
    if (!added) it->second = std::max(it->second, in.late_per_step_ns);
  }
  std::map<uint32_t, Excess> own;
  for (const SendGpuWaitFact& s : sends) {
    if (s.excess_per_step_ns <= 0) continue;
    auto late = input_lateness.find({s.sender, s.comm_hash});
    if (late == input_lateness.end()) continue;  // its input's arrival is unseen
    double unexplained = s.excess_per_step_ns - std::max(0.0, late->second);
    if (s.output_late_per_step_ns >= 0) unexplained = std::min(unexplained, s.output_late_per_step_ns);
    if (unexplained <= 0) continue;
    Excess& total = own[s.sender];
    total.ns += unexplained * s.steps;
    // The guard its excess cleared is excess / margin: the unexplained part against that guard.
    total.margin = std::max(total.margin, s.margin * unexplained / s.excess_per_step_ns);
  }
  return own;
}

}  // namespace culprit
