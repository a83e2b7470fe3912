// Discrete-event simulation of NCCL's network pipelines (DESIGN.md, "The simulator").
// Faults are injected as causes; the proxy phases follow from the simulated times exactly as
// NCCL records them. The same timeline renders every input format. docs/simulator.md
// describes the model: ring AllReduce (the original engine), double binary tree AllReduce,
// pipeline-parallel send/recv and several communicators per process (the general engine).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace culprit::mock {

struct NodeTimeline;  // mock/records.hpp

struct Fault {
  std::string kind;      // slow_gpu | slow_consumer | slow_link | slow_flush | hang | none
  int rank = -1;         // global (world) rank of the faulty GPU; for slow_link the sender
  int peer = -1;         // slow_link: receiving rank (-1: the sender's network successor)
  double magnitude = 0;  // kind-specific strength; 0 = the kind's default
  int seq = -1;          // hang: the collective the rank never starts (-1: the middle one)
};

struct Scenario {
  std::string topology = "ring";  // ring | tree | pipeline
  int nodes = 4;
  int gpus = 8;
  int channels = 2;
  int seqs = 20;
  uint64_t seed = 1;
  double jitter = 0.05;          // relative noise on compute and transfer times
  uint64_t bytes = 64ull << 20;  // bytes per collective per rank
  std::string layout = "2.27";   // trace layout: 2.27 (Group > AllReduce) | flat (no Group)
  std::vector<Fault> faults;     // empty = healthy
  // Communicators: "" = the topology's default (world for ring and tree, pp for pipeline);
  // "world+dp" (ring, tree): a data-parallel communicator per local GPU index across nodes
  // besides the world, one DP AllReduce and one world AllReduce per iteration;
  // "pp+world" (pipeline): a world AllReduce closes every iteration.
  std::string comms;
  double hetero = 0;             // sigma of the static per-GPU compute speed and per-link
                                 // bandwidth spread (0: identical hardware)
  // Scale of the GPUs' own work between operations (the compute/communication ratio): 1 is
  // ~2 ms before each collective, 0.5 and 1 ms per pipeline microbatch (Params in
  // sim_internal.hpp); reductions and copies inside a collective keep their speed.
  double compute = 1;
  // When each host enqueues an operation: "sync" 20-200 us before its kernel starts (a host
  // that waits for its GPU); "ahead" 5 us after its previous enqueue (a host that never waits,
  // as PyTorch's runs ahead of its stream): the proxy then starts each op as soon as the op
  // before it on the connection ended, so the waits it records span the GPU's own work too.
  std::string host = "sync";
  // NCCL protocol of the collectives (point-to-point always runs SIMPLE): "simple" steps of
  // up to 512 KiB, flushed after a GPU Direct receive; "ll" 64 KiB steps of 16-byte lines that
  // carry 8 bytes of data each; "ll128" 600 KiB steps of 128-byte lines that carry 120. The
  // flags travel with the data, so LL and LL128 steps are never flushed.
  std::string proto = "simple";
  int stages = 0;                // pipeline: stages (0 = one per node); must divide the GPUs
  int microbatches = 4;          // pipeline: microbatches per iteration
  bool backward = true;          // pipeline: gradients flow back after the forward pass
  std::string engine = "auto";   // auto | flow (run a plain ring through the general engine)

  // "topology=ring,nodes=4,gpus=8,channels=2,seqs=20,fault=slow_gpu:13". Throws
  // std::invalid_argument naming the offending key or value.
  static Scenario parse(const std::string& spec);
  std::string to_spec() const;
  static std::string help();     // the keys and fault kinds, for `mock --help`
};

// The protocol's name as NCCL's profiler prints it in the trace ("SIMPLE", "LL", "LL128").
inline const char* protocol_name(const std::string& proto) {
  return proto == "ll" ? "LL" : proto == "ll128" ? "LL128" : "SIMPLE";
}

// One process (GPU) of the simulated cluster.
struct SimProcess {
  std::string host;
  int64_t pid = 0;
  int global_rank = 0;
  int node = 0;
  int local = 0;
};

