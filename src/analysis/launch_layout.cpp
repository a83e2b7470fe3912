#include "analysis/launch_layout.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace culprit {

std::optional<std::string> host_by_block_layout(const std::vector<GlobalProcess>& processes, int64_t global_rank) {
  std::map<std::string, std::pair<int64_t, int64_t>> span;  // host -> lowest and highest rank
  for (const GlobalProcess& p : processes) {
    if (p.rank < 0 || p.host.empty()) continue;
    auto [it, added] = span.emplace(p.host, std::make_pair(p.rank, p.rank));
    if (!added) it->second = {std::min(it->second.first, p.rank), std::max(it->second.second, p.rank)};
  }
  if (span.empty() || global_rank < 0) return std::nullopt;
  int64_t block = 1;
  for (const auto& [host, s] : span) block = std::max(block, s.second - s.first + 1);
  std::map<int64_t, std::string> host_of_block;
  for (const auto& [host, s] : span) {
    const int64_t first = s.first / block;
    if (s.second / block != first || !host_of_block.emplace(first, host).second) return std::nullopt;
  }
  auto it = host_of_block.find(global_rank / block);
  if (it == host_of_block.end()) return std::nullopt;
  return it->second;
}

}  // namespace culprit
