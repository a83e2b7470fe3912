// The simulated cluster (docs/simulator.md, "Cluster and identity", "Rings", "Faults"): its
// processes, the ring engine's rings and collective shape, the faults as causes, the clocks;
// then the general engine's job where the scenario needs it.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <stdexcept>

#include "mock/sim_internal.hpp"

namespace culprit::mock {

std::string host_name(int node) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "node%03d", node);
  return buf;
}

void Simulation::Impl::build(const Scenario& scenario) {
  sc = scenario;
  if (sc.topology != "ring" && sc.topology != "tree" && sc.topology != "pipeline")
    throw std::invalid_argument("mock key 'topology': unsupported value '" + sc.topology +
                                "' (supported: ring, tree, pipeline)");
  // The ring engine (ring_engine.cpp) runs the plain ring (one world communicator);
  // everything else runs through the general engine (flow.cpp).
  general = !(sc.topology == "ring" && (sc.comms.empty() || sc.comms == "world") && sc.engine != "flow");
  if (sc.nodes < 1 || sc.gpus < 1 || sc.channels < 1 || sc.seqs < 1)
    throw std::invalid_argument("mock scenario: nodes, gpus, channels and seqs must be positive");
  n = sc.nodes * sc.gpus;
  if (n < 2) throw std::invalid_argument("mock keys 'nodes' x 'gpus': need at least 2 ranks");
  C = sc.channels;
  if (!(sc.compute > 0)) throw std::invalid_argument("mock key 'compute': must be positive");
  // The GPUs' own work between operations scales; reductions inside a collective do not.
  for (double* work : {&p.gap, &p.gap_inner, &p.pp_forward, &p.pp_backward}) *work *= sc.compute;
  // A host that runs ahead enqueues each operation right after the one before (its lead over
  // the kernel is unbounded; the enqueue is max(previous + 5 us, kernel start - lead)).
  if (sc.host == "ahead") p.host_lead_min = p.host_lead_max = 1e18;
  set_protocol();
  build_processes();
  // The world communicator's hash (seed 1 gives one above 2^63).
  comm_hash = splitmix64(sc.seed * 0x2545f4914f6cdd1dull + 0x636f6d70ull);  // chosen so that seed 1 is above 2^63
  if (!general) build_rings();
  apply_faults();
  build_clocks();
  if (general) {
    build_flow();  // communicators, operations, connections; resolves slow_link peers
  } else {
    SimComm world;
    world.hash = comm_hash;
    world.name = "world";
    world.algorithm = "RING";
    for (int r = 0; r < n; ++r) world.ranks.push_back(r);
    comm_list.push_back(world);
  }
  truth.comms = comm_list;
}

// Processes: pids distinct within a host; the same pids repeat on every host.
void Simulation::Impl::build_processes() {
  const uint64_t pid_off = 100 * (splitmix64(sc.seed ^ 0x706964ull) % 400);
  procs.reserve(size_t(n));
  for (int node = 0; node < sc.nodes; ++node)
    for (int local = 0; local < sc.gpus; ++local) {
      SimProcess pr;
      pr.host = host_name(node);
      pr.pid = int64_t(4000 + 37 * local + pid_off);
      pr.global_rank = node * sc.gpus + local;
      pr.node = node;
      pr.local = local;
      procs.push_back(pr);
    }
}

// The collectives' protocol, from NCCL's buffer sizes (init.cc, device.h): each of the
// NCCL_STEPS slots holds 512 KiB under SIMPLE; 512 x 8 lines of 16 bytes under LL, each line
// 8 bytes of data and two flags; 640 x 120 words of 8 bytes under LL128, 15 of each 16 data.
// The proxy flushes a GPU Direct receive under SIMPLE only (net.cc): LL and LL128 data is
// checked by its flags.
void Simulation::Impl::set_protocol() {
  if (sc.proto == "ll") {
    p.max_chunk = 512 * 8 * 16 / 2;
    p.coll_wire_ratio = 2.0;
    p.coll_flush = false;
  } else if (sc.proto == "ll128") {
    p.max_chunk = 640 * 120 * 8 / 16 * 15;
    p.coll_wire_ratio = 16.0 / 15.0;
    p.coll_flush = false;
  }
}

// Rings: nodes in order; inside a node, local order rotated by c*gpus/channels. (The general
// engine builds its own topology and fills next/prev for a ring world.) Collective shape: per
// channel, each rank's share bytes/(channels*n) is moved in `loops` loops of 2(n-1) messages
// of at most one SIMPLE step (512 KiB).
void Simulation::Impl::build_rings() {
  next.assign(C, std::vector<int>(n));
  prev.assign(C, std::vector<int>(n));
  for (int c = 0; c < C; ++c) {
    std::vector<int> order;
    order.reserve(n);
    const int rot = (c * sc.gpus / C) % sc.gpus;
    for (int node = 0; node < sc.nodes; ++node)
      for (int i = 0; i < sc.gpus; ++i) order.push_back(node * sc.gpus + (rot + i) % sc.gpus);
    for (int i = 0; i < n; ++i) {
      next[c][order[i]] = order[(i + 1) % n];
      prev[c][order[(i + 1) % n]] = order[i];
    }
  }
  K = 2 * (n - 1);
  uint64_t per = sc.bytes / (uint64_t(C) * uint64_t(n));
  if (per == 0) per = 1;
  loops = int((per + p.max_chunk - 1) / p.max_chunk);
  if (loops < 1) loops = 1;
  chunk = (per + loops - 1) / loops;
  wire_chunk = coll_wire_bytes(chunk);
  n_steps = K * loops;
}

