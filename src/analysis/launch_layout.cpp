#include "analysis/launch_layout.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace culprit {

std::optional<BlockLayout> block_layout(const std::vector<GlobalProcess>& processes) {
  std::map<std::string, std::pair<int64_t, int64_t>> span;  // host -> lowest and highest rank
  for (const GlobalProcess& p : processes) {
    if (p.rank < 0 || p.host.empty()) continue;
    auto [it, added] = span.emplace(p.host, std::make_pair(p.rank, p.rank));
    if (!added) it->second = {std::min(it->second.first, p.rank), std::max(it->second.second, p.rank)};
  }
  if (span.empty()) return std::nullopt;
  BlockLayout layout;
  for (const auto& [host, s] : span) layout.block = std::max(layout.block, s.second - s.first + 1);
  for (const auto& [host, s] : span) {
    const int64_t first = s.first / layout.block;
    if (s.second / layout.block != first || !layout.host_of_block.emplace(first, host).second) return std::nullopt;
  }
  return layout;
}

std::optional<std::string> BlockLayout::host_of(int64_t global_rank) const {
  if (global_rank < 0) return std::nullopt;
  auto it = host_of_block.find(global_rank / block);
  if (it == host_of_block.end()) return std::nullopt;
  return it->second;
}

std::vector<int64_t> BlockLayout::ranks_of(const std::string& host) const {
  std::vector<int64_t> ranks;
  for (const auto& [index, h] : host_of_block)
    if (h == host)
      for (int64_t r = index * block; r < (index + 1) * block; ++r) ranks.push_back(r);
  return ranks;
}

std::optional<std::string> host_by_block_layout(const std::vector<GlobalProcess>& processes, int64_t global_rank) {
  const std::optional<BlockLayout> layout = block_layout(processes);
  return layout ? layout->host_of(global_rank) : std::nullopt;
}

}  // namespace culprit
