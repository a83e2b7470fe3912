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
//
// The engine streams (docs/simulator.md, "Memory"): it simulates one collective (seq) at a
// time and holds only that seq's operations and proxy ops, each proxy op's steps as a
// StepLog; a step depends on steps at most 8 behind on the same connection, so each rank keeps
// a window of its most recent steps' times. Finished records go to Impl::record_*.
#include <algorithm>
#include <climits>
#include <cmath>

#include "mock/sim_internal.hpp"

namespace culprit::mock {

namespace {

// Steps of each rank whose times are kept while a channel is simulated: a primitive reads
// steps up to NCCL_STEPS back, and the steps of one channel run in lockstep across ranks.
constexpr int kWindow = 32;
static_assert((kWindow & (kWindow - 1)) == 0 && kWindow > kNcclSteps + 2, "a power of two past the credits");

// One seq's collective while it is simulated.
struct RingSeq {
  std::vector<int> coll_of;  // [rank] -> colls index, -1: the rank never reached it
  std::vector<SimCollective> colls;
  std::vector<SimProxyOp> ops;  // without steps: those are in `steps`
  std::vector<StepLog> steps;
  std::vector<int> op_of;  // [(rank * C + channel) * 2 + is_send] -> ops index, -1: none (NVLink)
};

class RingEngine {
 public:
  explicit RingEngine(Simulation::Impl& m);
  void run();

 private:
  void start_seq(int s);
  void add_proxy_ops(int s);
  void start_channel(int s, int c);
  void primitive(int o, int r);
  void finish_channel(int c);
  void finish_seq(int s);

  double& at(std::vector<double>& v, int r, int k) { return v[size_t(r) * kWindow + size_t(k & (kWindow - 1))]; }
  int op_index(int r, int c, int is_send) const { return (r * C_ + c) * 2 + is_send; }

