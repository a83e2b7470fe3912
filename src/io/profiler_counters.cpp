#include "io/profiler_counters.hpp"

#include <algorithm>

namespace culprit {
namespace {

// "rank R (count), ..." for the ranks with a non-zero count, at most `most`, then how many more.
// Ranks are torch.distributed ranks, one per process of the job: the host is left out (a
// `_host` tag is the file's text, of any length, and a note stays one short line).
template <class Count>
std::string named(const std::map<std::pair<std::string, int32_t>, Count>& of, uint64_t Count::*field, size_t most) {
  std::string text;
  size_t shown = 0, more = 0;
  for (const auto& [who, counts] : of) {
    if (counts.*field == 0) continue;
    if (shown == most) {
      ++more;
      continue;
    }
    text += std::string(shown++ ? ", " : "") + "rank " + std::to_string(who.second) + " (" +
            std::to_string(counts.*field) + ")";
  }
  if (more) text += " and " + std::to_string(more) + " more";
  return text;
}

}  // namespace

void ProfilerCounterTally::add(const std::string& host, int32_t rank, uint64_t pool_exhausted, uint64_t write_errors,
                               uint64_t rows_overwritten) {
  Counts& c = of_[{host, rank}];
  c.pool_exhausted = std::max(c.pool_exhausted, pool_exhausted);
  c.write_errors = std::max(c.write_errors, write_errors);
  c.rows_overwritten = std::max(c.rows_overwritten, rows_overwritten);
}

std::set<std::pair<std::string, int32_t>> ProfilerCounterTally::losing_ranks() const {
  std::set<std::pair<std::string, int32_t>> ranks;
  for (const auto& [who, c] : of_)
    if (c.pool_exhausted > 0 || c.write_errors > 0) ranks.insert(who);
  return ranks;
}

std::vector<std::string> ProfilerCounterTally::notes() const {
  std::vector<std::string> notes;
  const std::string exhausted = named(of_, &Counts::pool_exhausted, kMaxNamed);
  if (!exhausted.empty())
    notes.push_back("probing's event pool ran out on " + exhausted +
                    ": rows lost, queue pairs not judged by idle sends");
  const std::string errors = named(of_, &Counts::write_errors, kMaxNamed);
  if (!errors.empty())
    notes.push_back("probing failed to write rows of " + errors + ": rows lost, queue pairs not judged by idle sends");
  const std::string overwritten = named(of_, &Counts::rows_overwritten, kMaxNamed);
  if (!overwritten.empty())
    notes.push_back("probing's ring buffer overwrote old rows of " + overwritten + ": tables hold the newest only");
  return notes;
}

}  // namespace culprit
