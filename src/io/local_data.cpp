#include "io/local_data.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace culprit {

uint32_t LocalData::process_index(const std::string& host, int64_t pid, int64_t rank,
                                  const std::string& label) {
  std::string key = host;
  key.push_back('\0');
  key += std::to_string(pid);
  key.push_back('\0');
  key += std::to_string(rank);
  key.push_back('\0');
  key += label;
  auto it = process_lookup_.find(key);
  if (it != process_lookup_.end()) return it->second;
  auto index = static_cast<uint32_t>(processes.size());
  processes.push_back({host, pid, rank, label});
  process_lookup_.emplace(std::move(key), index);
  return index;
}

void LocalData::note_comm_rank(uint64_t comm_hash, int32_t rank, uint32_t process,
                               bool is_collective, uint64_t seq, bool seq_known) {
  const bool with_seq = is_collective && seq_known;
  size_t index = last_comm_rank_;
  if (index >= comm_ranks.size() || comm_ranks[index].comm_hash != comm_hash ||
      comm_ranks[index].rank != rank) {
    auto key = std::make_pair(comm_hash, rank);
    auto it = comm_rank_lookup_.find(key);
    if (it == comm_rank_lookup_.end()) {
      last_comm_rank_ = comm_ranks.size();
      comm_rank_lookup_.emplace(key, comm_ranks.size());
      CommRankSeen seen;
      seen.comm_hash = comm_hash;
      seen.rank = rank;
      seen.process = process;
      seen.newest_seq = with_seq ? seq : 0;
      seen.has_collective = is_collective;
      seen.has_seq = with_seq;
      comm_ranks.push_back(seen);
      return;
    }
    index = it->second;
    last_comm_rank_ = index;
  }
  CommRankSeen& seen = comm_ranks[index];
  if (with_seq) {
    seen.newest_seq = seen.has_seq ? std::max(seen.newest_seq, seq) : seq;
    seen.has_seq = true;
  }
  seen.has_collective = seen.has_collective || is_collective;
}

void LocalData::mark_cut_short(uint64_t comm_hash, int32_t rank) {
  auto it = comm_rank_lookup_.find(std::make_pair(comm_hash, rank));
  if (it != comm_rank_lookup_.end()) comm_ranks[it->second].cut_short = true;
}

void QpStat::add(uint64_t length, uint64_t duration_ns, std::optional<int64_t> end_ns) {
  if (length > 0 && end_ns) pending_sends.push_back({*end_ns, duration_ns, length});
  ++count;
  bytes = saturating_add(bytes, length);
  sum_ns = saturating_add(sum_ns, duration_ns);
  min_ns = std::min(min_ns, duration_ns);
  max_ns = std::max(max_ns, duration_ns);
  int bucket = duration_ns == 0 ? 0 : std::min(kBuckets - 1, static_cast<int>(std::bit_width(duration_ns)) - 1);
  ++hist[bucket];
}

void QpStat::fold_idle_sends() {
  if (pending_sends.empty()) return;
  const auto start_of = [](const TimedSend& s) {
    return s.end_ns - static_cast<int64_t>(std::min<uint64_t>(s.duration_ns, INT64_MAX));
  };
  std::sort(pending_sends.begin(), pending_sends.end(), [&](const TimedSend& a, const TimedSend& b) {
    return a.end_ns != b.end_ns ? a.end_ns < b.end_ns : start_of(a) < start_of(b);
  });
  uint64_t longest = 0;
  for (const TimedSend& s : pending_sends) longest = std::max(longest, s.length);
  if (longest > wr_length) {  // longer sends: the full-size ones are those of this length
    wr_length = longest;
    idle_sends = 0;
    idle_log_ns_sum = 0;
    idle_log_ns_sq_sum = 0;
  }
  // The first send of the file has no known predecessor: it is not taken.
  int64_t previous_end = INT64_MAX;
  for (const TimedSend& s : pending_sends) {
    if (s.length == wr_length && s.duration_ns > 0 && start_of(s) >= previous_end) {
      const double log_ns = std::log(static_cast<double>(s.duration_ns));
      ++idle_sends;
      idle_log_ns_sum += log_ns;
      idle_log_ns_sq_sum += log_ns * log_ns;
    }
    previous_end = previous_end == INT64_MAX ? s.end_ns : std::max(previous_end, s.end_ns);
  }
  pending_sends.clear();
  pending_sends.shrink_to_fit();
}