  Simulation::Impl& m_;
  const Params& p_;
  const int n_, C_;
  // Across seqs, per rank: the end of its last kernel and its last enqueue; per connection
  // end (rank, channel, direction): the end of its previous proxy op (NaN: none).
  std::vector<double> kend_, enq_prev_, prev_op_end_;
  // The current seq: kernel starts and proxy schedules per rank, channel ends per channel.
  std::vector<double> kstart_, sched_;
  std::vector<std::vector<double>> chan_end_;
  RingSeq cur_;
  // The current channel: per rank and step (windowed), the flushed arrival at the receiver,
  // the slot freed by the receiving GPU, the send done at the sender (indexed by the rank that
  // owns the event); per rank the GPU and the connection to its ring successor.
  std::vector<double> F_in_, freed_in_, sd_out_;
  std::vector<double> gpu_free_, A_prev_, wire_free_, flush_prev_, freed_prev_, progr_send_, progr_recv_, net_bw_;
  std::vector<int> send_op_, recv_op_;
  std::vector<char> net_;
  const int* next_ = nullptr;  // the channel's ring: successor of each rank
  Noise nz_{0, 0};
  double compute_base_ = 0, nvl_xfer_ = 0;
  // What was recorded: indices in collectives() and proxy_ops(), and the last activity.
  int colls_recorded_ = 0, ops_recorded_ = 0;
  LastActivity last_;
};

RingEngine::RingEngine(Simulation::Impl& m)
    : m_(m), p_(m.p), n_(m.n), C_(m.C), kend_(size_t(n_)), enq_prev_(size_t(n_), -kInf),
      prev_op_end_(size_t(n_) * C_ * 2, std::numeric_limits<double>::quiet_NaN()), kstart_(size_t(n_)),
      sched_(size_t(n_)), chan_end_(size_t(C_), std::vector<double>(size_t(n_))) {
  for (int r = 0; r < n_; ++r) kend_[size_t(r)] = p_.start_skew * unit(mix(m_.sc.seed, r, 0x736b6577ull));
  // No host enqueues before its process started (a host that runs ahead enqueues at once).
  for (int r = 0; r < n_; ++r) enq_prev_[size_t(r)] = kend_[size_t(r)] - 5e3;
  for (auto* v : {&F_in_, &freed_in_, &sd_out_}) v->resize(size_t(n_) * kWindow);
  for (auto* v : {&gpu_free_, &A_prev_, &wire_free_, &flush_prev_, &freed_prev_, &progr_send_, &progr_recv_, &net_bw_})
    v->resize(size_t(n_));
  send_op_.resize(size_t(n_));
  recv_op_.resize(size_t(n_));
  net_.resize(size_t(n_));
}

void RingEngine::run() {
  int first_hang = INT_MAX;
  for (int r = 0; r < n_; ++r) first_hang = std::min(first_hang, m_.hang_seq[size_t(r)]);
  m_.seqs_run = first_hang == INT_MAX ? m_.sc.seqs : first_hang + 1;
  m_.hung_seq = first_hang == INT_MAX ? -1 : first_hang;
  for (int s = 0; s < m_.seqs_run; ++s) {
    start_seq(s);
    for (int c = 0; c < C_; ++c) {
      start_channel(s, c);
      const int n_ops = m_.loops * (m_.K + 1);
      for (int o = 0; o < n_ops; ++o)
        for (int r = 0; r < n_; ++r) primitive(o, r);
      finish_channel(c);
    }
    finish_seq(s);
  }
  // The traces of a hung job are dumped a while after the last progress anywhere.
  m_.kill_ns = m_.hung_seq >= 0 ? last_.last + p_.hang_dump_after : kInf;
}

// Host side of seq s: each rank's kernel starts after its previous one plus the compute in
// between; the host enqueued it a little earlier and the proxy scheduled its ops after that.
void RingEngine::start_seq(int s) {
  cur_ = RingSeq{};
  cur_.coll_of.assign(size_t(n_), -1);
  Noise nz(mix(m_.sc.seed, s, 0x636f6c6cull), m_.sc.jitter);
  for (int r = 0; r < n_; ++r) {
    const double g = p_.gap * nz.factor() * m_.gpu_factor[size_t(r)];
    const double lead = p_.host_lead_min + (p_.host_lead_max - p_.host_lead_min) * nz.uniform();
    const double sdel = p_.sched_min + (p_.sched_max - p_.sched_min) * nz.uniform();
    if (s >= m_.hang_seq[size_t(r)]) {  // this rank's host never reaches collective s
      kstart_[size_t(r)] = kInf;
      sched_[size_t(r)] = kInf;
      continue;
    }
    kstart_[size_t(r)] = kend_[size_t(r)] + g;
    const double enq = std::max(enq_prev_[size_t(r)] + 5e3, kstart_[size_t(r)] - lead);
    enq_prev_[size_t(r)] = enq;
    sched_[size_t(r)] = enq + sdel;
    SimCollective col;
    col.seq = s;
    col.rank = r;
    col.enqueue_ns = enq;
    col.kernel_start_ns = kstart_[size_t(r)];
    col.channel_end_ns.assign(size_t(C_), kInf);
    col.comm_hash = m_.comm_hash;
    col.comm_rank = r;
    col.iter = s;
    for (int c = 0; c < C_; ++c) col.channels.push_back(c);
    cur_.coll_of[size_t(r)] = int(cur_.colls.size());
    cur_.colls.push_back(std::move(col));
  }
  add_proxy_ops(s);
}

// Proxy ops of seq s, in the order the plugin stores them per channel: the receive from
// ring.prev, then the send to ring.next (NCCL's SaveProxy order).
void RingEngine::add_proxy_ops(int s) {
  cur_.op_of.assign(size_t(n_) * C_ * 2, -1);
  for (int r = 0; r < n_; ++r) {
    if (cur_.coll_of[size_t(r)] < 0) continue;
    for (int c = 0; c < C_; ++c)
      for (int is_send = 0; is_send < 2; ++is_send) {
        const int peer = is_send ? m_.next[size_t(c)][size_t(r)] : m_.prev[size_t(c)][size_t(r)];
        if (!m_.net_hop(r, peer)) continue;
        SimProxyOp op;
        op.seq = s;
        op.channel = c;
        op.rank = r;
        op.peer = peer;
        op.comm_hash = m_.comm_hash;
        op.comm_rank = r;
        op.comm_peer = peer;
        op.task = colls_recorded_ + cur_.coll_of[size_t(r)];
        op.is_send = is_send;
        op.n_steps = m_.n_steps;
        op.chunk_bytes = m_.wire_chunk;
        op.sched_ns = sched_[size_t(r)];
        op.progress_ns = kInf;
        op.end_ns = kInf;
        cur_.op_of[size_t(op_index(r, c, is_send))] = int(cur_.ops.size());
        cur_.ops.push_back(std::move(op));
        cur_.steps.emplace_back(m_.n_steps, m_.keep.timeline || m_.keep.every_step);
      }
  }
}

void RingEngine::start_channel(int s, int c) {
  nz_ = Noise(mix(m_.sc.seed, s, c, 0x70697065ull), m_.sc.jitter);
  compute_base_ = double(m_.chunk) / p_.compute_bw + p_.compute_fixed;
  nvl_xfer_ = double(m_.wire_chunk) / p_.nvl_bw;
  for (auto* v : {&F_in_, &freed_in_, &sd_out_}) std::fill(v->begin(), v->end(), kInf);
  std::fill(A_prev_.begin(), A_prev_.end(), -kInf);
  std::fill(wire_free_.begin(), wire_free_.end(), -kInf);
  std::fill(flush_prev_.begin(), flush_prev_.end(), -kInf);
  std::fill(freed_prev_.begin(), freed_prev_.end(), -kInf);
  std::fill(progr_send_.begin(), progr_send_.end(), kInf);
  std::fill(progr_recv_.begin(), progr_recv_.end(), kInf);
  std::fill(send_op_.begin(), send_op_.end(), -1);
  std::fill(recv_op_.begin(), recv_op_.end(), -1);
  const std::vector<int>& nx = m_.next[size_t(c)];
  next_ = nx.data();
  for (int r = 0; r < n_; ++r) {
    gpu_free_[size_t(r)] = kstart_[size_t(r)] + 300.0 * c + 500.0 * unit(mix(m_.sc.seed, s, r, 0x736b63ull + c));
    net_[size_t(r)] = m_.net_hop(r, nx[size_t(r)]);
    net_bw_[size_t(r)] = p_.net_bw / m_.link_factor(r, nx[size_t(r)]);
    for (int is_send = 0; is_send < 2; ++is_send) {
      const int oi = cur_.op_of[size_t(op_index(r, c, is_send))];
      if (oi < 0) continue;
      // The proxy progresses the op once it has it and the previous op on the same
      // connection has finished.
      double progr = sched_[size_t(r)] + 1000 + 1000 * unit(mix(m_.sc.seed, s, r, 0x70726f67ull + 2 * c + is_send));
      const double prev_end = prev_op_end_[size_t(op_index(r, c, is_send))];
      if (!std::isnan(prev_end)) progr = std::max(progr, prev_end + 500);
      cur_.ops[size_t(oi)].progress_ns = progr;
      (is_send ? progr_send_ : progr_recv_)[size_t(r)] = progr;
      (is_send ? send_op_ : recv_op_)[size_t(r)] = oi;
    }
  }
}

// Rank r's o-th primitive of the channel: receive (and reduce) step rs, send step ss.
void RingEngine::primitive(int o, int r) {
  const int K = m_.K, l = o / (K + 1), j = o % (K + 1), base = l * K;
  const int rs = j >= 1 ? base + j - 1 : -1;  // step received (and reduced) by this op
  const int ss = j <= K - 1 ? base + j : -1;  // step sent by this op
  const int d = next_[size_t(r)];
  double t = gpu_free_[size_t(r)];
  if (rs >= 0) t = std::max(t, at(F_in_, r, rs));
  double G = -kInf;
  if (ss >= 0) {
    if (net_[size_t(r)]) {
      // The proxy posts send slot ss once step ss-8 completed; the GPU may write the
      // slot once ss-8's send is done (non-shared buffers).
      G = progr_send_[size_t(r)];
      if (ss >= kNcclSteps) {
        const double sd8 = at(sd_out_, r, ss - kNcclSteps);
        G = std::max(G, sd8);
        t = std::max(t, sd8);
      }
    } else if (ss >= kNcclSteps) {
      // NVLink: the GPU writes straight into the receiver's slot once it was freed.
      t = std::max(t, at(freed_in_, d, ss - kNcclSteps) + p_.nvl_lat);
    }
  }
  const double end = t + compute_base_ * nz_.factor() * m_.gpu_factor[size_t(r)];
  gpu_free_[size_t(r)] = end;
  // Four draws per primitive, in this order, whether used or not.
  const double delay = m_.consumer_delay[size_t(r)];
  if (rs >= 0) {
    double fr = end;
    if (delay > 0) fr = std::max(fr, freed_prev_[size_t(r)]) + delay * nz_.factor();
    else nz_.skip();
    freed_prev_[size_t(r)] = fr;
    at(freed_in_, r, rs) = fr;
    if (recv_op_[size_t(r)] >= 0) cur_.steps[size_t(recv_op_[size_t(r)])].freed(rs, fr);
  } else {
    nz_.skip();
  }
  if (ss < 0) {
    nz_.skip();
    nz_.skip();
    return;
  }
  const double xfer_jit = nz_.factor();
  double flush_jit = 0;  // network hops only
  if (net_[size_t(r)]) flush_jit = nz_.factor();
  else nz_.skip();
  if (!net_[size_t(r)]) {
    const double ws = std::max(end, wire_free_[size_t(r)]);
    const double arr = ws + p_.nvl_lat + nvl_xfer_ * xfer_jit;
    wire_free_[size_t(r)] = ws + nvl_xfer_ * xfer_jit;
    at(sd_out_, r, ss) = arr;
    at(F_in_, d, ss) = arr;
    return;
  }
  const double D = std::max(end, G);
  double P = progr_recv_[size_t(d)];
  if (ss >= kNcclSteps) P = std::max(P, at(freed_in_, d, ss - kNcclSteps));
  const double A = std::max({D, P + p_.ctrl_lat, A_prev_[size_t(r)]});
  A_prev_[size_t(r)] = A;
  const double xfer = double(m_.wire_chunk) / net_bw_[size_t(r)] * xfer_jit;
  const double ws = std::max(A, wire_free_[size_t(r)]);
  const double arr = ws + p_.net_lat + xfer;
  wire_free_[size_t(r)] = ws + xfer;
  const double sd = arr + p_.ack_lat;
  const double flush = p_.coll_flush ? p_.flush : 0.0;
  const double F = std::max(arr, flush_prev_[size_t(d)]) + flush * flush_jit * m_.flush_factor[size_t(d)];
  flush_prev_[size_t(d)] = F;
  at(sd_out_, r, ss) = sd;
  at(F_in_, d, ss) = F;
  if (send_op_[size_t(r)] >= 0) cur_.steps[size_t(send_op_[size_t(r)])].sent(ss, SimStep{ss, G, D, A, sd});
  if (recv_op_[size_t(d)] >= 0) cur_.steps[size_t(recv_op_[size_t(d)])].received(ss, P, arr, F);
}

void RingEngine::finish_channel(int c) {
  const int last = m_.n_steps - 1;
  for (int r = 0; r < n_; ++r) {
    chan_end_[size_t(c)][size_t(r)] = gpu_free_[size_t(r)];
    if (send_op_[size_t(r)] >= 0) cur_.ops[size_t(send_op_[size_t(r)])].end_ns = at(sd_out_, r, last);
    if (recv_op_[size_t(r)] >= 0) cur_.ops[size_t(recv_op_[size_t(r)])].end_ns = at(freed_in_, r, last);
  }
}

// Completion of seq s on every rank (the last channel's kernel or proxy op, observed by the
// host), then its records.
void RingEngine::finish_seq(int s) {
  for (int r = 0; r < n_; ++r) {
    double ke = -kInf;
    for (int c = 0; c < C_; ++c) ke = std::max(ke, chan_end_[size_t(c)][size_t(r)]);
    kend_[size_t(r)] = ke;
    const int ci = cur_.coll_of[size_t(r)];
    if (ci < 0) continue;
    SimCollective& col = cur_.colls[size_t(ci)];
    double end = -kInf;
    for (int c = 0; c < C_; ++c) {
      col.channel_end_ns[size_t(c)] = chan_end_[size_t(c)][size_t(r)];
      end = std::max(end, chan_end_[size_t(c)][size_t(r)] + p_.poll * unit(mix(m_.sc.seed, s, r, 0x6b63680ull + c)));
      for (int is_send = 0; is_send < 2; ++is_send) {
        const int oi = cur_.op_of[size_t(op_index(r, c, is_send))];
        if (oi < 0) continue;
        end = std::max(end, cur_.ops[size_t(oi)].end_ns);
        prev_op_end_[size_t(op_index(r, c, is_send))] = cur_.ops[size_t(oi)].end_ns;
      }
    }
    col.end_ns = end + 500 + 1000 * unit(mix(m_.sc.seed, s, r, 0x656e64ull));
  }
  for (SimCollective& col : cur_.colls) {
    last_.see(col);
    OperationRecord rec;
    rec.index = colls_recorded_++;
    rec.col = std::move(col);
    m_.record_operation(std::move(rec));
  }
  for (size_t i = 0; i < cur_.ops.size(); ++i) {
    if (s == m_.hung_seq) last_.see(cur_.ops[i], cur_.steps[i].summary());
    m_.record_proxy_op(std::move(cur_.ops[i]), ops_recorded_++, std::move(cur_.steps[i]));
  }
  cur_ = RingSeq{};
}

}  // namespace

void Simulation::Impl::simulate_ring() { RingEngine(*this).run(); }

}  // namespace culprit::mock
