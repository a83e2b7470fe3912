#include "pipeline/exchange.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "reduce/edge_reduce.hpp"

namespace culprit {
namespace {

template <size_t N>
void copy_text(char (&dst)[N], const std::string& src) {
  std::memset(dst, 0, N);
  std::memcpy(dst, src.data(), std::min(src.size(), N - 1));
}

template <size_t N>
std::string text_of(const char (&src)[N]) {
  return std::string(src, strnlen(src, N));
}

struct WireProcess {
  char host[64];
  char label[32];
  int64_t pid;
  int64_t rank;
};

struct WireCommRank {
  uint64_t comm_hash;
  uint64_t newest_seq;
  int64_t kernel_late_sum_ns;
  uint64_t op_time_sum_ns;
  uint64_t gap_sum_ns;
  uint64_t gap_period_sum_ns;
  uint64_t busy_sum_ns;
  uint64_t n_gaps;  // its GapSamples, in the gap section in comm-rank order
  int32_t rank;
  uint32_t process;
  uint32_t kernel_samples;
  uint32_t flags;  // bit 0: has_collective, bit 1: cut_short, bit 2: seq_unknown
  uint32_t op_samples;
  uint32_t gap_samples;
};

constexpr int kWireReasons = 3;
constexpr int kWireNotes = 3;
struct WireInput {
  char host[64];
  char path[256];
  char format[16];
  char error[160];
  char reason[kWireReasons][96];
  char note[kWireNotes][192];
  uint64_t reason_count[kWireReasons];
  uint64_t records;
  uint64_t rejected;
  uint64_t truncated;
};

struct WireHeader {
  uint64_t magic;
  uint64_t n_processes, n_comm_ranks, n_edges, n_inputs, n_qps, n_p2p_calls, n_inflight, n_gaps;
  uint64_t n_fr_groups, n_fr_members, n_fr_ops;
};
constexpr uint64_t kMagic = 0x6e63636c63756c37ull;  // "nccl cul7" (7: Flight Recorder records)

template <typename T>
void append(std::vector<char>& out, const T* items, size_t n) {
  size_t at = out.size();
  out.resize(at + n * sizeof(T));
  if (n) std::memcpy(out.data() + at, items, n * sizeof(T));
}

template <typename T>
std::vector<T> take(const std::vector<char>& in, size_t& at, uint64_t n) {
  if (n > (in.size() - at) / sizeof(T)) throw std::runtime_error("truncated exchange blob");
  std::vector<T> out(n);
  if (n) std::memcpy(out.data(), in.data() + at, n * sizeof(T));
  at += n * sizeof(T);
  return out;
}

// What rank 0 already holds of the Flight Recorder records: the same dump read twice (copied
// files) or a group's member list sent by several nodes counts once.
struct FlightRecorderSeen {
  std::set<std::pair<uint64_t, uint32_t>> groups;   // (group, process)
  std::set<std::tuple<uint64_t, int32_t, int32_t, int32_t, int32_t>> members;  // member runs
  std::set<uint32_t> processes_with_ops;            // processes whose entries are held
};

void merge_flight_recorder(const NodeSummary& node, const std::vector<uint32_t>& remap, FlightRecorderSeen& seen,
                           Observations& obs) {
  std::set<uint32_t> new_ops;
  for (FrGroupState g : node.fr_groups) {
    g.process = remap[g.process];
    if (seen.groups.insert({g.group, g.process}).second) obs.fr_groups.push_back(g);
  }
  for (const FrMemberRun& m : node.fr_members)
    if (seen.members.insert({m.group, m.first_group_rank, m.first_rank, m.stride, m.count}).second) obs.fr_members.push_back(m);
  for (FrOpRecord r : node.fr_ops) {
    r.process = remap[r.process];
    if (seen.processes_with_ops.count(r.process)) continue;
    new_ops.insert(r.process);
    obs.fr_ops.push_back(r);
  }
  seen.processes_with_ops.insert(new_ops.begin(), new_ops.end());
}

}  // namespace

std::vector<char> pack_node_summary(const NodeSummary& s) {
  WireHeader h{kMagic, s.processes.size(), s.comm_ranks.size(), s.edges.size(), s.inputs.size(),
               s.qps.size(), s.p2p_calls.size(), s.inflight.size(), 0,
               s.fr_groups.size(), s.fr_members.size(), s.fr_ops.size()};
  for (const GlobalCommRank& c : s.comm_ranks) h.n_gaps += c.gaps.size();
  std::vector<char> out;
  append(out, &h, 1);
  std::vector<WireProcess> procs(s.processes.size());
  for (size_t i = 0; i < procs.size(); ++i) {
    copy_text(procs[i].host, s.processes[i].host);
    copy_text(procs[i].label, s.processes[i].label);
    procs[i].pid = s.processes[i].pid;
    procs[i].rank = s.processes[i].rank;
  }
  append(out, procs.data(), procs.size());
  std::vector<WireCommRank> ranks(s.comm_ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    const GlobalCommRank& c = s.comm_ranks[i];
    ranks[i] = {c.comm_hash, c.newest_seq, c.kernel_late_sum_ns, c.op_time_sum_ns, c.gap_sum_ns,
                c.gap_period_sum_ns, c.busy_sum_ns, c.gaps.size(), c.rank, c.process, c.kernel_samples,
                (c.has_collective ? 1u : 0u) | (c.cut_short ? 2u : 0u) | (c.seq_unknown ? 4u : 0u),
                c.op_samples, c.gap_samples};
  }
  append(out, ranks.data(), ranks.size());
  append(out, s.edges.data(), s.edges.size());
  std::vector<WireInput> inputs(s.inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputReport& in = s.inputs[i];
    WireInput& w = inputs[i];
    std::memset(&w, 0, sizeof(w));
    copy_text(w.host, in.host);
    copy_text(w.path, in.path);
    copy_text(w.format, in.format);
    copy_text(w.error, in.error);
    w.records = in.records;
    w.rejected = in.rejected;
    w.truncated = in.truncated ? 1 : 0;
    std::vector<std::pair<uint64_t, std::string>> reasons;
    for (const auto& [reason, n] : in.reject_reasons) reasons.emplace_back(n, reason);
    std::sort(reasons.rbegin(), reasons.rend());
    for (int k = 0; k < kWireReasons && k < static_cast<int>(reasons.size()); ++k) {
      copy_text(w.reason[k], reasons[k].second);
      w.reason_count[k] = reasons[k].first;
    }
    for (int k = 0; k < kWireNotes && k < static_cast<int>(in.notes.size()); ++k)
      copy_text(w.note[k], in.notes[k]);
  }
  append(out, inputs.data(), inputs.size());
  append(out, s.qps.data(), s.qps.size());  // QpObservation is plain data
  append(out, s.p2p_calls.data(), s.p2p_calls.size());  // so is P2pCallCount
  append(out, s.inflight.data(), s.inflight.size());    // and InflightRecord
  for (const GlobalCommRank& c : s.comm_ranks) append(out, c.gaps.data(), c.gaps.size());
  append(out, s.fr_groups.data(), s.fr_groups.size());  // Flight Recorder records are plain data
  append(out, s.fr_members.data(), s.fr_members.size());
  append(out, s.fr_ops.data(), s.fr_ops.size());
  return out;
}

NodeSummary unpack_node_summary(const std::vector<char>& bytes) {
  size_t at = 0;
  auto header = take<WireHeader>(bytes, at, 1);
  if (header[0].magic != kMagic) throw std::runtime_error("exchange blob has a bad magic number");
  NodeSummary s;
  for (const WireProcess& p : take<WireProcess>(bytes, at, header[0].n_processes))
    s.processes.push_back({text_of(p.host), p.pid, p.rank, text_of(p.label)});
  for (const WireCommRank& c : take<WireCommRank>(bytes, at, header[0].n_comm_ranks)) {
    GlobalCommRank g;
    g.comm_hash = c.comm_hash;
    g.rank = c.rank;
    g.process = c.process;
    g.newest_seq = c.newest_seq;
    g.has_collective = (c.flags & 1u) != 0;
    g.cut_short = (c.flags & 2u) != 0;
    g.seq_unknown = (c.flags & 4u) != 0;
    g.kernel_late_sum_ns = c.kernel_late_sum_ns;
    g.kernel_samples = c.kernel_samples;
    g.op_time_sum_ns = c.op_time_sum_ns;
    g.op_samples = c.op_samples;
    g.gap_sum_ns = c.gap_sum_ns;
    g.gap_period_sum_ns = c.gap_period_sum_ns;
    g.gap_samples = c.gap_samples;
    if (c.n_gaps > bytes.size() / sizeof(GapSample)) throw std::runtime_error("exchange blob: bad gap count");
    g.gaps.resize(c.n_gaps);  // filled from the gap section below
    g.busy_sum_ns = c.busy_sum_ns;
    if (c.process >= s.processes.size()) throw std::runtime_error("exchange blob: bad process index");
    s.comm_ranks.push_back(g);
  }
  s.edges = take<EdgeSummary>(bytes, at, header[0].n_edges);
  for (const WireInput& w : take<WireInput>(bytes, at, header[0].n_inputs)) {
    InputReport in;
    in.host = text_of(w.host);
    in.path = text_of(w.path);
    in.format = text_of(w.format);
    in.error = text_of(w.error);
    in.records = w.records;
    in.rejected = w.rejected;
    in.truncated = w.truncated != 0;
    for (int k = 0; k < kWireReasons; ++k)
      if (w.reason[k][0]) in.reject_reasons[text_of(w.reason[k])] = w.reason_count[k];
    for (int k = 0; k < kWireNotes; ++k)
      if (w.note[k][0]) in.notes.push_back(text_of(w.note[k]));
    s.inputs.push_back(std::move(in));
  }
  s.qps = take<QpObservation>(bytes, at, header[0].n_qps);
  for (const QpObservation& q : s.qps)
    if (q.process >= s.processes.size()) throw std::runtime_error("exchange blob: bad QP process index");
  s.p2p_calls = take<P2pCallCount>(bytes, at, header[0].n_p2p_calls);
  for (const P2pCallCount& c : s.p2p_calls)
    if (c.process >= s.processes.size()) throw std::runtime_error("exchange blob: bad p2p process index");
  s.inflight = take<InflightRecord>(bytes, at, header[0].n_inflight);
  for (const InflightRecord& f : s.inflight)
    if (f.process >= s.processes.size()) throw std::runtime_error("exchange blob: bad in-flight process index");
  std::vector<GapSample> gaps = take<GapSample>(bytes, at, header[0].n_gaps);
  size_t next = 0;
  for (GlobalCommRank& c : s.comm_ranks) {
    if (c.gaps.size() > gaps.size() - next) throw std::runtime_error("exchange blob: gap counts exceed the gap section");
    std::copy(gaps.begin() + static_cast<std::ptrdiff_t>(next),
              gaps.begin() + static_cast<std::ptrdiff_t>(next + c.gaps.size()), c.gaps.begin());
    next += c.gaps.size();
  }
  if (next != gaps.size()) throw std::runtime_error("exchange blob: gap section longer than its counts");
  s.fr_groups = take<FrGroupState>(bytes, at, header[0].n_fr_groups);
  s.fr_members = take<FrMemberRun>(bytes, at, header[0].n_fr_members);
  s.fr_ops = take<FrOpRecord>(bytes, at, header[0].n_fr_ops);
  for (const FrGroupState& g : s.fr_groups)
    if (g.process >= s.processes.size()) throw std::runtime_error("exchange blob: bad Flight Recorder process index");
  for (const FrOpRecord& r : s.fr_ops)
    if (r.process >= s.processes.size()) throw std::runtime_error("exchange blob: bad Flight Recorder process index");
  return s;
}

void gather_observations(Communicator& comm, const NodeSummary& mine, int seq_window,
                         Observations* observations, std::vector<InputReport>* inputs) {
  std::vector<std::vector<char>> blobs = comm.gather_bytes(pack_node_summary(mine));
  *observations = Observations();
  observations->seq_window = seq_window;
  inputs->clear();
  if (comm.rank() != 0) return;

  std::map<std::tuple<std::string, int64_t, int64_t, std::string>, uint32_t> process_index;
  std::map<std::pair<uint64_t, int32_t>, size_t> rank_index;
  std::map<std::tuple<uint64_t, int32_t, int32_t, uint8_t>, size_t> p2p_index;
  std::vector<EdgeSummary> all_edges;
  FlightRecorderSeen fr_seen;
  for (const std::vector<char>& blob : blobs) {
    if (blob.empty()) continue;  // an analyzer process silent past the deadline sent nothing
    NodeSummary node = unpack_node_summary(blob);
    std::vector<uint32_t> remap(node.processes.size());
    for (size_t i = 0; i < node.processes.size(); ++i) {
      const GlobalProcess& p = node.processes[i];
      auto key = std::make_tuple(p.host, p.pid, p.rank, p.label);
      auto [it, added] = process_index.emplace(key, observations->processes.size());
      if (added) observations->processes.push_back(node.processes[i]);
      remap[i] = it->second;
    }
    for (GlobalCommRank c : node.comm_ranks) {
      c.process = remap[c.process];
      auto key = std::make_pair(c.comm_hash, c.rank);
      auto it = rank_index.find(key);
      if (it == rank_index.end()) {
        rank_index.emplace(key, observations->comm_ranks.size());
        observations->comm_ranks.push_back(c);
      } else {  // the same rank reported twice (copied files): keep the richer entry
        GlobalCommRank& seen = observations->comm_ranks[it->second];
        seen.newest_seq = std::max(seen.newest_seq, c.newest_seq);
        seen.has_collective = seen.has_collective || c.has_collective;
        seen.seq_unknown = seen.seq_unknown && c.seq_unknown;
        seen.cut_short = seen.cut_short || c.cut_short;
        if (c.kernel_samples > seen.kernel_samples) {
          seen.kernel_late_sum_ns = c.kernel_late_sum_ns;
          seen.kernel_samples = c.kernel_samples;
        }
        if (c.gap_samples > seen.gap_samples) {
          seen.gap_sum_ns = c.gap_sum_ns;
          seen.gap_period_sum_ns = c.gap_period_sum_ns;
          seen.gap_samples = c.gap_samples;
          seen.gaps = c.gaps;
        }
        seen.busy_sum_ns = std::max(seen.busy_sum_ns, c.busy_sum_ns);
        if (c.op_samples > seen.op_samples) {
          seen.op_time_sum_ns = c.op_time_sum_ns;
          seen.op_samples = c.op_samples;
        }
      }
    }
    all_edges.insert(all_edges.end(), node.edges.begin(), node.edges.end());
    for (QpObservation q : node.qps) {
      q.process = remap[q.process];
      observations->qps.push_back(q);
    }
    for (P2pCallCount c : node.p2p_calls) {
      c.process = remap[c.process];
      // The same rank reported twice (copied files): keep the larger count.
      auto key = std::make_tuple(c.comm_hash, c.rank, c.peer, c.is_send);
      auto [it, added] = p2p_index.emplace(key, observations->p2p_calls.size());
      if (added) observations->p2p_calls.push_back(c);
      else observations->p2p_calls[it->second].calls = std::max(observations->p2p_calls[it->second].calls, c.calls);
    }
    for (InflightRecord f : node.inflight) {
      f.process = remap[f.process];
      observations->inflight.push_back(f);
    }
    merge_flight_recorder(node, remap, fr_seen, *observations);
    for (InputReport& in : node.inputs) inputs->push_back(std::move(in));
  }
  observations->edges = merge_edge_summaries(all_edges);
}

}  // namespace culprit
