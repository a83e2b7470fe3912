#include "analysis/unexplained_send_gpu_wait.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace culprit {

namespace {

// What is known of an input: how late it arrived, and its RecvWait per step as recorded (-1:
// not given). Of several, the latest and the longest.
struct Input {
  double late = 0;
  double wait = -1;
};

// A GPU's inputs: per channel (its own), and the latest of any channel (the stand-in where its
// node makes a channel's data itself), and which channels each node receives from another node.
class InputLateness {
 public:
  explicit InputLateness(std::span<const InputArrivalFact> inputs) {
    for (const InputArrivalFact& in : inputs) {
      const Input seen{in.late_per_step_ns, in.wait_per_step_ns};
      per_channel_[{in.receiver, in.comm_hash, in.channel}].push_back({in.sender, seen});
      raise(any_channel_, {in.receiver, in.comm_hash}, seen);
      if (in.from_other_node) node_entries_.insert({in.node, in.comm_hash, in.channel});
    }
  }

  // The input that fed `s`, or none where it is unseen.
  std::optional<Input> feeding(const SendGpuWaitFact& s) const {
    // A GPU combining several inputs of its channel (a tree's children) waits for the last one;
    // a tree head's receive from the GPU it sends to is not among them (the header says why).
    if (auto it = per_channel_.find({s.sender, s.comm_hash, s.channel}); it != per_channel_.end()) {
      std::optional<Input> latest;
      for (const auto& [from, seen] : it->second) {
        if (s.node_holds_others && from && from == s.receiver) continue;
        if (!latest) latest = seen;
        latest->late = std::max(latest->late, seen.late);
        latest->wait = std::max(latest->wait, seen.wait);
      }
      if (latest) return latest;
    }
    if (node_entries_.count({s.node, s.comm_hash, s.channel})) return std::nullopt;  // fed over NVLink
    if (auto it = any_channel_.find({s.sender, s.comm_hash}); it != any_channel_.end()) return it->second;
    return std::nullopt;
  }

 private:
  template <typename Key>
  static void raise(std::map<Key, Input>& latest, const Key& key, const Input& seen) {
    auto [it, added] = latest.emplace(key, seen);
    if (added) return;
    it->second.late = std::max(it->second.late, seen.late);
    it->second.wait = std::max(it->second.wait, seen.wait);
  }

  // Per (receiver, communicator, channel): each input with the process it came from.
  std::map<std::tuple<uint32_t, uint64_t, int32_t>, std::vector<std::pair<std::optional<uint32_t>, Input>>>
      per_channel_;
  std::map<std::pair<uint32_t, uint64_t>, Input> any_channel_;
  std::set<std::tuple<uint32_t, uint64_t, int32_t>> node_entries_;  // (node, communicator, channel)
};

// What of `wait` (a SendGpuWait per step, or its excess) the sender's input does not explain:
// less that input's lateness, at most its output's own lateness where that is seen; none
// where the input's arrival is unseen.
std::optional<double> unexplained_part(double wait, const SendGpuWaitFact& s, const std::optional<Input>& input) {
  if (!input) return std::nullopt;
  const double unexplained = wait - std::max(0.0, input->late);
  return s.output_late_per_step_ns >= 0 ? std::min(unexplained, s.output_late_per_step_ns) : unexplained;
}

}  // namespace

std::map<uint32_t, Excess> unexplained_send_gpu_wait(std::span<const SendGpuWaitFact> sends,
                                                     std::span<const InputArrivalFact> inputs) {
  const InputLateness inputs_of(inputs);
  std::map<uint32_t, Excess> own;
  for (const SendGpuWaitFact& s : sends) {
    if (s.excess_per_step_ns <= 0) continue;
    const std::optional<Input> input = inputs_of.feeding(s);
    double unexplained = unexplained_part(s.excess_per_step_ns, s, input).value_or(0);
    // No longer than its input took to arrive, both as recorded (the header says why).
    if (input && input->wait >= 0) unexplained = std::min(unexplained, s.wait_per_step_ns - input->wait);
    if (unexplained <= 0) continue;  // explained, or its input's arrival is unseen
    Excess& total = own[s.sender];
    total.ns += unexplained * s.steps;
    // The guard its excess cleared is excess / margin: the unexplained part against that guard.
    total.margin = std::max(total.margin, s.margin * unexplained / s.excess_per_step_ns);
  }
  return own;
}

std::vector<std::optional<double>> unexplained_per_step(std::span<const SendGpuWaitFact> sends,
                                                        std::span<const InputArrivalFact> inputs) {
  const InputLateness inputs_of(inputs);
  std::vector<std::optional<double>> out;
  for (const SendGpuWaitFact& s : sends) out.push_back(unexplained_part(s.wait_per_step_ns, s, inputs_of.feeding(s)));
  return out;
}

}  // namespace culprit