// One communicator of the simulated job.
struct SimComm {
  uint64_t hash = 0;
  std::string name;        // world | dp<local> | pp<position>
  std::string algorithm;   // RING | TREE (collectives), P2P (pipeline send/recv)
  std::vector<int> ranks;  // global rank of each communicator rank
};

// A connection of the static topology (every channel's ring, tree or p2p hop).
struct SimLink {
  uint64_t comm_hash = 0;
  int channel = 0;
  int src = 0, dst = 0;   // global ranks
  bool network = false;   // different nodes: proxy events on both ends
  std::string role;       // ring | tree_up (reduce, child -> parent) | tree_down | p2p
};

struct TruthRoot {
  std::string culprit_class;  // gpu_producer | gpu_consumer | network_link | flush | hang
  int rank = -1;              // global rank of the root (the sender for network_link)
  int peer = -1;              // other end for network_link, else -1
  double slowdown_alone = 0;  // the job's slowdown with this fault alone (measure_effect())
};

struct GroundTruth {
  std::string spec;
  std::vector<TruthRoot> roots;  // empty for a healthy run
  uint64_t comm_hash = 0;        // the world communicator's hash (pipeline without world: pp0's)
  std::vector<SimComm> comms;    // every communicator (empty only for default-constructed truth)
  // The faults' effect (DESIGN.md: judge sensitivity by effect, not by the fault's knob):
  // the job's time with every fault and in the same run without any (same noise), filled by
  // Simulation::measure_effect(); 0 when not measured or when the job never ends (hang).
  double job_ns = 0;
  double healthy_job_ns = 0;
  double slowdown = 0;           // job_ns / healthy_job_ns - 1
};

struct RenderedFile {
  std::string name;     // file name inside its host directory
  std::string content;
};

// The simulated timeline of one network step, in nanoseconds of the simulation clock (one
// clock for the whole cluster). A time that was never reached (hang) is +infinity.
//   send: t0 slot posted (SendGpuWait begins), t1 data ready (SendPeerWait begins),
//         t2 isend accepted (SendWait begins), t3 send done
//   recv: t0 irecv posted (RecvWait begins), t1 data arrived (RecvFlushWait begins),
//         t2 flush done (RecvGpuWait begins), t3 slot freed by the GPU
struct SimStep {
  int step = 0;
  double t0 = 0, t1 = 0, t2 = 0, t3 = 0;
};

// One ProxyOp: one network connection's share of one collective on one channel, as the
// process `rank` records it. Only network hops have proxy ops. (node_store.cpp encodes every
// field but the steps: keep it in step.)
struct SimProxyOp {
  int seq = 0;             // SeqNum of the collective; p2p: ordinal of the Send/Recv
  int channel = 0;
  int rank = 0;            // recording process (global rank = comm rank)
  int peer = 0;            // the remote end
  bool is_send = false;
  int n_steps = 0;
  uint64_t chunk_bytes = 0;
  double sched_ns = 0;     // ScheduleSend/Recv begins
  double progress_ns = 0;  // ProgressSend/Recv begins
  double end_ns = 0;       // ProgressSend/Recv ends (last step done), +inf if never
  std::vector<SimStep> steps;  // all n_steps steps in step order
  // Communicator view (the trace prints comm ranks; rank/peer above are global ranks).
  uint64_t comm_hash = 0;
  int comm_rank = -1;
  int comm_peer = -1;
  bool is_p2p = false;
  int task = -1;           // index into collectives() of the operation it belongs to
};

// One collective on one GPU. (node_store.cpp encodes every field: keep it in step.)
struct SimCollective {
  int seq = 0;
  int rank = 0;
  double enqueue_ns = 0;            // host calls ncclAllReduce (COLL begins)
  double kernel_start_ns = 0;       // GPU kernel starts (all channels), +inf if never
  std::vector<double> channel_end_ns;  // per channel: the kernel's last op on that channel
  double end_ns = 0;                // COLL completes on the host (+inf if never)
  // General engine: which operation (ring engine: world AllReduce, RING, channels 0..C-1).
  uint64_t comm_hash = 0;
  int comm_rank = -1;
  std::string name = "AllReduce";   // AllReduce | Send | Recv
  std::string algorithm = "RING";   // RING | TREE | P2P
  int peer = -1;                    // Send/Recv: comm rank of the peer
  int iter = -1;                    // training iteration it belongs to
  std::vector<int> channels;        // channel ids, parallel to channel_end_ns
};

