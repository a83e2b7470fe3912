// Internal state of the simulator, shared by simulator.cpp and render_nccl.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "mock/simulator.hpp"

namespace culprit::mock {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr int kNcclSteps = 8;   // NCCL_STEPS: buffer slots per connection
inline constexpr int kStepSlots = 16;  // example plugin: MAX_STEPS step events per ProxyOp
inline constexpr int kCollPool = 16;   // example plugin: default collective/group pool size

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline uint64_t mix(uint64_t a, uint64_t b) { return splitmix64(a ^ splitmix64(b)); }
inline uint64_t mix(uint64_t a, uint64_t b, uint64_t c) { return mix(mix(a, b), c); }
inline uint64_t mix(uint64_t a, uint64_t b, uint64_t c, uint64_t d) { return mix(mix(a, b, c), d); }

// Uniform [0,1) from a hash: small deterministic host-side delays that need no stream.
inline double unit(uint64_t h) { return double(h >> 11) * (1.0 / 9007199254740992.0); }

// Deterministic log-normal noise (own Box-Muller: std::normal_distribution is not specified
// identically across standard libraries).
class Noise {
 public:
  Noise(uint64_t seed, double sigma) : rng_(seed), sigma_(sigma) {}
  double normal() {
    if (have_) {
      have_ = false;
      return spare_;
    }
    double u1 = (double(rng_() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    double u2 = double(rng_() >> 11) * (1.0 / 9007199254740992.0);
    double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(6.283185307179586 * u2);
    have_ = true;
    return r * std::cos(6.283185307179586 * u2);
  }
  // exp(sigma * z), z clamped to +-4 sigma
  double factor() {
    double z = normal();
    if (z > 4) z = 4;
    if (z < -4) z = -4;
    return std::exp(sigma_ * z);
  }
  double uniform() { return double(rng_() >> 11) * (1.0 / 9007199254740992.0); }

 private:
  std::mt19937_64 rng_;
  double sigma_;
  bool have_ = false;
  double spare_ = 0;
};

// Physical constants of the model (nanoseconds, bytes per nanosecond = GB/s).
struct Params {
  double nvl_lat = 2000;        // NVLink hop latency
  double nvl_bw = 150;          // NVLink bandwidth per channel
  double net_lat = 5000;        // network one-way latency
  double net_bw = 12.5;         // network bandwidth per channel connection
  double ctrl_lat = 5000;       // receiver's clear-to-send reaching the sender
  double ack_lat = 2000;        // send completion after arrival (RDMA ack)
  double flush = 1500;          // GPU-direct flush of one received step
  double compute_bw = 400;      // reduction throughput of one channel's thread block
  double compute_fixed = 1000;  // fixed cost of one primitive step
  double gap = 2.0e6;           // training compute between two collectives
  double start_skew = 1.0e6;    // processes start up to this far apart
  double host_lead_min = 20e3;  // host enqueues the collective this long before the kernel
  double host_lead_max = 200e3;
  double sched_min = 3e3;       // proxy picks up the op after enqueue
  double sched_max = 8e3;
  double poll = 2e3;            // host/proxy polling delay observing GPU events (up to)
  double hang_dump_after = 30e9;  // hang: traces dumped this long after the last progress
  uint64_t max_chunk = 512 * 1024;  // SIMPLE step size: 4 MiB buffer / NCCL_STEPS
};

struct Simulation::Impl {
  Scenario sc;
  Params p;
  std::vector<SimProcess> procs;
  GroundTruth truth;
  uint64_t comm_hash = 0;
  int n = 0;  // ranks
  int C = 0;  // channels
  std::vector<std::vector<int>> next, prev;  // [channel][rank]

  // Collective shape.
  int K = 0;        // messages per loop = 2(n-1)
  int loops = 1;
  int n_steps = 0;  // K * loops
  uint64_t chunk = 0;

  // Faults, per rank.
  std::vector<double> gpu_factor, consumer_delay, flush_factor;
  std::vector<int> hang_seq;  // INT_MAX: never
  std::vector<std::tuple<int, int, double>> slow_links;  // src, dst, bandwidth divisor

  // Clocks.
  std::vector<double> origin_ns;     // per rank: plugin start before simulation time 0
  std::vector<uint64_t> node_clock;  // per node: GPU global timer at simulation time 0

  // Results.
  int seqs_run = 0;            // collectives simulated (hang: up to and including the hung one)
  double kill_ns = kInf;       // hang: when the traces were dumped
  int hung_seq = -1;           // hang: the collective that never completed
  std::vector<SimCollective> colls;
  std::vector<int> coll_idx;   // [seq*n + rank] -> index in colls, -1 if the rank never enqueued
  std::vector<SimProxyOp> ops;
  std::vector<int> op_idx;     // [(seq*n + rank)*C*2 + channel*2 + is_send] -> index, -1 none

  int coll_at(int seq, int rank) const {
    if (seq < 0 || seq >= seqs_run) return -1;
    return coll_idx[size_t(seq) * n + rank];
  }
  int op_at(int seq, int rank, int channel, int is_send) const {
    if (seq < 0 || seq >= seqs_run) return -1;
    return op_idx[(size_t(seq) * n + rank) * C * 2 + channel * 2 + is_send];
  }
  bool net_hop(int a, int b) const { return procs[a].node != procs[b].node; }
  double link_factor(int s, int d) const {
    double f = 1;
    for (const auto& [a, b, m] : slow_links)
      if (a == s && b == d) f *= m;
    return f;
  }

  void build(const Scenario& scenario);
  void simulate();
  void simulate_channel(int seq, int c, const std::vector<double>& kstart,
                        const std::vector<double>& sched, std::vector<double>& channel_end);
  std::string render_rank_nccl_json(int rank) const;  // render_nccl.cpp
};

}  // namespace culprit::mock
