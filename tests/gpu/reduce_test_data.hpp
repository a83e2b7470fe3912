// Test data for the reduction tests (CPU and CUDA): random and adversarial ProxyOp records,
// and an independent reference reduction (std::map, 128-bit sums clamped at UINT64_MAX).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <span>
#include <tuple>
#include <vector>

#include "core/records.hpp"

namespace culprit::testdata {

struct GenOptions {
  std::size_t n = 1000;
  int comms = 3;
  int ranks = 8;
  int channels = 4;
  uint64_t max_seq = 50;
  double p2p_fraction = 0.1;
  uint64_t max_phase = 1'000'000;  // phase values drawn in [0, max_phase]
  uint64_t max_bytes = 1 << 20;
  uint32_t max_steps = 64;
  bool huge_values = false;  // draw phases, bytes and steps near the top of their range
  uint64_t seed = 1;
};

inline uint64_t comm_hash_of(int c) { return 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(c + 1); }

inline std::vector<ProxyOpRecord> random_records(const GenOptions& o) {
  std::mt19937_64 rng(o.seed);
  auto uni = [&](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  std::vector<ProxyOpRecord> out(o.n);
  for (std::size_t i = 0; i < o.n; ++i) {
    ProxyOpRecord& r = out[i];
    r.comm_hash = comm_hash_of(static_cast<int>(uni(0, o.comms - 1)));
    r.rank = static_cast<int32_t>(uni(0, o.ranks - 1));
    r.peer = static_cast<int32_t>(uni(0, o.ranks - 1));
    r.channel = static_cast<int32_t>(uni(0, o.channels - 1));
    r.seq = uni(0, o.max_seq);
    r.is_send = static_cast<uint8_t>(uni(0, 1));
    r.is_p2p = std::uniform_real_distribution<double>(0, 1)(rng) < o.p2p_fraction ? 1 : 0;
    r.start_ns = uni(0, UINT64_MAX);
    r.process = static_cast<uint32_t>(uni(0, 100));
    if (o.huge_values) {
      for (auto& p : r.phase_ns) p = uni(UINT64_MAX - (UINT64_MAX >> 3), UINT64_MAX);
      r.bytes = uni(UINT64_MAX >> 1, UINT64_MAX);
      r.steps = static_cast<uint32_t>(uni(UINT32_MAX - 1000, UINT32_MAX));
      r.send_wire_busy_ns = uni(UINT64_MAX - (UINT64_MAX >> 3), UINT64_MAX);
      r.wire_steps = static_cast<uint32_t>(uni(UINT32_MAX - 1000, UINT32_MAX));
      r.wire_queued_steps = static_cast<uint32_t>(uni(UINT32_MAX - 1000, UINT32_MAX));
      r.send_wait_min_ns = uni(0, 1) ? uni(UINT64_MAX - (UINT64_MAX >> 3), UINT64_MAX) : 0;
    } else {
      for (auto& p : r.phase_ns) p = uni(0, o.max_phase);
      r.bytes = uni(0, o.max_bytes);
      r.steps = static_cast<uint32_t>(uni(0, o.max_steps));
      r.send_wire_busy_ns = uni(0, o.max_phase);
      r.wire_steps = static_cast<uint32_t>(uni(0, o.max_steps));
      r.wire_queued_steps = static_cast<uint32_t>(uni(0, r.wire_steps));
      r.send_wait_min_ns = uni(0, 1) ? uni(1, o.max_phase) : 0;  // 0: unknown (probing exports)
    }
    if (!r.is_send) {  // a receive has no wire of its own, and may know its shortest consume
      r.send_wire_busy_ns = 0;
      r.wire_steps = 0;
      r.wire_queued_steps = 0;
      r.send_wait_min_ns = 0;
      r.has_recv_gpu_wait_min = static_cast<uint8_t>(uni(0, 1));
      // 0 is a valid shortest step; unknown ones carry garbage the reduction must ignore.
      r.recv_gpu_wait_min_ns = o.huge_values ? uni(UINT64_MAX - (UINT64_MAX >> 3), UINT64_MAX) : uni(0, o.max_phase);
    }
  }
  return out;
}

// Windows for half of the communicators (sorted by comm_hash), min_seq in the middle.
inline std::vector<CommWindow> some_windows(int comms, uint64_t max_seq) {
  std::vector<CommWindow> w;
  for (int c = 0; c < comms; c += 2) w.push_back({comm_hash_of(c), max_seq / 2});
  std::sort(w.begin(), w.end(),
            [](const CommWindow& a, const CommWindow& b) { return a.comm_hash < b.comm_hash; });
  return w;
}

// Independent reference: linear window scan, std::map, 128-bit sums clamped at the end of
// every addition (a clamped sum of non-negative terms is order independent).
inline std::vector<EdgeSummary> reference_reduce(std::span<const ProxyOpRecord> records,
                                                 std::span<const CommWindow> windows) {
  using U128 = unsigned __int128;
  auto clamp_add = [](uint64_t& acc, uint64_t v) {
    U128 s = static_cast<U128>(acc) + v;
    acc = s > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(s);
  };
  std::map<std::tuple<uint64_t, int32_t, int32_t, int32_t>, EdgeSummary> sums;
  for (const ProxyOpRecord& r : records) {
    bool keep = true;
    if (!r.is_p2p) {
      for (const CommWindow& w : windows)
        if (w.comm_hash == r.comm_hash && r.seq < w.min_seq) keep = false;
    }
    if (!keep) continue;
    int32_t src = r.is_send ? r.rank : r.peer;
    int32_t dst = r.is_send ? r.peer : r.rank;
    EdgeSummary& s = sums[{r.comm_hash, src, dst, r.channel}];
    s.key.comm_hash = r.comm_hash;
    s.key.src_rank = src;
    s.key.dst_rank = dst;
    s.key.channel = r.channel;
    int base = r.is_send ? 0 : 3;
    for (int p = base; p < base + 3; ++p) clamp_add(s.phase_ns[p], r.phase_ns[p]);
    clamp_add(r.is_send ? s.send_steps : s.recv_steps, r.steps);
    clamp_add(r.is_send ? s.send_ops : s.recv_ops, 1);
    clamp_add(r.is_send ? s.send_bytes : s.recv_bytes, r.bytes);
    if (r.is_send) {
      clamp_add(s.send_wire_busy_ns, r.send_wire_busy_ns);
      clamp_add(s.send_wire_steps, r.wire_steps);
      clamp_add(s.send_wire_queued_steps, r.wire_queued_steps);
      if (r.send_wait_min_ns) {
        clamp_add(s.send_wait_min_sum_ns, r.send_wait_min_ns);
        clamp_add(s.send_wait_min_ops, 1);
        if (r.send_wait_min_ns > s.send_wait_min_max_ns) s.send_wait_min_max_ns = r.send_wait_min_ns;
      }
      if (r.steps) {
        const uint64_t per_step = r.phase_ns[2] / r.steps;  // SendWait
        if (s.send_op_wait_min_ops == 0 || per_step < s.send_op_wait_min_ns) s.send_op_wait_min_ns = per_step;
        clamp_add(s.send_op_wait_min_ops, 1);
      }
    } else {
      if (r.has_recv_gpu_wait_min) {
        if (s.recv_gpu_wait_min_ops == 0 || r.recv_gpu_wait_min_ns < s.recv_gpu_wait_min_ns)
          s.recv_gpu_wait_min_ns = r.recv_gpu_wait_min_ns;
        clamp_add(s.recv_gpu_wait_min_ops, 1);
      }
      if (r.steps) {  // the worst receive op: longest RecvGpuWait per step, then sum, then steps
        const uint64_t steps = r.steps, per_step = r.phase_ns[5] / steps;
        if (std::make_tuple(per_step, r.phase_ns[5], steps) >
            std::make_tuple(s.recv_worst_op_step_ns, s.recv_worst_op_gpu_wait_ns, s.recv_worst_op_steps)) {
          s.recv_worst_op_step_ns = per_step;
          s.recv_worst_op_gpu_wait_ns = r.phase_ns[5];
          s.recv_worst_op_steps = steps;
        }
      }
    }
  }
  std::vector<EdgeSummary> out;
  out.reserve(sums.size());
  for (auto& [k, s] : sums) out.push_back(s);
  return out;
}

// Bit-for-bit equality of two summary lists (padding included: it must be zero in both).
inline bool same_bits(const std::vector<EdgeSummary>& a, const std::vector<EdgeSummary>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(EdgeSummary)) == 0);
}

}  // namespace culprit::testdata