// What a Simulation keeps of its timeline. The whole timeline (every step of every proxy op)
// grows with the square of the ranks in a ring: 16k GPUs would need terabytes. A site-sized
// scenario keeps only the records of the nodes it renders (docs/simulator.md, "Memory").
struct Retention {
  bool timeline = true;                  // collectives() and proxy_ops(), with every step
  std::function<bool(int node)> nodes;   // whose records are kept for rendering; empty: all
  // Bytes of node records held in memory; past it they go to a temporary file.
  size_t memory_budget = size_t(32) << 20;
  // The kept node records hold every step of their proxy ops, not only the latest
  // StepSummary::kKept: what one row per IB work request (nccl.net_qp) needs.
  bool every_step = false;
  static Retention nodes_only(std::function<bool(int node)> which = {}) {
    Retention keep;
    keep.timeline = false;
    keep.nodes = std::move(which);
    return keep;
  }
  static Retention nothing() { return nodes_only([](int) { return false; }); }
};

class Simulation {
 public:
  explicit Simulation(const Scenario& scenario, Retention keep = {});
  ~Simulation();
  Simulation(Simulation&&) noexcept;
  Simulation& operator=(Simulation&&) noexcept;

  const Scenario& scenario() const;
  const std::vector<SimProcess>& processes() const;
  std::vector<std::string> hosts() const;   // node order
  const GroundTruth& truth() const;
  // Simulates the counterfactuals (no fault; each fault alone) and fills the effect fields
  // of truth(). Costs one simulation per fault plus one.
  void measure_effect();
  // When the job ends: the last completion of any operation (+inf: never, a hang).
  double job_end_ns() const;

  // The communicator (the world): its hash, size, and the ring of each channel (the world
  // ring of the ring topology; ring_next/prev throw std::out_of_range for other topologies).
  uint64_t comm_hash() const;
  int n_ranks() const;  // processes (= world ranks)
  int ring_next(int channel, int rank) const;
  int ring_prev(int channel, int rank) const;
  bool is_network_hop(int src, int dst) const;  // different nodes

  // Every communicator, and every connection of the static topology.
  const std::vector<SimComm>& communicators() const;
  std::vector<SimLink> links() const;

  // The simulated timeline (every collective of every rank; every network proxy op). Only
  // with Retention::timeline (throw std::logic_error otherwise).
  const std::vector<SimCollective>& collectives() const;
  const std::vector<SimProxyOp>& proxy_ops() const;
  // When the traces were dumped (a hang: a while after the last progress anywhere; +inf
  // when the job ran to its end). Operations alive then never finished.
  double dump_time_ns() const;

  // What the processes of one node did, as the renderers read it (mock/records.hpp); only
  // for the nodes Retention::nodes keeps (std::logic_error otherwise).
  NodeTimeline node_timeline(int node) const;

  // NCCL 2.27+ example-profiler trace files of one host: <prefix>_<commHash>_<rank>.json,
  // one per process and communicator.
  std::vector<RenderedFile> render_host_nccl_json(int node) const;
  std::vector<RenderedFile> render_host_nccl_json(const NodeTimeline& t) const;

  // Writes <dir>/<host>/<files> for every host plus <dir>/ground_truth.json: the NCCL
  // trace files, or the files `render` makes of each node (e.g. probing's exports).
  void write(const std::string& dir) const;
  void write(const std::string& dir, const std::function<std::vector<RenderedFile>(int node)>& render) const;

  // The simulator's state (mock/sim_internal.hpp), named here so that the engine's parts
  // (builders, engines, renderers) can refer to it; not an interface.
  struct Impl;

 private:
  Impl* impl_;
};

std::string ground_truth_json(const GroundTruth& truth, const std::vector<SimProcess>& procs);

}  // namespace culprit::mock