void Simulation::Impl::check_fault_rank(const Fault& f, int r, const char* what) const {
  if (r < 0 || r >= n)
    throw std::invalid_argument("mock key 'fault': " + f.kind + " " + what + " " + std::to_string(r) +
                                " is not a rank of this cluster (0.." + std::to_string(n - 1) + ")");
}

// Faults as causes, per rank; the ground truth's roots in the order given. Heterogeneous
// hardware: a static speed factor per GPU (exactly 1 when hetero=0).
void Simulation::Impl::apply_faults() {
  gpu_factor.assign(n, 1.0);
  consumer_delay.assign(n, 0.0);
  flush_factor.assign(n, 1.0);
  hang_seq.assign(n, INT_MAX);
  consumer_mag.assign(n, 0.0);
  truth.spec = sc.to_spec();
  for (const Fault& f : sc.faults) {
    if (f.kind == "none") continue;
    check_fault_rank(f, f.rank, "rank");
    truth.roots.push_back(apply_fault(f));
  }
  truth.comm_hash = comm_hash;
  if (sc.hetero > 0)
    for (int r = 0; r < n; ++r) gpu_factor[r] *= hash_factor(mix(sc.seed, uint64_t(r), 0x6770757370ull), sc.hetero);
}

TruthRoot Simulation::Impl::apply_fault(const Fault& f) {
  TruthRoot root;
  root.rank = f.rank;
  const double msg_net_ns = double(wire_chunk) / p.net_bw;
  if (f.kind == "slow_gpu") {
    gpu_factor[f.rank] *= f.magnitude > 0 ? f.magnitude : 3.0;
    root.culprit_class = "gpu_producer";
  } else if (f.kind == "slow_consumer") {
    consumer_delay[f.rank] += (f.magnitude > 0 ? f.magnitude : 5.0) * msg_net_ns;
    consumer_mag[f.rank] += f.magnitude > 0 ? f.magnitude : 5.0;
    root.culprit_class = "gpu_consumer";
  } else if (f.kind == "slow_flush") {
    flush_factor[f.rank] *= f.magnitude > 0 ? f.magnitude : 100.0;
    root.culprit_class = "flush";
  } else if (f.kind == "slow_link") {
    // The general engine checks (and resolves a missing peer) once it knows its connections.
    if (general && f.peer >= 0) check_fault_rank(f, f.peer, "peer");
    const int d = general ? f.peer : ring_slow_link_peer(f);
    slow_links.emplace_back(f.rank, d, f.magnitude > 0 ? f.magnitude : 8.0);
    root.culprit_class = "network_link";
    root.peer = d;
  } else if (f.kind == "hang") {
    int s = f.seq >= 0 ? f.seq : sc.seqs / 2;
    if (s >= sc.seqs)
      throw std::invalid_argument("mock key 'fault': hang at collective " + std::to_string(s) +
                                  " but seqs=" + std::to_string(sc.seqs));
    hang_seq[f.rank] = std::min(hang_seq[f.rank], s);
    root.culprit_class = "hang";
  } else {
    throw std::invalid_argument("mock key 'fault': unknown kind '" + f.kind + "'");
  }
  return root;
}

// The receiving end of a ring engine's slow link: as named, or the sender's first network
// successor; it must be a network hop of some channel's ring.
int Simulation::Impl::ring_slow_link_peer(const Fault& f) const {
  int d = f.peer;
  if (d < 0) {
    for (int c = 0; c < C && d < 0; ++c)
      if (net_hop(f.rank, next[c][f.rank])) d = next[c][f.rank];
    if (d < 0)
      throw std::invalid_argument("mock key 'fault': slow_link rank " + std::to_string(f.rank) +
                                  " sends to no other node; name the link as slow_link:S-D");
  }
  check_fault_rank(f, d, "peer");
  if (!net_hop(f.rank, d))
    throw std::invalid_argument("mock key 'fault': slow_link " + std::to_string(f.rank) + "-" +
                                std::to_string(d) + " is not a network link (same node)");
  bool used = false;
  for (int c = 0; c < C; ++c) used |= next[c][f.rank] == d;
  if (!used)
    throw std::invalid_argument("mock key 'fault': slow_link " + std::to_string(f.rank) + "-" +
                                std::to_string(d) + " is not a ring connection of any channel");
  return d;
}

// Clocks: every process's plugin started 0.5..3 s before simulation time 0; every node's GPU
// global timer has its own offset.
void Simulation::Impl::build_clocks() {
  origin_ns.resize(n);
  for (int r = 0; r < n; ++r) origin_ns[r] = 5e8 + 2.5e9 * unit(mix(sc.seed, r, 0x6f726967ull));
  node_clock.resize(sc.nodes);
  for (int node = 0; node < sc.nodes; ++node)
    node_clock[node] = 1765223116927674080ull + (mix(sc.seed, node, 0x636c6bull) % 100000000000000ull);
}

}  // namespace culprit::mock
