// Discrete-event simulation of NCCL's network pipelines (DESIGN.md, "The simulator").
// Faults are injected as causes; the proxy phases follow from the simulated times exactly as
// NCCL records them. The same timeline renders every input format. docs/simulator.md
// describes the model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace culprit::mock {

struct Fault {
  std::string kind;      // slow_gpu | slow_consumer | slow_link | slow_flush | hang | none
  int rank = -1;         // global (world) rank of the faulty GPU; for slow_link the sender
  int peer = -1;         // slow_link: receiving rank (-1: the sender's network successor)
  double magnitude = 0;  // kind-specific strength; 0 = the kind's default
  int seq = -1;          // hang: the collective the rank never starts (-1: the middle one)
};

struct Scenario {
  std::string topology = "ring";
  int nodes = 4;
  int gpus = 8;
  int channels = 2;
  int seqs = 20;
  uint64_t seed = 1;
  double jitter = 0.05;          // relative noise on compute and transfer times
  uint64_t bytes = 64ull << 20;  // bytes per collective per rank
  std::string layout = "2.27";   // trace layout: 2.27 (Group > AllReduce) | flat (no Group)
  std::vector<Fault> faults;     // empty = healthy

  // "topology=ring,nodes=4,gpus=8,channels=2,seqs=20,fault=slow_gpu:13". Throws
  // std::invalid_argument naming the offending key or value.
  static Scenario parse(const std::string& spec);
  std::string to_spec() const;
  static std::string help();     // the keys and fault kinds, for `mock --help`
};

// One process (GPU) of the simulated cluster.
struct SimProcess {
  std::string host;
  int64_t pid = 0;
  int global_rank = 0;
  int node = 0;
  int local = 0;
};

struct TruthRoot {
  std::string culprit_class;  // gpu_producer | gpu_consumer | network_link | flush | hang
  int rank = -1;              // global rank of the root (the sender for network_link)
  int peer = -1;              // other end for network_link, else -1
};

struct GroundTruth {
  std::string spec;
  std::vector<TruthRoot> roots;  // empty for a healthy run
  uint64_t comm_hash = 0;        // the world communicator's hash
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
// process `rank` records it. Only network hops have proxy ops.
struct SimProxyOp {
  int seq = 0;
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
};

// One collective on one GPU.
struct SimCollective {
  int seq = 0;
  int rank = 0;
  double enqueue_ns = 0;            // host calls ncclAllReduce (COLL begins)
  double kernel_start_ns = 0;       // GPU kernel starts (all channels), +inf if never
  std::vector<double> channel_end_ns;  // per channel: the kernel's last op on that channel
  double end_ns = 0;                // COLL completes on the host (+inf if never)
};

class Simulation {
 public:
  explicit Simulation(const Scenario& scenario);
  ~Simulation();
  Simulation(Simulation&&) noexcept;
  Simulation& operator=(Simulation&&) noexcept;

  const Scenario& scenario() const;
  const std::vector<SimProcess>& processes() const;
  std::vector<std::string> hosts() const;   // node order
  const GroundTruth& truth() const;

  // The communicator (the world): its hash, size, and the ring of each channel.
  uint64_t comm_hash() const;
  int n_ranks() const;
  int ring_next(int channel, int rank) const;
  int ring_prev(int channel, int rank) const;
  bool is_network_hop(int src, int dst) const;  // different nodes

  // The simulated timeline (every collective of every rank; every network proxy op).
  const std::vector<SimCollective>& collectives() const;
  const std::vector<SimProxyOp>& proxy_ops() const;

  // NCCL 2.27+ example-profiler trace files of one host: <prefix>_<commHash>_<rank>.json.
  std::vector<RenderedFile> render_host_nccl_json(int node) const;

  // Writes <dir>/<host>/<files> for every host plus <dir>/ground_truth.json.
  void write(const std::string& dir) const;

 private:
  struct Impl;
  Impl* impl_;
};

std::string ground_truth_json(const GroundTruth& truth, const std::vector<SimProcess>& procs);

}  // namespace culprit::mock