void QpStat::merge(const QpStat& o) {
  if (o.wr_length > wr_length) {
    wr_length = o.wr_length;
    idle_sends = o.idle_sends;
    idle_log_ns_sum = o.idle_log_ns_sum;
    idle_log_ns_sq_sum = o.idle_log_ns_sq_sum;
  } else if (o.wr_length == wr_length) {
    idle_sends += o.idle_sends;
    idle_log_ns_sum += o.idle_log_ns_sum;
    idle_log_ns_sq_sum += o.idle_log_ns_sq_sum;
  }
  count += o.count;
  bytes = saturating_add(bytes, o.bytes);
  sum_ns = saturating_add(sum_ns, o.sum_ns);
  min_ns = std::min(min_ns, o.min_ns);
  max_ns = std::max(max_ns, o.max_ns);
  for (int k = 0; k < kBuckets; ++k) hist[k] += o.hist[k];
}

uint64_t QpStat::quantile_ns(double q) const {
  if (count == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  auto rank = static_cast<uint64_t>(q * static_cast<double>(count - 1));
  uint64_t seen = 0;
  for (int k = 0; k < kBuckets; ++k) {
    seen += hist[k];
    if (seen > rank) return std::min(max_ns, k >= 63 ? UINT64_MAX : (uint64_t{2} << k) - 1);
  }
  return max_ns;
}

QpStat& LocalData::qp_stat(const std::string& host, int32_t rank, int32_t device, uint32_t qp_num,
                           uint32_t process) {
  auto key = std::make_tuple(host, rank, device, qp_num);
  auto it = qp_lookup_.find(key);
  if (it != qp_lookup_.end()) return qp_stats[it->second];
  qp_lookup_.emplace(std::move(key), qp_stats.size());
  QpStat s;
  s.host = host;
  s.rank = rank;
  s.device = device;
  s.qp_num = qp_num;
  s.process = process;
  qp_stats.push_back(std::move(s));
  return qp_stats.back();
}

void LocalData::absorb(LocalData&& other) {
  std::vector<uint32_t> remap(other.processes.size());
  for (size_t i = 0; i < other.processes.size(); ++i)
    remap[i] = process_index(other.processes[i]);
  for (const CommRankSeen& c : other.comm_ranks) {
    note_comm_rank(c.comm_hash, c.rank, remap[c.process], false, 0);
    if (c.has_collective)
      note_comm_rank(c.comm_hash, c.rank, remap[c.process], true, c.newest_seq, c.has_seq);
    if (c.cut_short) mark_cut_short(c.comm_hash, c.rank);
  }
  // Grows geometrically: a node's thousands of files are absorbed one by one, and an exact
  // reserve each time would copy everything read so far for every file.
  if (ops.capacity() < ops.size() + other.ops.size()) ops.reserve(std::max(ops.size() + other.ops.size(), 2 * ops.capacity()));
  for (ProxyOpRecord r : other.ops) {
    r.process = remap[r.process];
    ops.push_back(r);
  }
  for (KernelStartRecord k : other.kernel_starts) {
    k.process = remap[k.process];
    kernel_starts.push_back(k);
  }
  for (ChannelStopRecord c : other.channel_stops) {
    c.process = remap[c.process];
    channel_stops.push_back(c);
  }
  for (HandoffLine h : other.handoffs) {
    h.process = remap[h.process];
    handoffs.push_back(h);
  }
  for (GatedHoldRecord g : other.gated_holds) {
    g.process = remap[g.process];
    gated_holds.push_back(g);
  }
  for (InputReport& in : other.inputs) inputs.push_back(std::move(in));
  for (P2pCallCount c : other.p2p_calls) {
    c.process = remap[c.process];
    p2p_calls.push_back(c);
  }
  for (InflightRecord f : other.inflight) {
    f.process = remap[f.process];
    inflight.push_back(f);
  }
  for (FrGroupState g : other.fr_groups) {
    g.process = remap[g.process];
    fr_groups.push_back(g);
  }
  fr_members.insert(fr_members.end(), other.fr_members.begin(), other.fr_members.end());
  for (FrOpRecord r : other.fr_ops) {
    r.process = remap[r.process];
    fr_ops.push_back(r);
  }
  for (const QpStat& q : other.qp_stats)
    qp_stat(q.host, q.rank, q.device, q.qp_num, remap[q.process]).merge(q);
  ranks_losing_events.insert(other.ranks_losing_events.begin(), other.ranks_losing_events.end());
  other = LocalData();
}

}  // namespace culprit
