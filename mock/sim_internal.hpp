// Internal state of the simulator, shared by simulator.cpp, render_nccl.cpp (the ring engine)
// and flow.cpp, render_flow.cpp (the general engine: trees, pipelines, several communicators).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "mock/node_store.hpp"
#include "mock/records.hpp"
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

// Standard normal from a hash (Box-Muller on two derived uniforms), clamped to +-4: noise
// that does not depend on the order in which the general engine evaluates events.
inline double hash_normal(uint64_t h) {
  double u1 = (double(splitmix64(h) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
  double u2 = double(splitmix64(h ^ 0x5bd1e9955bd1e995ull) >> 11) * (1.0 / 9007199254740992.0);
  double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  return z > 4 ? 4 : (z < -4 ? -4 : z);
}
// exp(sigma * z): log-normal factor from a hash.
inline double hash_factor(uint64_t h, double sigma) { return sigma > 0 ? std::exp(sigma * hash_normal(h)) : 1.0; }

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
  // Draws a factor nobody uses: the stream stays where factor() would leave it, without the
  // exp (a third of a ring primitive's cost).
  void skip() { normal(); }

 private:
  std::mt19937_64 rng_;
  double sigma_;
  bool have_ = false;
  double spare_ = 0;
};

// The last finite time anything happened (the times of collectives and proxy ops, seen in
// any order). A hung job's traces are dumped a while after it.
struct LastActivity {
  double last = 0;
  void see(double t) {
    if (std::isfinite(t)) last = std::max(last, t);
  }
  void see(const SimCollective& col) {
    see(col.enqueue_ns);
    see(col.kernel_start_ns);
    see(col.end_ns);
    for (double t : col.channel_end_ns) see(t);
  }
  void see(const SimProxyOp& op, const StepSummary& steps) {
    see(op.progress_ns);
    see(op.end_ns);
    see(steps.last);
  }
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
  uint64_t max_chunk = 512 * 1024;  // data per collective step: SIMPLE, 4 MiB buffer / NCCL_STEPS
  // The collectives' protocol (Scenario::proto, set in cluster.cpp): bytes on the wire per
  // byte of data (LL and LL128 lines carry their flags) and whether a GPU Direct receive is
  // flushed (SIMPLE only). Point-to-point operations always run SIMPLE.
  double coll_wire_ratio = 1.0;
  bool coll_flush = true;
  uint64_t p2p_chunk = 128 * 1024;  // NCCL_P2P_NET_CHUNKSIZE default
  int p2p_channel_base = 16;        // p2p channels: 16 + (delta * nChannels + part) % 16
  double gap_inner = 200e3;         // compute between two collectives of one iteration
  double pp_forward = 500e3;        // pipeline: forward compute of one microbatch on one stage
  double pp_backward = 1000e3;      // pipeline: backward compute of one microbatch
};

// ---- the general engine (flow.cpp) --------------------------------------------------------
// Every process runs a stream of operations (collectives, sends, receives) in order; each
// operation runs one or more lanes (thread groups) per channel, each an ordered list of
// primitives that receive steps from connections and send steps to connections. A value is
// computed as soon as everything it depends on is known; nothing depends on evaluation order
// (the noise is a hash of what it applies to), so the result is unique and deterministic.
//
// The job streams (docs/simulator.md, "Memory"): it is built and simulated one phase at a time
// (flow_phases.cpp), a phase being a part of an iteration that depends only on earlier phases
// (topology.hpp). Once nothing more of a phase can be computed, its records are final and
// handed over, and only what the next one needs is carried (per rank its last kernel end and
// enqueue, per connection end its last proxy op's end). Entities are stored per phase (local
// ids); each keeps the index the whole-run build gave it (`index`), which keys its noise.

inline constexpr int kConnWindow = 16;  // steps of a connection whose times are kept (> NCCL_STEPS)
inline constexpr int kLaneConns = 4;    // connections a lane reads or writes at most

struct FlowIO {
  int conn = 0;
  int step = 0;
};

// The times of one kind of event of a connection, step by step. Each is computed in step
// order, so the known ones are a prefix; a step reads times at most NCCL_STEPS back, so only
// the latest kConnWindow are kept (a ring connection of 16k GPUs has 32766 steps).
class StepWindow {
 public:
  bool has(int k) const { return k < known_; }
  double operator[](int k) const {
    if (k >= known_ || k < known_ - kConnWindow) out_of_window(k);
    return t_[size_t(k & (kConnWindow - 1))];
  }
  void push(int k, double t) {
    if (k != known_) out_of_window(k);
    t_[size_t(k & (kConnWindow - 1))] = t;
    ++known_;
  }

 private:
  [[noreturn]] void out_of_window(int k) const;  // a simulator bug (flow.cpp)
  std::array<double, kConnWindow> t_{};
  int known_ = 0;
};
static_assert((kConnWindow & (kConnWindow - 1)) == 0 && kConnWindow > kNcclSteps, "a power of two past the credits");

// What a lane runs. Its primitives are generated as it runs them (flow_builder.cpp): a ring
// lane of 16k GPUs has 32767 of them.
struct FlowLaneProgram {
  enum Kind : uint8_t {
    kRing,      // per loop a send on out[0], K-1 recv-reduce-sends from in[0] to out[0], a final recv
    kLockstep,  // primitive k receives step k from every in[], then sends step k on every out[]
  };
  Kind kind = kLockstep;
  uint8_t n_in = 0, n_out = 0;
  int in[kLaneConns] = {}, out[kLaneConns] = {};
  int K = 0, loops = 0;  // kRing: messages per loop, loops
  int steps = 0;         // kLockstep: primitives
  static FlowLaneProgram ring(int in, int out, int K, int loops);
  static FlowLaneProgram lockstep(const std::vector<int>& in, const std::vector<int>& out, int steps);
  uint32_t size() const;
  // Primitive j: its inputs, then its outputs, into io (2 * kLaneConns entries).
  void prim(uint32_t j, FlowIO* io, int& n_in, int& n_out) const;
};

struct FlowLane {
  int task = 0;
  int ch = 0;                // index into the task's channel list
  int64_t index = 0;         // whole-run index (noise key)
  uint64_t prim_base = 0;    // whole-run index of its first primitive (noise key)
  FlowLaneProgram prog;
  uint32_t n_prims = 0, next = 0;
  double gpu_free = 0;
  double freed_prev = -kInf;
  bool queued = false;
};

struct FlowConn {
  int src = 0, dst = 0;            // global ranks
  int src_task = 0, dst_task = 0;  // operations at both ends
  int src_lane = -1, dst_lane = -1;
  int channel = 0;
  int64_t index = 0;               // whole-run index (noise key)
  bool net = false;
  bool queued = false;
  const char* role = "";           // ring | tree_up | tree_down | p2p
  int n_steps = 0;
  uint64_t chunk = 0;       // data per step
  uint64_t wire_chunk = 0;  // bytes per step on the wire, as NCCL records them: with the flags
  bool flushed = true;      // a received step is flushed (SIMPLE's GPU Direct receives)
  int send_op = -1, recv_op = -1;  // proxy ops (network only)
  // Data produced by the sending GPU (network), arrived and flushed (F), send done (sd), slot
  // freed by the receiving GPU. NVLink: arrival is both F and sd.
  StepWindow prod, F, freed, sd;
  int next_tx = 0;
  double A_prev = -kInf, wire_free = -kInf, flush_prev = -kInf;
};

struct FlowTask {
  int rank = 0;
  int comm = 0;
  int kind = 0;  // 0 collective, 1 send, 2 recv
  int seq = 0;
  int iter = 0;
  int peer = -1;  // p2p: comm rank of the peer
  int64_t index = 0;  // whole-run index: collectives() order, noise key
  uint64_t bytes = 0;
  uint64_t chunk = 0;
  double compute = 0;  // GPU work before it (ns, healthy speed)
  std::vector<int> channels;
  std::vector<double> ch_start;
  int lane_begin = 0, lane_end = 0;
  std::vector<int> ops;  // proxy ops in the order the plugin prints them
  bool active = false, done = false;
  double kstart = kInf, enq = kInf, sched = kInf, kend = kInf;
  int lanes_left = 0;
};

struct FlowComm {
  SimComm info;
  std::string algorithm;  // RING | TREE | P2P
};

class FlowJob;  // flow_builder.hpp: the topology and its builder, alive while the job runs
struct FlowJobDeleter {
  void operator()(FlowJob* job) const;
};

struct Flow {
  // The whole run.
  std::vector<FlowComm> comms;
  std::vector<std::vector<int>> comm_rank_of;  // [comm][global rank] -> comm rank, -1 if not a member
  std::vector<SimLink> links;                  // every connection of the topology, in build order
  std::unique_ptr<FlowJob, FlowJobDeleter> job;
  // Per rank, carried from one phase to the next: whether its last operation finished, and
  // when; its last enqueue.
  std::vector<char> prev_done;
  std::vector<double> kend_prev, enq_prev;
  LastActivity last;
  bool complete = true;
  // The phase being simulated (local ids).
  std::vector<FlowTask> tasks;
  std::vector<std::vector<int>> stream;  // per rank: its tasks in order
  std::vector<int> stream_next;          // per rank: next task to activate
  std::vector<FlowLane> lanes;
  std::vector<FlowConn> conns;
  std::vector<SimProxyOp> ops;      // its proxy ops, handed over as they end (op_recorded)
  std::vector<char> op_recorded;
  // The steps of the proxy ops under way: a pool of logs (a log is taken at an op's first step
  // and handed over with it), so it holds the ops in flight, not every op of the phase.
  std::vector<StepLog> logs;
  std::vector<int> op_log;          // per op: its log, -1: none
  std::vector<int> free_logs;
  std::vector<int64_t> op_index;    // whole-run index: proxy_ops() order, noise key
  std::vector<int> op_task, op_conn, op_prev, op_next;  // local ids; op_prev -1: none in this phase
  std::vector<double> op_prev_end;  // op_prev -1: the end of the previous op of an earlier phase
                                    // (NaN: it never ended; -inf: there is none)
  std::vector<char> op_progress_known;
  std::vector<uint64_t> queue;

  void clear_phase();  // drops the phase's entities (flow_phases.cpp)
};

std::string host_name(int node);  // node%03d

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
  uint64_t wire_chunk = 0;  // chunk as sent: with the protocol's flags (Params::coll_wire_ratio)

  // Faults, per rank (gpu_factor includes the static speed spread of `hetero`).
  std::vector<double> gpu_factor, consumer_delay, flush_factor;
  std::vector<double> consumer_mag;  // general engine: slow_consumer magnitude (x one message's wire time)
  std::vector<int> hang_seq;  // INT_MAX: never
  std::vector<std::tuple<int, int, double>> slow_links;  // src, dst, bandwidth divisor

  // Clocks.
  std::vector<double> origin_ns;     // per rank: plugin start before simulation time 0
  std::vector<uint64_t> node_clock;  // per node: GPU global timer at simulation time 0

  // Results.
  int seqs_run = 0;            // ring engine: collectives simulated (hang: up to and including the hung one)
  double kill_ns = kInf;       // hang: when the traces were dumped
  int hung_seq = -1;           // ring engine, hang: the collective that never completed
  double job_end_ns = 0;       // the last completion of any operation (+inf: never)
  // What is kept (Retention): the whole timeline, the records of some nodes.
  Retention keep;
  std::vector<SimCollective> colls;  // keep.timeline: every operation
  std::vector<SimProxyOp> ops;       // keep.timeline: every proxy op with all its steps
  std::unique_ptr<NodeStore> kept;   // the records of the nodes keep.nodes says

  // The engines hand over every operation and proxy op once it is final, in collectives()
  // and proxy_ops() order.
  void record_operation(OperationRecord&& rec);
  void record_proxy_op(SimProxyOp&& op, int index, StepLog&& steps);
  bool keeps_node(int node) const { return !keep.nodes || keep.nodes(node); }

  bool net_hop(int a, int b) const { return procs[a].node != procs[b].node; }
  // Bytes a collective's step of `data` bytes puts on the wire under the scenario's protocol.
  uint64_t coll_wire_bytes(uint64_t data) const {
    return uint64_t(std::llround(double(data) * p.coll_wire_ratio));
  }
  // Bandwidth divisor of the network connection s->d: slow links and the static spread.
  double link_factor(int s, int d) const {
    double f = 1;
    for (const auto& [a, b, m] : slow_links)
      if (a == s && b == d) f *= m;
    if (sc.hetero > 0) f /= hash_factor(mix(sc.seed, uint64_t(s), uint64_t(d), 0x6c696e6bull), sc.hetero);
    return f;
  }

  // The general engine (tree, pipeline, several communicators; ring on request).
  bool general = false;
  Flow flow;
  std::vector<SimComm> comm_list;  // every communicator (both engines)

  // cluster.cpp
  void build(const Scenario& scenario);
  void build_processes();
  void set_protocol();
  void build_rings();
  void apply_faults();
  TruthRoot apply_fault(const Fault& f);
  void check_fault_rank(const Fault& f, int r, const char* what) const;
  int ring_slow_link_peer(const Fault& f) const;
  void build_clocks();
  void simulate();
  void simulate_ring();  // ring_engine.cpp
  std::string render_rank_nccl_json(const NodeTimeline& t, int rank) const;  // render_nccl.cpp

  // flow_phases.cpp: the general engine's run, one phase at a time
  void build_flow();  // the topology's communicators and connections (topology.hpp)
  void resolve_flow_slow_links();
  void simulate_flow();
  void flow_finish_phase();
  OperationRecord flow_operation(int task) const;
  // flow.cpp: the work list of one phase
  void flow_run();
  void flow_activate(int rank);
  void flow_run_lane(int lane);
  void flow_transmit(int conn);
  double flow_op_progress(int op);  // NaN while unknown
  StepLog& flow_op_log(int op);
  void flow_op_ended(int op, double t);
  void flow_record_op(int op);
  void flow_push_lane(int lane);
  void flow_push_conn(int conn);
  void flow_push_rank(int rank);
  // render_flow.cpp: the files of one process, one per communicator, in finalisation order
  std::vector<RenderedFile> render_rank_flow(const NodeTimeline& t, int rank) const;
  // The records of one node's processes (simulator.cpp).
  NodeTimeline node_timeline(int node) const;
};

}  // namespace culprit::mock
