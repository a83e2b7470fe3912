#include "analysis/silent_gpus.hpp"

#include <optional>
#include <set>

#include "analysis/launch_layout.hpp"

namespace culprit {
namespace {

bool named_for_gpu_time(const Evidence& e) {
  return !e.stopped && (e.culprit_class == CulpritClass::kGpuProducer || e.culprit_class == CulpritClass::kGpuConsumer);
}

// "29-33", "29, 31-32": consecutive ranks as ranges.
std::string rank_ranges(const std::vector<int64_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

std::vector<SilentNodeGpus> silent_gpus_beside_roots(const std::vector<uint32_t>& roots,
                                                     const std::vector<Evidence>& evidence,
                                                     const std::vector<GlobalProcess>& processes) {
  std::vector<SilentNodeGpus> found;
  const std::optional<BlockLayout> layout = block_layout(processes);
  if (!layout) return found;
  std::set<int64_t> held;
  for (const GlobalProcess& p : processes)
    if (p.rank >= 0) held.insert(p.rank);
  const int64_t highest = held.empty() ? -1 : *held.rbegin();  // ranks beyond it are not known to exist
  for (uint32_t root : roots) {
    if (root >= processes.size() || root >= evidence.size() || !named_for_gpu_time(evidence[root])) continue;
    const GlobalProcess& p = processes[root];
    if (p.rank < 0 || p.host.empty()) continue;
    SilentNodeGpus entry{root, {}};
    for (int64_t r : layout->ranks_of(p.host))
      if (r <= highest && !held.count(r)) entry.ranks.push_back(r);
    if (!entry.ranks.empty()) found.push_back(std::move(entry));
  }
  return found;
}

void note_silent_gpus_beside_roots(const std::vector<SilentNodeGpus>& found, const std::vector<Evidence>& evidence,
                                   const ProcessContext& context, std::vector<std::string>& notes) {
  constexpr size_t kNoted = 3;
  for (size_t i = 0; i < found.size() && i < kNoted; ++i) {
    const SilentNodeGpus& f = found[i];
    notes.push_back(context.name_of(f.root) + ", named " + name_of(evidence[f.root].culprit_class) + ", has " +
                    std::to_string(f.ranks.size()) + " GPU(s) of its node that recorded nothing (global rank(s) " +
                    rank_ranges(f.ranks) +
                    ", placed on it by the job's block layout): proxy ops record network transfers only, so a GPU "
                    "that moves its data over NVLink alone has none (nor has one whose records are missing). One "
                    "of them slow or late holds the node's network GPUs as the one named would, and the data cannot "
                    "tell them apart (KernelCh or nccl.coll_perf time every GPU's own work)");
  }
}

}  // namespace culprit
