// The discrete-event model of NCCL's ring AllReduce pipelines (docs/simulator.md).
//
// Per channel, every rank's GPU runs the ring primitives in program order: per loop one
// send, 2(n-1)-1 recv-reduce-send steps, one final recv. A network connection has 8 slots
// (NCCL_STEPS) on each side; the proxy posts send slots as earlier sends complete and
// receive buffers as the receiving GPU frees them; an isend goes out when the data is ready
// and the receiver's clear-to-send has arrived; the wire is serial per connection. NVLink
// hops use the same credits without a proxy. Faults change causes only (compute speed, slot
// release, bandwidth, flush time, a kernel that never starts); every wait follows from the
// timeline.
#include <algorithm>
#include <cmath>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <tuple>

#include "mock/sim_internal.hpp"

namespace culprit::mock {

namespace {

std::string host_name(int node) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "node%03d", node);
  return buf;
}

}  // namespace

void Simulation::Impl::build(const Scenario& scenario) {
  sc = scenario;
  if (sc.topology != "ring" && sc.topology != "tree" && sc.topology != "pipeline")
    throw std::invalid_argument("mock key 'topology': unsupported value '" + sc.topology +
                                "' (supported: ring, tree, pipeline)");
  // The ring engine below runs the plain ring (one world communicator); everything else runs
  // through the general engine (flow.cpp).
  general = !(sc.topology == "ring" && (sc.comms.empty() || sc.comms == "world") && sc.engine != "flow");
  if (sc.nodes < 1 || sc.gpus < 1 || sc.channels < 1 || sc.seqs < 1)
    throw std::invalid_argument("mock scenario: nodes, gpus, channels and seqs must be positive");
  n = sc.nodes * sc.gpus;
  if (n < 2) throw std::invalid_argument("mock keys 'nodes' x 'gpus': need at least 2 ranks");
  C = sc.channels;

  // Processes: pids distinct within a host; the same pids repeat on every host.
  const uint64_t pid_off = 100 * (splitmix64(sc.seed ^ 0x706964ull) % 400);
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

  // The world communicator's hash (seed 1 gives one above 2^63).
  comm_hash = splitmix64(sc.seed * 0x2545f4914f6cdd1dull + 0x636f6d70ull);  // chosen so that seed 1 is above 2^63

  // Rings: nodes in order; inside a node, local order rotated by c*gpus/channels. (The
  // general engine builds its own topology and fills next/prev for a ring world.)
  if (!general) {
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

    // Collective shape: per channel, each rank's share bytes/(channels*n) is moved in
    // `loops` loops of 2(n-1) messages of at most one SIMPLE step (512 KiB).
    K = 2 * (n - 1);
    uint64_t per = sc.bytes / (uint64_t(C) * uint64_t(n));
    if (per == 0) per = 1;
    loops = int((per + p.max_chunk - 1) / p.max_chunk);
    if (loops < 1) loops = 1;
    chunk = (per + loops - 1) / loops;
    n_steps = K * loops;
  }

  // Faults.
  gpu_factor.assign(n, 1.0);
  consumer_delay.assign(n, 0.0);
  flush_factor.assign(n, 1.0);
  hang_seq.assign(n, INT_MAX);
  consumer_mag.assign(n, 0.0);
  const double msg_net_ns = double(chunk) / p.net_bw;
  truth.spec = sc.to_spec();
  auto check_rank = [&](const Fault& f, int r, const char* what) {
    if (r < 0 || r >= n)
      throw std::invalid_argument("mock key 'fault': " + f.kind + " " + what + " " + std::to_string(r) +
                                  " is not a rank of this cluster (0.." + std::to_string(n - 1) + ")");
  };
  for (const Fault& f : sc.faults) {
    if (f.kind == "none") continue;
    check_rank(f, f.rank, "rank");
    TruthRoot root;
    root.rank = f.rank;
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
    } else if (f.kind == "slow_link" && general) {
      // Checked (and a missing peer resolved) once the general engine knows its connections.
      if (f.peer >= 0) check_rank(f, f.peer, "peer");
      slow_links.emplace_back(f.rank, f.peer, f.magnitude > 0 ? f.magnitude : 8.0);
      root.culprit_class = "network_link";
      root.peer = f.peer;
    } else if (f.kind == "slow_link") {
      int d = f.peer;
      if (d < 0) {
        for (int c = 0; c < C && d < 0; ++c)
          if (net_hop(f.rank, next[c][f.rank])) d = next[c][f.rank];
        if (d < 0)
          throw std::invalid_argument("mock key 'fault': slow_link rank " + std::to_string(f.rank) +
                                      " sends to no other node; name the link as slow_link:S-D");
      }
      check_rank(f, d, "peer");
      if (!net_hop(f.rank, d))
        throw std::invalid_argument("mock key 'fault': slow_link " + std::to_string(f.rank) + "-" +
                                    std::to_string(d) + " is not a network link (same node)");
      bool used = false;
      for (int c = 0; c < C; ++c) used |= next[c][f.rank] == d;
      if (!used)
        throw std::invalid_argument("mock key 'fault': slow_link " + std::to_string(f.rank) + "-" +
                                    std::to_string(d) + " is not a ring connection of any channel");
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
    truth.roots.push_back(root);
  }
  truth.comm_hash = comm_hash;
  // Heterogeneous hardware: a static speed factor per GPU (exactly 1 when hetero=0).
  if (sc.hetero > 0)
    for (int r = 0; r < n; ++r) gpu_factor[r] *= hash_factor(mix(sc.seed, uint64_t(r), 0x6770757370ull), sc.hetero);

  // Clocks: every process's plugin started 0.5..3 s before simulation time 0; every node's
  // GPU global timer has its own offset.
  origin_ns.resize(n);
  for (int r = 0; r < n; ++r) origin_ns[r] = 5e8 + 2.5e9 * unit(mix(sc.seed, r, 0x6f726967ull));
  node_clock.resize(sc.nodes);
  for (int node = 0; node < sc.nodes; ++node)
    node_clock[node] = 1765223116927674080ull + (mix(sc.seed, node, 0x636c6bull) % 100000000000000ull);

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

void Simulation::Impl::simulate() {
  if (general) {
    simulate_flow();
    return;
  }
  int first_hang = INT_MAX;
  for (int r = 0; r < n; ++r) first_hang = std::min(first_hang, hang_seq[r]);
  seqs_run = first_hang == INT_MAX ? sc.seqs : first_hang + 1;
  hung_seq = first_hang == INT_MAX ? -1 : first_hang;

  coll_idx.assign(size_t(seqs_run) * n, -1);
  op_idx.assign(size_t(seqs_run) * n * C * 2, -1);
  colls.reserve(size_t(seqs_run) * n);

  std::vector<double> kend(n), enq_prev(n, -kInf), kstart(n), sched(n);
  for (int r = 0; r < n; ++r) kend[r] = p.start_skew * unit(mix(sc.seed, r, 0x736b6577ull));
  std::vector<std::vector<double>> chan_end(C, std::vector<double>(n));

  for (int s = 0; s < seqs_run; ++s) {
    Noise nz(mix(sc.seed, s, 0x636f6c6cull), sc.jitter);
    for (int r = 0; r < n; ++r) {
      const double g = p.gap * nz.factor() * gpu_factor[r];
      const double lead = p.host_lead_min + (p.host_lead_max - p.host_lead_min) * nz.uniform();
      const double sdel = p.sched_min + (p.sched_max - p.sched_min) * nz.uniform();
      if (s >= hang_seq[r]) {  // this rank's host never reaches collective s
        kstart[r] = kInf;
        sched[r] = kInf;
        continue;
      }
      kstart[r] = kend[r] + g;
      double enq = std::max(enq_prev[r] + 5e3, kstart[r] - lead);
      enq_prev[r] = enq;
      sched[r] = enq + sdel;
      SimCollective col;
      col.seq = s;
      col.rank = r;
      col.enqueue_ns = enq;
      col.kernel_start_ns = kstart[r];
      col.channel_end_ns.assign(C, kInf);
      col.comm_hash = comm_hash;
      col.comm_rank = r;
      col.iter = s;
      for (int c = 0; c < C; ++c) col.channels.push_back(c);
      coll_idx[size_t(s) * n + r] = int(colls.size());
      colls.push_back(std::move(col));
    }
    // Proxy ops of this collective, in the order the plugin stores them per channel: the
    // receive from ring.prev, then the send to ring.next (NCCL's SaveProxy order).
    for (int r = 0; r < n; ++r) {
      if (coll_at(s, r) < 0) continue;
      for (int c = 0; c < C; ++c)
        for (int is_send = 0; is_send < 2; ++is_send) {
          int peer = is_send ? next[c][r] : prev[c][r];
          if (!net_hop(r, peer)) continue;
          SimProxyOp op;
          op.seq = s;
          op.channel = c;
          op.rank = r;
          op.peer = peer;
          op.comm_hash = comm_hash;
          op.comm_rank = r;
          op.comm_peer = peer;
          op.task = coll_at(s, r);
          op.is_send = is_send;
          op.n_steps = n_steps;
          op.chunk_bytes = chunk;
          op.steps.resize(n_steps);
          for (int k = 0; k < n_steps; ++k) op.steps[k] = SimStep{k, kInf, kInf, kInf, kInf};
          op.sched_ns = sched[r];
          op.progress_ns = kInf;
          op.end_ns = kInf;
          op_idx[(size_t(s) * n + r) * C * 2 + c * 2 + is_send] = int(ops.size());
          ops.push_back(std::move(op));
        }
    }
    for (int c = 0; c < C; ++c) simulate_channel(s, c, kstart, sched, chan_end[c]);
    for (int r = 0; r < n; ++r) {
      int ci = coll_at(s, r);
      double ke = -kInf;
      for (int c = 0; c < C; ++c) ke = std::max(ke, chan_end[c][r]);
      kend[r] = ke;
      if (ci < 0) continue;
      SimCollective& col = colls[ci];
      double end = -kInf;
      for (int c = 0; c < C; ++c) {
        col.channel_end_ns[c] = chan_end[c][r];
        end = std::max(end, chan_end[c][r] + p.poll * unit(mix(sc.seed, s, r, 0x6b63680ull + c)));
        for (int is_send = 0; is_send < 2; ++is_send) {
          int oi = op_at(s, r, c, is_send);
          if (oi >= 0) end = std::max(end, ops[oi].end_ns);
        }
      }
      col.end_ns = end + 500 + 1000 * unit(mix(sc.seed, s, r, 0x656e64ull));
    }
  }

  if (hung_seq >= 0) {
    // The traces are dumped a while after the last progress anywhere.
    double last = last_activity_ns(colls, ops, [&](const SimProxyOp& op) { return op.seq == hung_seq; });
    kill_ns = last + p.hang_dump_after;
  }
}

void Simulation::Impl::simulate_channel(int s, int c, const std::vector<double>& kstart,
                                        const std::vector<double>& sched,
                                        std::vector<double>& channel_end) {
  Noise nz(mix(sc.seed, s, c, 0x70697065ull), sc.jitter);
  const int N = n_steps;
  const double bytes = double(chunk);
  const double compute_base = bytes / p.compute_bw + p.compute_fixed;
  const double nvl_xfer = bytes / p.nvl_bw;

  // Per rank and step: flushed arrival at the receiver, slot freed by the receiving GPU,
  // send done at the sender (indexed by the rank that owns the event).
  std::vector<double> F_in(size_t(n) * N, kInf), freed_in(size_t(n) * N, kInf), sd_out(size_t(n) * N, kInf);
  std::vector<double> gpu_free(n), A_prev(n, -kInf), wire_free(n, -kInf), flush_prev(n, -kInf),
      freed_prev(n, -kInf), progr_send(n, kInf), progr_recv(n, kInf), net_bw(n);
  std::vector<int> send_op(n, -1), recv_op(n, -1);
  std::vector<char> net(n);
  const std::vector<int>& nx = next[c];

  for (int r = 0; r < n; ++r) {
    gpu_free[r] = kstart[r] + 300.0 * c + 500.0 * unit(mix(sc.seed, s, r, 0x736b63ull + c));
    net[r] = net_hop(r, nx[r]);
    net_bw[r] = p.net_bw / link_factor(r, nx[r]);
    for (int is_send = 0; is_send < 2; ++is_send) {
      int oi = op_at(s, r, c, is_send);
      if (oi < 0) continue;
      // The proxy progresses the op once it has it and the previous op on the same
      // connection has finished.
      double progr = sched[r] + 1000 + 1000 * unit(mix(sc.seed, s, r, 0x70726f67ull + 2 * c + is_send));
      int po = op_at(s - 1, r, c, is_send);
      if (po >= 0) progr = std::max(progr, ops[po].end_ns + 500);
      ops[oi].progress_ns = progr;
      (is_send ? progr_send[r] : progr_recv[r]) = progr;
      (is_send ? send_op[r] : recv_op[r]) = oi;
    }
  }

  const int n_ops = loops * (K + 1);
  for (int o = 0; o < n_ops; ++o) {
    const int l = o / (K + 1), j = o % (K + 1), base = l * K;
    const int rs = j >= 1 ? base + j - 1 : -1;      // step received (and reduced) by this op
    const int ss = j <= K - 1 ? base + j : -1;      // step sent by this op
    for (int r = 0; r < n; ++r) {
      const int d = nx[r];
      double* Fr = &F_in[size_t(r) * N];
      double t = gpu_free[r];
      if (rs >= 0) t = std::max(t, Fr[rs]);
      double G = -kInf;
      if (ss >= 0) {
        if (net[r]) {
          // The proxy posts send slot ss once step ss-8 completed; the GPU may write the
          // slot once ss-8's send is done (non-shared buffers).
          G = progr_send[r];
          if (ss >= kNcclSteps) {
            double sd8 = sd_out[size_t(r) * N + ss - kNcclSteps];
            G = std::max(G, sd8);
            t = std::max(t, sd8);
          }
        } else if (ss >= kNcclSteps) {
          // NVLink: the GPU writes straight into the receiver's slot once it was freed.
          t = std::max(t, freed_in[size_t(d) * N + ss - kNcclSteps] + p.nvl_lat);
        }
      }
      const double end = t + compute_base * nz.factor() * gpu_factor[r];
      gpu_free[r] = end;
      const double cons_jit = nz.factor();
      if (rs >= 0) {
        double fr = end;
        if (consumer_delay[r] > 0) fr = std::max(fr, freed_prev[r]) + consumer_delay[r] * cons_jit;
        freed_prev[r] = fr;
        freed_in[size_t(r) * N + rs] = fr;
        if (recv_op[r] >= 0) ops[recv_op[r]].steps[rs].t3 = fr;
      }
      const double xfer_jit = nz.factor();
      const double flush_jit = nz.factor();
      if (ss < 0) continue;
      if (net[r]) {
        const double D = std::max(end, G);
        double P = progr_recv[d];
        if (ss >= kNcclSteps) P = std::max(P, freed_in[size_t(d) * N + ss - kNcclSteps]);
        const double A = std::max({D, P + p.ctrl_lat, A_prev[r]});
        A_prev[r] = A;
        const double xfer = bytes / net_bw[r] * xfer_jit;
        const double ws = std::max(A, wire_free[r]);
        const double arr = ws + p.net_lat + xfer;
        wire_free[r] = ws + xfer;
        const double sd = arr + p.ack_lat;
        const double F = std::max(arr, flush_prev[d]) + p.flush * flush_jit * flush_factor[d];
        flush_prev[d] = F;
        sd_out[size_t(r) * N + ss] = sd;
        F_in[size_t(d) * N + ss] = F;
        if (send_op[r] >= 0) ops[send_op[r]].steps[ss] = SimStep{ss, G, D, A, sd};
        if (recv_op[d] >= 0) {
          SimStep& st = ops[recv_op[d]].steps[ss];
          st.t0 = P;
          st.t1 = arr;
          st.t2 = F;
        }
      } else {
        const double ws = std::max(end, wire_free[r]);
        const double arr = ws + p.nvl_lat + nvl_xfer * xfer_jit;
        wire_free[r] = ws + nvl_xfer * xfer_jit;
        sd_out[size_t(r) * N + ss] = arr;
        F_in[size_t(d) * N + ss] = arr;
      }
    }
  }

  for (int r = 0; r < n; ++r) {
    channel_end[r] = gpu_free[r];
    if (send_op[r] >= 0) ops[send_op[r]].end_ns = sd_out[size_t(r) * N + N - 1];
    if (recv_op[r] >= 0) ops[recv_op[r]].end_ns = freed_in[size_t(r) * N + N - 1];
  }
}

// ---- public API ---------------------------------------------------------------------------

Simulation::Simulation(const Scenario& scenario) : impl_(new Impl) {
  try {
    impl_->build(scenario);
    impl_->simulate();
  } catch (...) {
    delete impl_;
    throw;
  }
}

Simulation::~Simulation() { delete impl_; }
Simulation::Simulation(Simulation&& o) noexcept : impl_(o.impl_) { o.impl_ = nullptr; }
Simulation& Simulation::operator=(Simulation&& o) noexcept {
  if (this != &o) {
    delete impl_;
    impl_ = o.impl_;
    o.impl_ = nullptr;
  }
  return *this;
}

const Scenario& Simulation::scenario() const { return impl_->sc; }
const std::vector<SimProcess>& Simulation::processes() const { return impl_->procs; }
std::vector<std::string> Simulation::hosts() const {
  std::vector<std::string> h;
  for (int node = 0; node < impl_->sc.nodes; ++node) h.push_back(host_name(node));
  return h;
}
const GroundTruth& Simulation::truth() const { return impl_->truth; }

namespace {

// When the job ends: the last completion of any collective or p2p operation (+inf: never).
double job_end_ns(const std::vector<SimCollective>& colls) {
  double end = 0;
  for (const SimCollective& c : colls) end = std::max(end, c.end_ns);
  return end;
}

double slowdown_of(double job, double healthy) {
  return std::isfinite(job) && healthy > 0 ? job / healthy - 1.0 : 0.0;
}

}  // namespace

void Simulation::measure_effect() {
  GroundTruth& t = impl_->truth;
  Scenario healthy = impl_->sc;
  healthy.faults.clear();
  t.job_ns = job_end_ns(impl_->colls);
  t.healthy_job_ns = job_end_ns(Simulation(healthy).collectives());
  t.slowdown = slowdown_of(t.job_ns, t.healthy_job_ns);
  // Roots follow the faults other than `none`, in order.
  size_t root = 0;
  for (const Fault& f : impl_->sc.faults) {
    if (f.kind == "none" || root >= t.roots.size()) continue;
    Scenario alone = healthy;
    alone.faults = {f};
    t.roots[root++].slowdown_alone =
        impl_->sc.faults.size() == 1 ? t.slowdown : slowdown_of(job_end_ns(Simulation(alone).collectives()), t.healthy_job_ns);
  }
}
uint64_t Simulation::comm_hash() const { return impl_->comm_hash; }
int Simulation::n_ranks() const { return impl_->n; }
int Simulation::ring_next(int channel, int rank) const { return impl_->next.at(channel).at(rank); }
int Simulation::ring_prev(int channel, int rank) const { return impl_->prev.at(channel).at(rank); }
bool Simulation::is_network_hop(int src, int dst) const {
  return impl_->procs.at(src).node != impl_->procs.at(dst).node;
}
const std::vector<SimComm>& Simulation::communicators() const { return impl_->comm_list; }
std::vector<SimLink> Simulation::links() const {
  std::vector<SimLink> out;
  const Impl& m = *impl_;
  if (m.general) {
    std::set<std::tuple<uint64_t, int, int, int, std::string>> seen;
    for (const FlowConn& c : m.flow.conns) {
      const uint64_t h = m.flow.comms[m.flow.tasks[c.src_task].comm].info.hash;
      if (!seen.insert({h, c.channel, c.src, c.dst, c.role}).second) continue;
      out.push_back(SimLink{h, c.channel, c.src, c.dst, c.net, c.role});
    }
    return out;
  }
  for (int c = 0; c < m.C; ++c)
    for (int r = 0; r < m.n; ++r)
      out.push_back(SimLink{m.comm_hash, c, r, m.next[c][r], m.net_hop(r, m.next[c][r]), "ring"});
  return out;
}
const std::vector<SimCollective>& Simulation::collectives() const { return impl_->colls; }
const std::vector<SimProxyOp>& Simulation::proxy_ops() const { return impl_->ops; }

std::vector<RenderedFile> Simulation::render_host_nccl_json(int node) const {
  if (node < 0 || node >= impl_->sc.nodes) throw std::out_of_range("render_host_nccl_json: no node " + std::to_string(node));
  std::vector<RenderedFile> files;
  if (impl_->general) {
    for (int local = 0; local < impl_->sc.gpus; ++local)
      for (auto& f : impl_->render_rank_flow(node * impl_->sc.gpus + local)) files.push_back(std::move(f));
    return files;
  }
  for (int local = 0; local < impl_->sc.gpus; ++local) {
    int r = node * impl_->sc.gpus + local;
    RenderedFile f;
    f.name = "nccl_prof_" + std::to_string(impl_->comm_hash) + "_" + std::to_string(r) + ".json";
    f.content = impl_->render_rank_nccl_json(r);
    files.push_back(std::move(f));
  }
  return files;
}

namespace {

bool is_simulated_trace(const std::string& name) {
  return name.rfind("nccl_prof_", 0) == 0 && name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0;
}

bool is_simulated_export(const std::string& name) {
  if (name.rfind("nccl_trace_rank_", 0) == 0) return true;  // Flight Recorder dumps
  for (const char* table : {"proxy_ops", "inflight_ops", "coll_perf"})
    for (const char* ext : {".csv", ".json"})
      if (name == std::string(table) + ext) return true;
  return false;
}

}  // namespace

double Simulation::dump_time_ns() const { return impl_->kill_ns; }

void Simulation::write(const std::string& dir) const {
  write(dir, [this](int node) { return render_host_nccl_json(node); });
}

void Simulation::write(const std::string& dir,
                       const std::function<std::vector<RenderedFile>(int node)>& render) const {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  auto put = [](const fs::path& path, const std::string& content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + path.string());
    out.write(content.data(), std::streamsize(content.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
  };
  for (int node = 0; node < impl_->sc.nodes; ++node) {
    fs::path hd = fs::path(dir) / host_name(node);
    fs::create_directories(hd);
    // Files of an earlier simulation in the same place would mix with this one's.
    for (const auto& e : fs::directory_iterator(hd)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && (is_simulated_trace(name) || is_simulated_export(name))) fs::remove(e.path());
    }
    for (const auto& f : render(node)) put(hd / f.name, f.content);
  }
  put(fs::path(dir) / "ground_truth.json", ground_truth_json(impl_->truth, impl_->procs) + "\n");
}

}  // namespace culprit::mock
