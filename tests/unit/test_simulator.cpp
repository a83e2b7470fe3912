// Tests of the simulator (mock/): spec parsing, determinism, rings, the exact trace layout of
// NCCL's 2.27 example profiler, and the physics of every fault. These test the simulator,
// not the analyzer.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "mock/simulator.hpp"

namespace culprit::mock {
namespace {

using nlohmann::json;

// ---- a small reader of the rendered traces (independent of src/io) ----------------------

struct TStep {
  int step = -1;
  double ts[4] = {0, 0, 0, 0};  // b of phase 0, e0 == b1, e1 == b2, e2
};

struct TOp {
  int rank = -1, seq = -1, channel = -1, peer = -1, n_steps = 0;  // rank, peer: comm ranks
  bool is_send = false;
  bool p2p = false;         // inside a P2P Send/Recv (seq is then -1)
  uint64_t comm = 0;        // CommHash of the enclosing COLL/P2P
  uint64_t chunk = 0, trans = 0;
  double sched_b = 0, sched_e = 0, progr_b = 0, progr_e = 0;
  std::vector<TStep> steps;  // in printed (slot) order
  double mean(int phase) const {
    double s = 0;
    for (const auto& st : steps) s += st.ts[phase + 1] - st.ts[phase];
    return steps.empty() ? 0 : s / double(steps.size());
  }
};

struct TKernel {
  int rank = -1, seq = -1, channel = -1;
  uint64_t start_clk = 0, stop_clk = 0;
};

struct TFile {
  std::vector<json> events;
  std::vector<TOp> ops;
  std::vector<TKernel> kernels;
  std::vector<int> seqs;         // SeqNum of every COLL
  std::vector<std::string> p2p;  // name of every P2P (Send/Recv)
};

// Parses one rendered file, checking the line layout and LIFO nesting on the way.
TFile parse_trace(const std::string& content) {
  TFile f;
  std::vector<std::string> lines;
  std::istringstream in(content);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  EXPECT_GE(lines.size(), 2u);
  EXPECT_EQ(lines.front(), "[");
  EXPECT_EQ(lines.back(), "{}]");
  EXPECT_EQ(content.back(), '\n');
  std::vector<json> stack;
  int rank = -1, seq = -1;
  uint64_t comm = 0;
  bool in_p2p = false;
  TOp* op = nullptr;
  TStep cur;
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    const std::string& l = lines[i];
    EXPECT_TRUE(l.size() > 2 && l.substr(l.size() - 2) == "},") << l;
    json e = json::parse(l.substr(0, l.size() - 1));
    // Keys in the plugin's order.
    EXPECT_EQ(l.rfind("{\"name\": \"", 0), 0u) << l;
    EXPECT_NE(l.find("\", \"cat\": \""), std::string::npos);
    EXPECT_NE(l.find(", \"tid\": 1, \"ts\": "), std::string::npos);
    const std::string ph = e.at("ph");
    const std::string name = e.at("name");
    if (ph == "b") {
      stack.push_back(e);
      if (e.at("cat") == "COLL") {
        rank = e["args"]["Rank"];
        seq = e["args"]["SeqNum"];
        comm = e["args"]["CommHash"];
        in_p2p = false;
        f.seqs.push_back(seq);
      } else if (e.at("cat") == "P2P") {
        rank = e["args"]["Rank"];
        seq = -1;
        comm = e["args"]["CommHash"];
        in_p2p = true;
        f.p2p.push_back(name);
      } else if (name == "KernelCh") {
        EXPECT_EQ(e.at("id"), 0);  // the plugin never increments its KernelCh counter
        TKernel k;
        k.rank = rank;
        k.seq = seq;
        k.channel = e["args"]["Channel"];
        k.start_clk = e["args"]["StartGpuClk"];
        k.stop_clk = e["args"]["StopGpuClk"];
        f.kernels.push_back(k);
      } else if (name == "ScheduleSend" || name == "ScheduleRecv") {
        TOp o;
        o.rank = rank;
        o.seq = seq;
        o.channel = e["args"]["Channel"];
        o.peer = e["args"]["Peer"];
        o.n_steps = e["args"]["Steps"];
        o.chunk = e["args"]["ChunkSize"];
        o.trans = e["args"]["transSize"];
        o.is_send = name == "ScheduleSend";
        o.p2p = in_p2p;
        o.comm = comm;
        o.sched_b = e["ts"];
        f.ops.push_back(o);
        op = &f.ops.back();
      } else if (name == "ProgressSend" || name == "ProgressRecv") {
        EXPECT_NE(op, nullptr);
        op->progr_b = e["ts"];
      } else if (e.at("cat") == "NET") {
        static const std::map<std::string, int> idx = {
            {"SendGpuWait", 0}, {"SendPeerWait", 1}, {"SendWait", 2},
            {"RecvWait", 0},    {"RecvFlushWait", 1}, {"RecvGpuWait", 2}};
        int k = idx.at(name);
        if (k == 0) cur = TStep{};
        cur.step = e["args"]["Step"];
        if (k == 0) cur.ts[0] = e["ts"];
      }
      EXPECT_TRUE(e.contains("args")) << l;
    } else {
      EXPECT_EQ(ph, "e");
      EXPECT_FALSE(e.contains("args")) << l;
      EXPECT_FALSE(stack.empty()) << l;
      if (stack.empty()) continue;
      const json b = stack.back();
      stack.pop_back();
      EXPECT_EQ(b.at("name"), e.at("name")) << l;
      EXPECT_EQ(b.at("id"), e.at("id")) << l;
      EXPECT_EQ(b.at("pid"), e.at("pid"));
      if (name == "ScheduleSend" || name == "ScheduleRecv") {
        op->sched_e = e["ts"];
      } else if (name == "ProgressSend" || name == "ProgressRecv") {
        op->progr_e = e["ts"];
        op = nullptr;
      } else if (e.at("cat") == "NET") {
        static const std::map<std::string, int> idx = {
            {"SendGpuWait", 0}, {"SendPeerWait", 1}, {"SendWait", 2},
            {"RecvWait", 0},    {"RecvFlushWait", 1}, {"RecvGpuWait", 2}};
        int k = idx.at(name);
        if (k > 0) {
          EXPECT_EQ(double(b["ts"]), cur.ts[k]) << "phases of one step are contiguous";
        }
        cur.ts[k + 1] = e["ts"];
        if (k == 2) op->steps.push_back(cur);
      }
    }
    f.events.push_back(std::move(e));
  }
  EXPECT_TRUE(stack.empty());
  return f;
}

struct World {
  Simulation sim;
  std::map<int, TFile> files;  // by rank
  explicit World(const std::string& spec) : sim(Scenario::parse(spec)) {
    for (int node = 0; node < sim.scenario().nodes; ++node)
      for (const auto& rf : sim.render_host_nccl_json(node)) {
        TFile f = parse_trace(rf.content);
        int r = std::stoi(rf.name.substr(rf.name.rfind('_') + 1));
        files[r] = std::move(f);
      }
  }
  // Steady-state ops: every op of seq >= first_seq.
  std::vector<const TOp*> ops(bool is_send, int first_seq = 2) const {
    std::vector<const TOp*> v;
    for (const auto& [r, f] : files)
      for (const auto& o : f.ops)
        if (o.is_send == is_send && o.seq >= first_seq) v.push_back(&o);
    return v;
  }
  // Mean per-step phase of one connection (sender or receiver side) over the steady seqs.
  double conn_mean(int rank, int peer, bool is_send, int phase, int channel = -1) const {
    double s = 0;
    int n = 0;
    for (const TOp* o : ops(is_send))
      if (o->rank == rank && o->peer == peer && (channel < 0 || o->channel == channel)) {
        s += o->mean(phase);
        ++n;
      }
    EXPECT_GT(n, 0) << "no op " << rank << "->" << peer;
    return n ? s / n : 0;
  }
  // Per connection (rank, peer, channel) means of one phase.
  std::vector<std::pair<std::tuple<int, int, int>, double>> conn_means(bool is_send, int phase) const {
    std::map<std::tuple<int, int, int>, std::pair<double, int>> acc;
    for (const TOp* o : ops(is_send)) {
      auto& a = acc[{o->rank, o->peer, o->channel}];
      a.first += o->mean(phase);
      a.second += 1;
    }
    std::vector<std::pair<std::tuple<int, int, int>, double>> v;
    for (const auto& [k, a] : acc) v.push_back({k, a.first / a.second});
    return v;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

const char* kSmall = "nodes=4,gpus=4,channels=2,seqs=10,seed=7";

// ---- spec ----------------------------------------------------------------------------------

TEST(SimulatorSpec, Defaults) {
  Scenario s = Scenario::parse("");
  EXPECT_EQ(s.topology, "ring");
  EXPECT_EQ(s.nodes, 4);
  EXPECT_EQ(s.gpus, 8);
  EXPECT_EQ(s.channels, 2);
  EXPECT_EQ(s.seqs, 20);
  EXPECT_EQ(s.bytes, 64ull << 20);
  EXPECT_TRUE(s.faults.empty());
}

TEST(SimulatorSpec, ParsesEveryKey) {
  Scenario s = Scenario::parse(
      " topology=ring, nodes=3,gpus=2,channels=4,seqs=7,seed=99,jitter=0.1,bytes=8M,layout=flat,"
      "fault=slow_gpu:3,fault=slow_link:1-2:4,fault=slow_consumer:2:7.5,fault=slow_flush:4,"
      "fault=hang:5@3,fault=slow_link:1");
  EXPECT_EQ(s.nodes, 3);
  EXPECT_EQ(s.gpus, 2);
  EXPECT_EQ(s.channels, 4);
  EXPECT_EQ(s.seqs, 7);
  EXPECT_EQ(s.seed, 99u);
  EXPECT_DOUBLE_EQ(s.jitter, 0.1);
  EXPECT_EQ(s.bytes, 8ull << 20);
  EXPECT_EQ(s.layout, "flat");
  ASSERT_EQ(s.faults.size(), 6u);
  EXPECT_EQ(s.faults[0].kind, "slow_gpu");
  EXPECT_EQ(s.faults[0].rank, 3);
  EXPECT_EQ(s.faults[1].kind, "slow_link");
  EXPECT_EQ(s.faults[1].rank, 1);
  EXPECT_EQ(s.faults[1].peer, 2);
  EXPECT_DOUBLE_EQ(s.faults[1].magnitude, 4);
  EXPECT_DOUBLE_EQ(s.faults[2].magnitude, 7.5);
  EXPECT_EQ(s.faults[4].kind, "hang");
  EXPECT_EQ(s.faults[4].rank, 5);
  EXPECT_EQ(s.faults[4].seq, 3);
  EXPECT_EQ(s.faults[5].peer, -1);
  // Round trip.
  Scenario t = Scenario::parse(s.to_spec());
  EXPECT_EQ(t.to_spec(), s.to_spec());
  EXPECT_TRUE(Scenario::parse("fault=none").faults.empty());
  EXPECT_NE(Scenario::parse("fault=none").to_spec().find("fault=none"), std::string::npos);
}

// compute= scales each GPU's own work between operations (about 2 ms before each collective),
// not the collectives: a noise-free ring of 8 collectives takes 8 x 2 ms x (scale - 1) longer,
// and a slow GPU costs the job a larger share where its work is more of the job.
TEST(SimulatorSpec, ComputeScalesOwnWorkOnly) {
  auto job = [](const std::string& extra) {
    Simulation sim(Scenario::parse("topology=ring,nodes=2,gpus=2,channels=2,seqs=8,jitter=0,bytes=4M" + extra));
    sim.measure_effect();
    return sim.truth();
  };
  const double base = job("").job_ns, scaled = job(",compute=3").job_ns;
  EXPECT_NEAR(scaled - base, 8 * 2.0e6 * 2, 0.5e6);
  EXPECT_NE(Scenario::parse("compute=0.25").to_spec().find("compute=0.25"), std::string::npos);
  EXPECT_EQ(Scenario::parse("nodes=2").to_spec().find("compute"), std::string::npos);  // default left out
  EXPECT_LT(job(",fault=slow_gpu:1:1.5,compute=0.1").slowdown, job(",fault=slow_gpu:1:1.5,compute=10").slowdown);
  EXPECT_THROW(Scenario::parse("compute=0"), std::invalid_argument);
}

// host=ahead: each host enqueues an operation 5 us after its previous one, never waiting for
// its GPU, so the enqueue leads the kernel by the GPU's work in between; the GPUs' timeline,
// and so the job, is that of host=sync but for the proxy's scheduling delays it now hides.
TEST(SimulatorSpec, AHostThatRunsAheadEnqueuesAtOnce) {
  auto run = [](const std::string& host) {
    const std::string spec = "topology=ring,nodes=2,gpus=2,channels=2,seqs=6,bytes=4M,fault=slow_gpu:1:1.5";
    Simulation sim(Scenario::parse(spec + host));
    sim.measure_effect();
    return sim;
  };
  const Simulation sync = run(""), ahead = run(",host=ahead");
  EXPECT_NEAR(ahead.truth().job_ns, sync.truth().job_ns, 0.01 * sync.truth().job_ns);
  auto longest_lead = [](const Simulation& sim) {
    double lead = 0;
    for (const SimCollective& c : sim.collectives()) lead = std::max(lead, c.kernel_start_ns - c.enqueue_ns);
    return lead;
  };
  const double sync_lead = longest_lead(sync), ahead_lead = longest_lead(ahead);
  EXPECT_LE(sync_lead, 200e3 + 1);
  EXPECT_GT(ahead_lead, 1e6);  // at least the ~2 ms of work before a collective, less the first
  for (const SimCollective& c : ahead.collectives()) EXPECT_GE(c.enqueue_ns, 0.0);  // not before its process
  EXPECT_NE(Scenario::parse("host=ahead").to_spec().find("host=ahead"), std::string::npos);
  EXPECT_THROW(Scenario::parse("host=later"), std::invalid_argument);
}

// proto=ll|ll128: a collective's steps hold NCCL's LL or LL128 data per slot, put their flags
// on the wire with it (twice the bytes, or 16/15) and are never flushed; point-to-point runs
// SIMPLE whatever the key says.
TEST(SimulatorSpec, ProtocolsSetStepsWireBytesAndFlush) {
  struct Run {
    uint64_t wire_bytes = 0;  // of one network send op, as NCCL records them
    int steps = 0;
    uint64_t max_step = 0;
    double flush_ns = 0;      // over the receive steps
    double job_ns = 0;
  };
  auto run = [](const std::string& spec) {
    Simulation sim(Scenario::parse(spec));
    sim.measure_effect();
    Run out;
    out.job_ns = sim.truth().job_ns;
    for (const SimProxyOp& op : sim.proxy_ops()) {
      if (op.is_send && out.steps == 0) {
        out.steps = op.n_steps;
        out.wire_bytes = uint64_t(op.n_steps) * op.chunk_bytes;
      }
      out.max_step = std::max(out.max_step, op.chunk_bytes);
      if (!op.is_send)
        for (const SimStep& st : op.steps) out.flush_ns += st.t2 - st.t1;
    }
    return out;
  };
  const std::string ring = "topology=ring,nodes=2,gpus=1,channels=1,seqs=2,jitter=0,bytes=4M";
  const Run simple = run(ring), ll = run(ring + ",proto=ll"), ll128 = run(ring + ",proto=ll128");
  ASSERT_GT(simple.steps, 0);
  EXPECT_LE(simple.max_step, 512u * 1024u);
  EXPECT_LE(ll.max_step, 64u * 1024u);              // 32 KiB of data in 64 KiB of lines
  EXPECT_LE(ll128.max_step, 640u * 120u * 8u);      // 576000 bytes of data in 614400
  EXPECT_EQ(ll.steps, 16 * simple.steps);
  EXPECT_EQ(ll.wire_bytes, 2 * simple.wire_bytes);
  EXPECT_NEAR(double(ll128.wire_bytes), 16.0 / 15.0 * double(simple.wire_bytes), 64.0 * ll128.steps);
  EXPECT_GT(simple.flush_ns, 0.0);
  EXPECT_EQ(ll.flush_ns, 0.0);
  EXPECT_EQ(ll128.flush_ns, 0.0);
  EXPECT_GT(ll.job_ns, simple.job_ns);  // twice the bytes over the same wire
  // A flush fault costs nothing where nothing is flushed.
  Simulation flushing(Scenario::parse(ring + ",proto=ll,fault=slow_flush:1:50"));
  flushing.measure_effect();
  EXPECT_LT(flushing.truth().slowdown, 0.001);
  // Pipelines' sends and receives stay SIMPLE.
  const std::string pipe = "topology=pipeline,nodes=2,gpus=1,channels=1,seqs=1,jitter=0,bytes=2M";
  EXPECT_EQ(run(pipe + ",proto=ll").job_ns, run(pipe).job_ns);
  EXPECT_NE(Scenario::parse("proto=ll128").to_spec().find("proto=ll128"), std::string::npos);
  EXPECT_EQ(Scenario::parse("nodes=2").to_spec().find("proto"), std::string::npos);  // default left out
  EXPECT_THROW(Scenario::parse("proto=simple128"), std::invalid_argument);
}

TEST(SimulatorSpec, Errors) {
  auto msg = [](const std::string& spec) -> std::string {
    try {
      Scenario::parse(spec);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(msg("colour=blue"), "unknown mock key 'colour'");
  EXPECT_NE(msg("topology=torus").find("torus"), std::string::npos);
  EXPECT_NE(msg("nodes=abc").find("nodes"), std::string::npos);
  EXPECT_NE(msg("nodes=0").find("nodes"), std::string::npos);
  EXPECT_NE(msg("gpus=-1").find("gpus"), std::string::npos);
  EXPECT_NE(msg("nodes").find("nodes"), std::string::npos);
  EXPECT_NE(msg("fault=slow_cpu:3").find("slow_cpu"), std::string::npos);
  EXPECT_NE(msg("fault=slow_gpu").find("fault"), std::string::npos);
  EXPECT_NE(msg("fault=slow_gpu:x").find("fault"), std::string::npos);
  EXPECT_NE(msg("fault=slow_gpu:1:-2").find("fault"), std::string::npos);
  EXPECT_NE(msg("nodes=1,gpus=1").find("2 ranks"), std::string::npos);
  EXPECT_NE(msg("layout=2.99").find("layout"), std::string::npos);
  // Ranks are checked against the cluster when simulating.
  EXPECT_THROW(Simulation(Scenario::parse("nodes=2,gpus=2,fault=slow_gpu:4")), std::invalid_argument);
  EXPECT_THROW(Simulation(Scenario::parse("nodes=2,gpus=2,fault=slow_link:0-1")), std::invalid_argument);
  EXPECT_THROW(Simulation(Scenario::parse("nodes=2,gpus=2,seqs=4,fault=hang:1@4")), std::invalid_argument);
  EXPECT_FALSE(Scenario::help().empty());
  EXPECT_NE(Scenario::help().find("slow_consumer"), std::string::npos);
}

// ---- structure ----------------------------------------------------------------------------

TEST(Simulator, ProcessesHostsPidsAndHash) {
  Simulation sim(Scenario::parse("nodes=3,gpus=4,seqs=2"));
  ASSERT_EQ(sim.processes().size(), 12u);
  EXPECT_EQ(sim.hosts(), (std::vector<std::string>{"node000", "node001", "node002"}));
  for (const auto& p : sim.processes()) {
    EXPECT_EQ(p.global_rank, p.node * 4 + p.local);
    EXPECT_EQ(p.host, sim.hosts()[p.node]);
  }
  for (int node = 0; node < 3; ++node) {
    std::set<int64_t> pids;
    for (const auto& p : sim.processes())
      if (p.node == node) pids.insert(p.pid);
    EXPECT_EQ(pids.size(), 4u) << "pids are distinct within a host";
  }
  // Seed 1 gives a hash above 2^63 (exercises unsigned parsing downstream).
  EXPECT_GT(Simulation(Scenario::parse("nodes=2,gpus=1,seqs=1,seed=1")).comm_hash(), 1ull << 63);
  EXPECT_NE(Simulation(Scenario::parse("nodes=2,gpus=1,seqs=1,seed=2")).comm_hash(),
            Simulation(Scenario::parse("nodes=2,gpus=1,seqs=1,seed=1")).comm_hash());
}

TEST(Simulator, RingsPerChannel) {
  Simulation sim(Scenario::parse("nodes=2,gpus=4,channels=2,seqs=1"));
  // channel 0: 0 1 2 3 | 4 5 6 7 ; channel 1 enters each node at local 2: 2 3 0 1 | 6 7 4 5
  const std::vector<int> ring0 = {0, 1, 2, 3, 4, 5, 6, 7};
  const std::vector<int> ring1 = {2, 3, 0, 1, 6, 7, 4, 5};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(sim.ring_next(0, ring0[i]), ring0[(i + 1) % 8]);
    EXPECT_EQ(sim.ring_prev(0, ring0[(i + 1) % 8]), ring0[i]);
    EXPECT_EQ(sim.ring_next(1, ring1[i]), ring1[(i + 1) % 8]);
    EXPECT_EQ(sim.ring_prev(1, ring1[(i + 1) % 8]), ring1[i]);
  }
  EXPECT_TRUE(sim.is_network_hop(3, 4));
  EXPECT_TRUE(sim.is_network_hop(7, 0));
  EXPECT_FALSE(sim.is_network_hop(1, 2));
  // Bigger: every channel's ring is one cycle through all ranks with `nodes` network hops.
  Simulation big(Scenario::parse("nodes=5,gpus=8,channels=4,seqs=1"));
  for (int c = 0; c < 4; ++c) {
    std::set<int> seen;
    int r = 0, hops = 0;
    for (int i = 0; i < big.n_ranks(); ++i) {
      seen.insert(r);
      EXPECT_EQ(big.ring_prev(c, big.ring_next(c, r)), r);
      hops += big.is_network_hop(r, big.ring_next(c, r));
      r = big.ring_next(c, r);
    }
    EXPECT_EQ(r, 0);
    EXPECT_EQ(int(seen.size()), big.n_ranks());
    EXPECT_EQ(hops, 5);
  }
}

TEST(Simulator, Deterministic) {
  auto render = [](const std::string& spec) {
    Simulation sim(Scenario::parse(spec));
    std::string all;
    for (int node = 0; node < sim.scenario().nodes; ++node)
      for (const auto& f : sim.render_host_nccl_json(node)) all += f.name + "\n" + f.content;
    return all;
  };
  const std::string a = render("nodes=2,gpus=2,seqs=3,seed=5,fault=slow_gpu:1");
  EXPECT_EQ(a, render("nodes=2,gpus=2,seqs=3,seed=5,fault=slow_gpu:1"));
  EXPECT_NE(a, render("nodes=2,gpus=2,seqs=3,seed=6,fault=slow_gpu:1"));
}

TEST(Simulator, NetworkFacingRanksHaveProxyOps) {
  World w("nodes=3,gpus=8,channels=2,seqs=3,seed=3");
  const Simulation& sim = w.sim;
  for (const auto& [r, f] : w.files) {
    std::set<std::tuple<int, int, int>> expect, got;  // channel, is_send, peer
    for (int c = 0; c < 2; ++c) {
      if (sim.is_network_hop(sim.ring_prev(c, r), r)) expect.insert({c, 0, sim.ring_prev(c, r)});
      if (sim.is_network_hop(r, sim.ring_next(c, r))) expect.insert({c, 1, sim.ring_next(c, r)});
    }
    for (const auto& o : f.ops) got.insert({o.channel, o.is_send, o.peer});
    EXPECT_EQ(got, expect) << "rank " << r;
    EXPECT_EQ(f.ops.size(), expect.size() * 3) << "one op per network connection per collective";
    EXPECT_EQ(f.kernels.size(), 2u * 3u);
    EXPECT_EQ(f.seqs, (std::vector<int>{0, 1, 2}));
  }
  // 8 GPUs, 2 channels: channel 0 enters a node at local 0 and leaves at 7, channel 1 enters
  // at 4 and leaves at 3; locals 1, 2, 5, 6 are interior on both rings.
  for (int local : {1, 2, 5, 6}) EXPECT_TRUE(w.files.at(8 + local).ops.empty()) << local;
  for (int local : {0, 3, 4, 7}) EXPECT_EQ(w.files.at(8 + local).ops.size(), 3u) << local;
}

TEST(Simulator, TraceLayoutIsThePlugins) {
  Simulation sim(Scenario::parse("nodes=2,gpus=2,channels=1,seqs=2,seed=1"));
  auto files = sim.render_host_nccl_json(0);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].name, "nccl_prof_" + std::to_string(sim.comm_hash()) + "_0.json");
  const std::string& c = files[0].content;
  // The first lines exactly as NCCL 2.27's print_event.c prints them.
  std::istringstream in(c);
  std::string l0, l1, l2;
  std::getline(in, l0);
  std::getline(in, l1);
  std::getline(in, l2);
  EXPECT_EQ(l0, "[");
  EXPECT_EQ(l1.rfind("{\"name\": \"Group\", \"cat\": \"GROUP\", \"ph\": \"b\", \"id\": 0, \"pid\": ", 0), 0u) << l1;
  EXPECT_NE(l1.find(", \"args\": {\"groupId\": 0}},"), std::string::npos) << l1;
  EXPECT_EQ(l2.rfind("{\"name\": \"AllReduce\", \"cat\": \"COLL\", \"ph\": \"b\", \"id\": 0, \"pid\": ", 0), 0u) << l2;
  EXPECT_NE(l2.find(", \"args\": {\"SeqNum\": 0, \"CommHash\": " + std::to_string(sim.comm_hash()) +
                    ", \"Rank\": 0, \"Count\": 16777216, \"Datatype\": \"ncclFloat32\", \"Algorithm\": "
                    "\"RING\", \"Protocol\": \"SIMPLE\", \"nChannels\": 1}},"),
            std::string::npos)
      << l2;
  // ts with exactly six decimals
  auto p = l2.find("\"ts\": ");
  auto q = l2.find(',', p);
  std::string ts = l2.substr(p + 6, q - p - 6);
  ASSERT_NE(ts.find('.'), std::string::npos);
  EXPECT_EQ(ts.size() - ts.find('.') - 1, 6u) << ts;
  // Per-kind id counters.
  TFile f = parse_trace(c);
  std::map<std::string, std::vector<int>> ids;
  for (const auto& e : f.events)
    if (e["ph"] == "b") ids[e["cat"].get<std::string>()].push_back(e["id"]);
  EXPECT_EQ(ids["COLL"], (std::vector<int>{0, 1}));
  EXPECT_EQ(ids["GROUP"], (std::vector<int>{0, 1}));
  // flat layout: no Group
  Simulation flat(Scenario::parse("nodes=2,gpus=2,channels=1,seqs=2,seed=1,layout=flat"));
  EXPECT_EQ(flat.render_host_nccl_json(0)[0].content.find("GROUP"), std::string::npos);
}

TEST(Simulator, StepsAndPhasesConsistent) {
  World w("nodes=3,gpus=2,channels=2,seqs=20,seed=11,bytes=3M");
  int ops = 0;
  for (const auto& [r, f] : w.files) {
    std::map<std::tuple<int, int>, uint64_t> first_trans;
    for (const auto& o : f.ops) {
      ++ops;
      ASSERT_GT(o.n_steps, 0);
      EXPECT_EQ(int(o.steps.size()), std::min(16, o.n_steps));
      // slot order: slot i holds the newest step with step % 16 == i
      for (size_t i = 0; i < o.steps.size(); ++i) {
        int k = o.steps[i].step;
        EXPECT_EQ(k % 16, int(i));
        EXPECT_LT(k, o.n_steps);
        EXPECT_GE(k + 16, o.n_steps);
      }
      EXPECT_LE(o.sched_b, o.sched_e);
      EXPECT_EQ(o.sched_e, o.progr_b);
      for (const auto& st : o.steps) {
        for (int ph = 0; ph < 3; ++ph) EXPECT_LE(st.ts[ph], st.ts[ph + 1]) << "phase " << ph;
        EXPECT_GE(st.ts[0], o.progr_b);
        EXPECT_LE(st.ts[3], o.progr_e);
      }
      // transSize accumulates over the plugin's 16 pool slots: (seq/16 + 1) full ops.
      EXPECT_EQ(o.trans, uint64_t(o.seq / 16 + 1) * uint64_t(o.n_steps) * o.chunk);
    }
  }
  EXPECT_GT(ops, 0);
  // The timeline behind it: NCCL's 8 credits per connection.
  for (const auto& op : w.sim.proxy_ops()) {
    for (int k = 8; k < op.n_steps; ++k) {
      if (op.is_send) {
        EXPECT_GE(op.steps[k].t0, op.steps[k - 8].t3) << "send slot reposted only after step k-8 is done";
      } else {
        EXPECT_GE(op.steps[k].t0, op.steps[k - 8].t3) << "receive posted only after the GPU freed k-8";
      }
    }
  }
}

TEST(Simulator, ProxyOpTimesNestInTheCollective) {
  World w("nodes=2,gpus=2,channels=2,seqs=4,seed=2");
  for (const auto& [r, f] : w.files) {
    double coll_b = 0;
    for (const auto& e : f.events) {
      if (e["cat"] == "COLL" && e["ph"] == "b") coll_b = e["ts"];
      if (e["cat"] == "COLL" && e["ph"] == "e") {
        EXPECT_GT(double(e["ts"]), coll_b);
      }
    }
    for (const auto& o : f.ops) EXPECT_GE(o.sched_b, 0);
  }
  // KernelCh clocks: absolute GPU timer, increasing per GPU, same node offset.
  for (const auto& [r, f] : w.files) {
    uint64_t last = 0;
    for (const auto& k : f.kernels) {
      EXPECT_GT(k.start_clk, 1700000000000000000ull);
      EXPECT_GT(k.stop_clk, k.start_clk);
      if (k.channel == 0) {
        EXPECT_GT(k.start_clk, last);
        last = k.start_clk;
      }
    }
  }
}

// ---- physics ------------------------------------------------------------------------------

TEST(SimulatorPhysics, HealthyWaitsAreSimilar) {
  World w(kSmall);
  std::vector<double> rw, sendsum;
  for (const auto& [k, v] : w.conn_means(false, 0)) rw.push_back(v);
  for (const TOp* o : w.ops(true)) sendsum.push_back(o->mean(0) + o->mean(1) + o->mean(2));
  ASSERT_FALSE(rw.empty());
  const double mr = median(rw);
  for (double v : rw) {
    EXPECT_LT(v, 1.5 * mr);
    EXPECT_GT(v, mr / 1.5);
  }
  const double ms = median(sendsum);
  for (double v : sendsum) {
    EXPECT_LT(v, 1.5 * ms);
    EXPECT_GT(v, ms / 1.5);
  }
  // No SendPeerWait to speak of, flush and GPU waits small.
  for (const auto& [k, v] : w.conn_means(true, 1)) EXPECT_LT(v, 20.0);
  for (const auto& [k, v] : w.conn_means(false, 1)) EXPECT_LT(v, 10.0);
  EXPECT_TRUE(w.sim.truth().roots.empty());
}

TEST(SimulatorPhysics, SlowLink) {
  // 4x4: rank 11 (node 2, local 3) sends to 12 (node 3, local 0) on channel 0.
  World w(std::string(kSmall) + ",fault=slow_link:11-12");
  ASSERT_EQ(w.sim.truth().roots.size(), 1u);
  EXPECT_EQ(w.sim.truth().roots[0].culprit_class, "network_link");
  EXPECT_EQ(w.sim.truth().roots[0].rank, 11);
  EXPECT_EQ(w.sim.truth().roots[0].peer, 12);
  const double slow_sw = w.conn_mean(11, 12, true, 2);
  const double slow_gw = w.conn_mean(11, 12, true, 0);
  std::vector<double> other_sw, other_gw;
  for (const TOp* o : w.ops(true))
    if (!(o->rank == 11 && o->peer == 12)) {
      other_sw.push_back(o->mean(2));
      other_gw.push_back(o->mean(0));
    }
  EXPECT_GT(slow_sw, 5 * median(other_sw));
  for (double v : other_sw) EXPECT_GT(slow_sw, 2 * v);
  EXPECT_LT(slow_gw, 0.1 * median(other_gw)) << "its sender's GPU is ready";
  // The receiver waits for data (late data), like everyone downstream.
  EXPECT_GT(w.conn_mean(12, 11, false, 0), 3 * slow_gw);
  // Default peer: slow_link:S is S -> its network successor.
  Simulation s2(Scenario::parse(std::string(kSmall) + ",fault=slow_link:7"));
  EXPECT_EQ(s2.truth().roots[0].peer, 8);
}

TEST(SimulatorPhysics, SlowConsumer) {
  // 4x4: rank 8 (node 2, local 0) receives from 7 over the network on channel 0.
  World w(std::string(kSmall) + ",fault=slow_consumer:8");
  EXPECT_EQ(w.sim.truth().roots.at(0).culprit_class, "gpu_consumer");
  const double spw = w.conn_mean(7, 8, true, 1);
  std::vector<double> others;
  for (const auto& [k, v] : w.conn_means(true, 1)) {
    if (std::get<0>(k) == 7 && std::get<1>(k) == 8) continue;
    others.push_back(v);
    EXPECT_GT(spw, 5 * v) << "the upstream sender's SendPeerWait on the link into R is the largest";
  }
  EXPECT_GT(spw, 10 * median(others));
  // R itself: little RecvWait, long RecvGpuWait.
  EXPECT_LT(w.conn_mean(8, 7, false, 0), 0.2 * w.conn_mean(8, 7, false, 2));
}

TEST(SimulatorPhysics, SlowGpuStartsLate) {
  World w(std::string(kSmall) + ",fault=slow_gpu:13");
  EXPECT_EQ(w.sim.truth().roots.at(0).culprit_class, "gpu_producer");
  // KernelCh StartGpuClk (one clock per node): 13 starts after its node peers 12, 14, 15.
  int later = 0, seqs = 0;
  for (int s = 0; s < 10; ++s) {
    uint64_t mine = 0, peers = 0;
    for (int r : {12, 13, 14, 15})
      for (const auto& k : w.files.at(r).kernels)
        if (k.seq == s && k.channel == 0) (r == 13 ? mine : peers) = std::max(r == 13 ? mine : peers, k.start_clk);
    ++seqs;
    later += mine > peers + 1000000;  // > 1 ms later
  }
  EXPECT_EQ(later, seqs);
  // Once it runs, its data is ready: its outbound SendGpuWait is far below the others'.
  const double own = w.conn_mean(13, 2, true, 0);
  std::vector<double> others;
  for (const auto& [k, v] : w.conn_means(true, 0))
    if (std::get<0>(k) != 13) others.push_back(v);
  EXPECT_LT(own, 0.1 * median(others));
}

TEST(SimulatorPhysics, SlowFlush) {
  World w(std::string(kSmall) + ",fault=slow_flush:12");
  EXPECT_EQ(w.sim.truth().roots.at(0).culprit_class, "flush");
  const double fl = w.conn_mean(12, 11, false, 1);
  for (const auto& [k, v] : w.conn_means(false, 1)) {
    if (std::get<0>(k) != 12) {
      EXPECT_GT(fl, 20 * v);
    }
  }
  EXPECT_GT(fl, 100.0);
}

TEST(SimulatorPhysics, Hang) {
  World w(std::string(kSmall) + ",fault=hang:5@6");
  EXPECT_EQ(w.sim.truth().roots.at(0).culprit_class, "hang");
  EXPECT_EQ(w.files.at(5).seqs.back(), 5) << "the hung rank never starts collective 6";
  for (const auto& [r, f] : w.files) {
    if (r == 5) continue;
    EXPECT_EQ(f.seqs.back(), 6) << r;
  }
  // Its upstream network sender (4's ring successor is 5 over NVLink here; find the network
  // receiver chain): some op of collective 6 never finished -> stale (zero) end times.
  int stuck = 0;
  for (const auto& [r, f] : w.files)
    for (const auto& o : f.ops)
      if (o.seq == 6 && o.progr_e < o.progr_b) ++stuck;
  EXPECT_GT(stuck, 0);
  // Everything before the hang is complete and ordered.
  for (const auto& [r, f] : w.files) {
    for (const auto& o : f.ops) {
      if (o.seq < 6) {
        EXPECT_GE(o.progr_e, o.progr_b);
      }
    }
  }
}

TEST(SimulatorPhysics, SeveralFaults) {
  Simulation sim(Scenario::parse(std::string(kSmall) + ",fault=slow_gpu:2,fault=slow_link:11-12"));
  ASSERT_EQ(sim.truth().roots.size(), 2u);
  EXPECT_EQ(sim.truth().roots[0].culprit_class, "gpu_producer");
  EXPECT_EQ(sim.truth().roots[1].culprit_class, "network_link");
}

// ---- output -------------------------------------------------------------------------------

TEST(Simulator, GroundTruthJsonAndWrite) {
  Simulation sim(Scenario::parse("nodes=2,gpus=2,seqs=2,seed=1,fault=slow_link:1"));
  json gt = json::parse(ground_truth_json(sim.truth(), sim.processes()));
  EXPECT_EQ(gt["spec"], sim.truth().spec);
  EXPECT_EQ(gt["comm_hash"].get<uint64_t>(), sim.comm_hash());
  ASSERT_EQ(gt["roots"].size(), 1u);
  EXPECT_EQ(gt["roots"][0]["class"], "network_link");
  EXPECT_EQ(gt["roots"][0]["rank"], 1);
  EXPECT_EQ(gt["roots"][0]["host"], "node000");
  EXPECT_EQ(gt["roots"][0]["peer_rank"], 2);
  EXPECT_EQ(gt["roots"][0]["peer_host"], "node001");
  EXPECT_EQ(gt["roots"][0]["pid"], sim.processes()[1].pid);
  EXPECT_EQ(gt["processes"].size(), 4u);

  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("culprit_mock_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  sim.write(dir.string());
  EXPECT_TRUE(fs::exists(dir / "ground_truth.json"));
  for (const auto& h : sim.hosts()) {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir / h)) {
      EXPECT_EQ(e.path().filename().string().rfind("nccl_prof_" + std::to_string(sim.comm_hash()) + "_", 0), 0u);
      ++n;
    }
    EXPECT_EQ(n, 2);
  }
  std::ifstream in(dir / "node001" / ("nccl_prof_" + std::to_string(sim.comm_hash()) + "_3.json"));
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), sim.render_host_nccl_json(1)[1].content);
  fs::remove_all(dir);
}

TEST(Simulator, LargeScenarioIsFast) {
  auto t0 = std::chrono::steady_clock::now();
  Simulation sim(Scenario::parse("nodes=16,gpus=8,channels=2,seqs=20"));
  size_t bytes = 0;
  for (int node = 0; node < 16; ++node)
    for (const auto& f : sim.render_host_nccl_json(node)) bytes += f.content.size();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(bytes, 0u);
  EXPECT_LT(s, 20.0);  // about 0.5 s optimised; generous for debug and sanitizer builds
  std::printf("16x8x2x20: simulate+render %.2f s, %zu bytes\n", s, bytes);
}


// ---- the general engine: trees, pipelines, several communicators --------------------------

// Every file of a job, keyed by (commHash, comm rank), with the global rank of each.
struct Job {
  Simulation sim;
  std::map<std::pair<uint64_t, int>, TFile> files;
  std::map<std::pair<uint64_t, int>, int> global;  // (commHash, comm rank) -> global rank
  std::map<int, std::vector<std::pair<uint64_t, int>>> files_of;  // global rank -> its files
  std::map<std::string, uint64_t> hash_of;                        // comm name -> hash
  explicit Job(const std::string& spec) : sim(Scenario::parse(spec)) {
    for (const auto& c : sim.communicators()) {
      hash_of[c.name] = c.hash;
      for (size_t i = 0; i < c.ranks.size(); ++i) global[{c.hash, int(i)}] = c.ranks[i];
    }
    for (int node = 0; node < sim.scenario().nodes; ++node)
      for (const auto& rf : sim.render_host_nccl_json(node)) {
        const auto a = rf.name.find('_', 10), b = rf.name.rfind('_');
        EXPECT_EQ(rf.name.rfind("nccl_prof_", 0), 0u) << rf.name;
        const uint64_t h = std::stoull(rf.name.substr(10, a - 10));
        const int cr = std::stoi(rf.name.substr(b + 1));
        EXPECT_TRUE(global.count(std::make_pair(h, cr))) << rf.name;
        const int gr = global[std::make_pair(h, cr)];
        EXPECT_EQ(sim.processes()[gr].node, node) << rf.name;
        files[{h, cr}] = parse_trace(rf.content);
        files_of[gr].push_back({h, cr});
      }
  }
  int g(uint64_t comm, int crank) const { return global.at({comm, crank}); }
  // Mean per-step phases of every connection, seen from one side:
  // (comm, sender global, receiver global, channel) -> {phase 0, 1, 2}.
  std::map<std::tuple<uint64_t, int, int, int>, std::array<double, 3>> means(bool is_send) const {
    std::map<std::tuple<uint64_t, int, int, int>, std::pair<std::array<double, 3>, int>> acc;
    for (const auto& [key, f] : files)
      for (const auto& o : f.ops) {
        if (o.is_send != is_send) continue;
        const int me = g(key.first, key.second), peer = g(key.first, o.peer);
        auto& a = acc[{key.first, is_send ? me : peer, is_send ? peer : me, o.channel}];
        for (int ph = 0; ph < 3; ++ph) a.first[ph] += o.mean(ph);
        a.second += 1;
      }
    std::map<std::tuple<uint64_t, int, int, int>, std::array<double, 3>> out;
    for (const auto& [k, a] : acc)
      for (int ph = 0; ph < 3; ++ph) out[k][ph] = a.first[ph] / a.second;
    return out;
  }
  // Mean of one phase over the connections src->dst (any comm, any channel), one side.
  double conn(int src, int dst, bool is_send, int phase) const {
    double s = 0;
    int n = 0;
    for (const auto& [k, v] : means(is_send))
      if (std::get<1>(k) == src && std::get<2>(k) == dst) {
        s += v[phase];
        ++n;
      }
    EXPECT_GT(n, 0) << "no connection " << src << "->" << dst;
    return n ? s / n : 0;
  }
};

const char* kTree = "topology=tree,nodes=4,gpus=4,channels=2,seqs=6,seed=7";
const char* kPipe = "topology=pipeline,nodes=4,gpus=2,channels=2,seqs=2,seed=7,bytes=2M";
const char* kMulti = "topology=ring,comms=world+dp,nodes=4,gpus=4,channels=2,seqs=5,seed=7,bytes=16M";

TEST(SimulatorSpec, TopologiesCommsAndNoiseKeys) {
  Scenario t = Scenario::parse("topology=tree,comms=dp+world,hetero=0.1,channels=4");
  EXPECT_EQ(t.topology, "tree");
  EXPECT_EQ(t.comms, "world+dp");
  EXPECT_DOUBLE_EQ(t.hetero, 0.1);
  EXPECT_EQ(Scenario::parse(t.to_spec()).to_spec(), t.to_spec());
  Scenario p = Scenario::parse("topology=pipeline,stages=2,microbatches=3,backward=0,comms=pp+world");
  EXPECT_EQ(p.stages, 2);
  EXPECT_EQ(p.microbatches, 3);
  EXPECT_FALSE(p.backward);
  EXPECT_EQ(p.comms, "pp+world");
  EXPECT_EQ(Scenario::parse(p.to_spec()).to_spec(), p.to_spec());
  EXPECT_EQ(Scenario::parse("engine=flow").engine, "flow");
  // The plain ring's spec is unchanged by the new keys.
  EXPECT_EQ(Scenario::parse("nodes=2").to_spec().find("comms"), std::string::npos);
  EXPECT_EQ(Scenario::parse("nodes=2").to_spec().find("hetero"), std::string::npos);
  // Two faults: the key repeats, items are separated by commas.
  Scenario two = Scenario::parse("topology=tree,fault=slow_gpu:5,fault=slow_link:11-12");
  ASSERT_EQ(two.faults.size(), 2u);
  auto msg = [](const std::string& spec) -> std::string {
    try {
      Simulation sim(Scenario::parse(spec));
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(msg("topology=ring,comms=pp").find("comms"), std::string::npos);
  EXPECT_NE(msg("topology=pipeline,comms=world+dp").find("comms"), std::string::npos);
  EXPECT_NE(msg("comms=world+xx").find("comms"), std::string::npos);
  EXPECT_NE(msg("stages=2").find("pipeline"), std::string::npos);
  EXPECT_NE(msg("topology=tree,engine=flow").find("engine"), std::string::npos);
  EXPECT_NE(msg("hetero=-1").find("hetero"), std::string::npos);
  EXPECT_NE(msg("topology=tree,channels=3").find("even"), std::string::npos);
  EXPECT_NE(msg("topology=pipeline,nodes=3,gpus=1,stages=2").find("stages"), std::string::npos);
  EXPECT_NE(msg("topology=pipeline,channels=17").find("channels"), std::string::npos);
  EXPECT_NE(msg("topology=ring,comms=world+dp,nodes=1,gpus=4").find("2 nodes"), std::string::npos);
  EXPECT_NE(msg("topology=tree,nodes=4,gpus=4,fault=slow_link:3-4").find("not a connection"), std::string::npos);
  EXPECT_NE(msg("topology=tree,nodes=4,gpus=4,fault=slow_link:1-2").find("same node"), std::string::npos);
  EXPECT_NE(msg("topology=pipeline,nodes=4,gpus=2,fault=slow_gpu:8").find("rank"), std::string::npos);
  EXPECT_NE(Scenario::help().find("topology=ring"), std::string::npos);
  EXPECT_NE(Scenario::help().find("pipeline"), std::string::npos);
  EXPECT_NE(Scenario::help().find("world+dp"), std::string::npos);
}

// Tree 0 over 4 nodes is NCCL's 0 -> 2 -> {1, 3}; tree 1 its mirror 3 -> 1 -> {2, 0}. Inside
// a node the chain runs local 0 (toward the parent) .. local 3 (toward the children).
TEST(SimulatorTree, DoubleBinaryTreeAsNccl) {
  Simulation sim(Scenario::parse(kTree));
  ASSERT_EQ(sim.communicators().size(), 1u);
  EXPECT_EQ(sim.communicators()[0].algorithm, "TREE");
  std::set<std::tuple<int, int, int, std::string>> net;  // channel, src, dst, role
  std::map<std::pair<int, int>, int> parent;             // (channel, rank) -> parent
  for (const SimLink& l : sim.links()) {
    EXPECT_EQ(l.network, sim.is_network_hop(l.src, l.dst));
    if (l.network) net.insert({l.channel, l.src, l.dst, l.role});
    if (l.role == "tree_up") {
      EXPECT_FALSE(parent.count({l.channel, l.src})) << "one parent per channel";
      parent[{l.channel, l.src}] = l.dst;
    }
  }
  const std::set<std::tuple<int, int, int, std::string>> expect = {
      {0, 8, 3, "tree_up"},   {0, 3, 8, "tree_down"}, {0, 4, 11, "tree_up"}, {0, 11, 4, "tree_down"},
      {0, 12, 11, "tree_up"}, {0, 11, 12, "tree_down"}, {1, 4, 15, "tree_up"}, {1, 15, 4, "tree_down"},
      {1, 8, 7, "tree_up"},   {1, 7, 8, "tree_down"}, {1, 0, 7, "tree_up"},  {1, 7, 0, "tree_down"}};
  EXPECT_EQ(net, expect);
  EXPECT_EQ(parent.size(), 2u * 15u) << "every GPU but the root has a parent on each channel";
  EXPECT_FALSE(parent.count({0, 0}));
  EXPECT_FALSE(parent.count({1, 12}));
  EXPECT_EQ(parent.at({0, 1}), 0);  // chain inside node 0
  EXPECT_EQ(parent.at({0, 3}), 2);
  // Double binary tree: with an even node count no node is interior in both trees.
  for (int nodes : {2, 4, 6, 8, 16}) {
    Simulation s(Scenario::parse("topology=tree,gpus=1,channels=2,seqs=1,nodes=" + std::to_string(nodes)));
    std::map<int, std::set<int>> interior;  // node -> trees where it has children
    for (const SimLink& l : s.links())
      if (l.role == "tree_up") interior[l.dst].insert(l.channel);
    for (const auto& [node, trees] : interior) EXPECT_LT(trees.size(), 2u) << nodes << " nodes, node " << node;
  }
}

TEST(SimulatorTree, TraceOpsFollowTheTree) {
  Job job(kTree);
  const uint64_t h = job.hash_of.at("world");
  std::map<int, std::set<std::tuple<int, int, int>>> expect;  // rank -> (channel, is_send, peer)
  for (const SimLink& l : job.sim.links())
    if (l.network) {
      expect[l.src].insert({l.channel, 1, l.dst});
      expect[l.dst].insert({l.channel, 0, l.src});
    }
  for (const auto& [key, f] : job.files) {
    const int r = job.g(key.first, key.second);
    EXPECT_EQ(f.seqs, (std::vector<int>{0, 1, 2, 3, 4, 5}));
    std::set<std::tuple<int, int, int>> got;
    for (const auto& o : f.ops) {
      got.insert({o.channel, o.is_send, o.peer});
      EXPECT_EQ(o.comm, h);
      EXPECT_EQ(o.n_steps, 64) << "32 MiB per channel in 512 KiB chunks";
      EXPECT_FALSE(o.p2p);
    }
    EXPECT_EQ(got, expect[r]) << "rank " << r;
    for (const auto& e : f.events)
      if (e["cat"] == "COLL" && e["ph"] == "b") {
        EXPECT_EQ(e["args"]["Algorithm"], "TREE");
        EXPECT_EQ(e["args"]["nChannels"], 2);
        EXPECT_EQ(e["args"]["Rank"], key.second);
      }
  }
  // NCCL's save order on a channel: receives from the children, send to the parent, receive
  // from the parent, sends to the children. Rank 11 (tail of node 2) on channel 0 has
  // children 4 and 12 over the network and its parent 10 over NVLink.
  const TFile& f11 = job.files.at({h, 11});
  std::vector<std::pair<bool, int>> order;
  for (const auto& o : f11.ops)
    if (o.seq == 0 && o.channel == 0) order.push_back({o.is_send, o.peer});
  EXPECT_EQ(order, (std::vector<std::pair<bool, int>>{{false, 4}, {false, 12}, {true, 4}, {true, 12}}));
  // Rank 8 (head of node 2) on channel 0: parent 3 over the network, child 9 over NVLink.
  order.clear();
  for (const auto& o : job.files.at({h, 8}).ops)
    if (o.seq == 0 && o.channel == 0) order.push_back({o.is_send, o.peer});
  EXPECT_EQ(order, (std::vector<std::pair<bool, int>>{{true, 3}, {false, 3}}));
}

TEST(SimulatorTree, FaultSignatures) {
  Job healthy(kTree);
  const auto hs = healthy.means(true), hr = healthy.means(false);
  // Healthy: no flush or consumer trouble anywhere.
  for (const auto& [k, v] : hr) {
    EXPECT_LT(v[1], 10.0);
    EXPECT_LT(v[2], 150.0);  // an interior GPU waits for its other child (tens of us)
  }
  {  // slow link 11 -> 12 (channel 0, broadcast): SendWait with the data ready.
    Job j(std::string(kTree) + ",fault=slow_link:11-12");
    ASSERT_EQ(j.sim.truth().roots.size(), 1u);
    EXPECT_EQ(j.sim.truth().roots[0].peer, 12);
    std::vector<double> other_sw, other_gw;
    for (const auto& [k, v] : j.means(true))
      if (!(std::get<1>(k) == 11 && std::get<2>(k) == 12)) {
        other_sw.push_back(v[2]);
        other_gw.push_back(v[0]);
      }
    EXPECT_GT(j.conn(11, 12, true, 2), 5 * median(other_sw));
    EXPECT_LT(j.conn(11, 12, true, 0), 0.1 * median(other_gw));
    // Default peer: the first network connection the sender has.
    Simulation d(Scenario::parse(std::string(kTree) + ",fault=slow_link:8"));
    EXPECT_EQ(d.truth().roots[0].peer, 3);
  }
  {  // slow flush at 12: its network receive flushes ~100x longer.
    Job j(std::string(kTree) + ",fault=slow_flush:12");
    const double fl = j.conn(11, 12, false, 1);
    EXPECT_GT(fl, 100.0);
    for (const auto& [k, v] : j.means(false)) {
      if (std::get<2>(k) != 12) {
        EXPECT_GT(fl, 20 * v[1]);
      }
    }
  }
  {  // slow consumer 8: its inbound network receives hold the data (RecvGpuWait), little RecvWait.
    Job j(std::string(kTree) + ",fault=slow_consumer:8");
    EXPECT_EQ(j.sim.truth().roots.at(0).culprit_class, "gpu_consumer");
    for (int src : {3, 7}) {
      EXPECT_GT(j.conn(src, 8, false, 2), 20 * healthy.conn(src, 8, false, 2));
      EXPECT_LT(j.conn(src, 8, false, 0), 0.2 * j.conn(src, 8, false, 2));
    }
  }
  {  // slow GPU 13 (interior of node 3's chain, no proxy events): its kernels start late.
    Job j(std::string(kTree) + ",fault=slow_gpu:13");
    const uint64_t h = j.hash_of.at("world");
    EXPECT_TRUE(j.files.at({h, 13}).ops.empty());
    for (int s = 0; s < 6; ++s) {
      uint64_t mine = 0, peers = 0;
      for (int r : {12, 13, 14, 15})
        for (const auto& k : j.files.at({h, r}).kernels)
          if (k.seq == s && k.channel == 0) (r == 13 ? mine : peers) = std::max(r == 13 ? mine : peers, k.start_clk);
      EXPECT_GT(mine, peers + 1000000) << "seq " << s;
    }
  }
}

TEST(SimulatorPipeline, SendRecvStructure) {
  Job job(kPipe);  // 4 stages (nodes) x 2 pipelines; 2 iterations x 4 microbatches
  ASSERT_EQ(job.sim.communicators().size(), 2u);
  for (const auto& c : job.sim.communicators()) {
    EXPECT_EQ(c.algorithm, "P2P");
    ASSERT_EQ(c.ranks.size(), 4u);
  }
  EXPECT_EQ(job.sim.communicators()[1].ranks, (std::vector<int>{1, 3, 5, 7}));
  EXPECT_THROW(job.sim.ring_next(0, 0), std::out_of_range);
  for (const auto& [key, f] : job.files) {
    const int stage = key.second;
    EXPECT_TRUE(f.seqs.empty()) << "no collective";
    int sends = 0, recvs = 0;
    for (const auto& n : f.p2p) (n == "Send" ? sends : recvs) += 1;
    const int per_dir = 2 * 4;  // iterations x microbatches
    EXPECT_EQ(sends, per_dir * ((stage < 3) + (stage > 0))) << "stage " << stage;
    EXPECT_EQ(recvs, per_dir * ((stage > 0) + (stage < 3))) << "stage " << stage;
    for (const auto& e : f.events)
      if (e["cat"] == "P2P" && e["ph"] == "b") {
        const auto& a = e["args"];
        EXPECT_EQ(a["CommHash"].get<uint64_t>(), key.first);
        EXPECT_EQ(a["Rank"], stage);
        EXPECT_EQ(std::abs(a["Peer"].get<int>() - stage), 1);
        EXPECT_EQ(a["Count"], 1048576);
        EXPECT_EQ(a["Datatype"], "ncclBfloat16");
        EXPECT_EQ(a["nChannels"], 2);
      }
    for (const auto& o : f.ops) {
      EXPECT_TRUE(o.p2p);
      EXPECT_GE(o.channel, 16);
      EXPECT_LT(o.channel, 32);
      EXPECT_EQ(o.n_steps, 8) << "1 MiB per channel in 128 KiB chunks";
      EXPECT_EQ(o.chunk, 131072u);
    }
  }
  // A send and the receive it feeds use the same channels at both ends.
  std::map<std::tuple<uint64_t, int, int>, std::set<int>> send_ch, recv_ch;  // comm, src, dst
  for (const auto& [key, f] : job.files)
    for (const auto& o : f.ops)
      (o.is_send ? send_ch[{key.first, key.second, o.peer}] : recv_ch[{key.first, o.peer, key.second}]).insert(o.channel);
  EXPECT_EQ(send_ch, recv_ch);
  EXPECT_EQ(send_ch.size(), 2u * 6u);  // per pipeline: 3 forward and 3 backward hops
  // Raw line of a P2P event, exactly in the plugin's key order.
  Simulation one(Scenario::parse("topology=pipeline,nodes=2,gpus=1,channels=1,seqs=1,microbatches=1,backward=0,bytes=1M,layout=flat"));
  const std::string c = one.render_host_nccl_json(0)[0].content;
  EXPECT_NE(c.find("{\"name\": \"Send\", \"cat\": \"P2P\", \"ph\": \"b\", \"id\": 0, \"pid\": "), std::string::npos) << c.substr(0, 300);
  EXPECT_NE(c.find(", \"args\": {\"CommHash\": " + std::to_string(one.comm_hash()) +
                   ", \"Rank\": 0, \"Peer\": 1, \"Count\": 524288, \"Datatype\": \"ncclBfloat16\", \"nChannels\": 1}},\n"),
            std::string::npos);
}

TEST(SimulatorPipeline, StagesInsideANodeUseNvlink) {
  // 2 nodes x 4 GPUs, 4 stages of 2 GPUs: stages 0, 1 on node 0, stages 2, 3 on node 1.
  Job job("topology=pipeline,nodes=2,gpus=4,stages=4,channels=2,seqs=1,bytes=1M");
  ASSERT_EQ(job.sim.communicators().size(), 2u);
  EXPECT_EQ(job.sim.communicators()[0].ranks, (std::vector<int>{0, 2, 4, 6}));
  for (const auto& [key, f] : job.files) {
    const int stage = key.second;
    EXPECT_FALSE(f.p2p.empty());
    for (const auto& o : f.ops) {
      EXPECT_TRUE((stage == 1 && o.peer == 2) || (stage == 2 && o.peer == 1)) << stage;
    }
    if (stage == 0 || stage == 3) {
      EXPECT_TRUE(f.ops.empty());
    }
  }
}

TEST(SimulatorPipeline, SlowGpuStallsItsNeighboursOnly) {
  Job healthy(kPipe), slow(std::string(kPipe) + ",fault=slow_gpu:4");  // stage 2 of pipeline 0
  // Its upstream sender waits for buffers (no credit), its downstream receivers for data.
  EXPECT_GT(slow.conn(2, 4, true, 1), 5 * healthy.conn(2, 4, true, 1) + 200);
  EXPECT_GT(slow.conn(4, 6, false, 0), 2 * healthy.conn(4, 6, false, 0));
  EXPECT_GT(slow.conn(6, 4, true, 1), 5 * healthy.conn(6, 4, true, 1) + 200);  // backward
  // The other pipeline shares no communicator with it: its files are identical.
  const uint64_t pp1 = slow.hash_of.at("pp1");
  for (int stage = 0; stage < 4; ++stage) {
    const auto& a = healthy.files.at({pp1, stage}).events;
    const auto& b = slow.files.at({pp1, stage}).events;
    EXPECT_EQ(a, b) << "stage " << stage;
  }
}

TEST(SimulatorMultiComm, OneFilePerCommunicator) {
  Job job(kMulti);
  const auto& comms = job.sim.communicators();
  ASSERT_EQ(comms.size(), 5u);  // world + one DP communicator per local index
  EXPECT_EQ(comms[0].name, "world");
  EXPECT_EQ(comms[0].hash, job.sim.comm_hash());
  EXPECT_EQ(job.sim.truth().comms.size(), 5u);
  std::set<uint64_t> hashes;
  int above = 0;
  for (const auto& c : comms) {
    hashes.insert(c.hash);
    above += c.hash > (1ull << 63);
  }
  EXPECT_EQ(hashes.size(), 5u);
  EXPECT_GE(above, 2);
  EXPECT_LE(above, 3);
  EXPECT_EQ(comms[2].name, "dp1");
  EXPECT_EQ(comms[2].ranks, (std::vector<int>{1, 5, 9, 13}));
  for (int r = 0; r < 16; ++r) {
    ASSERT_EQ(job.files_of[r].size(), 2u) << r;
  }
  for (const auto& [key, f] : job.files) {
    EXPECT_EQ(f.seqs, (std::vector<int>{0, 1, 2, 3, 4})) << "SeqNum counts per communicator";
    for (const auto& e : f.events)
      if (e["cat"] == "COLL" && e["ph"] == "b") {
        EXPECT_EQ(e["args"]["CommHash"].get<uint64_t>(), key.first);
        EXPECT_EQ(e["args"]["Rank"], key.second);
      }
    for (const auto& o : f.ops) EXPECT_EQ(o.comm, key.first);
  }
  // DP rings are all network hops: every DP file has a send and a receive per channel.
  for (const auto& [key, f] : job.files) {
    if (key.first != comms[0].hash) {
      EXPECT_EQ(f.ops.size(), 5u * 2u * 2u);
    }
  }
  // The plugin's id counters are per thread: a process's world file continues the ids of its
  // DP file, which is finalised first.
  const TFile& world5 = job.files.at({comms[0].hash, 5});
  for (const auto& e : world5.events)
    if (e["cat"] == "COLL" && e["ph"] == "b") {
      EXPECT_EQ(e["id"], 5) << "5 DP collectives printed before";
      break;
    }
  // ring_next/prev describe the world ring.
  EXPECT_EQ(job.sim.ring_next(0, 3), 4);
}

TEST(SimulatorMultiComm, FaultCrossesCommunicators) {
  Simulation healthy(Scenario::parse(kMulti)), slow(Scenario::parse(std::string(kMulti) + ",fault=slow_gpu:5"));
  // Rank 0 shares only the world with 5 (dp0 = {0, 4, 8, 12}); still its DP collectives start
  // later and later: the world AllReduce waits for 5 every iteration.
  auto dp0_start = [](const Simulation& sim, int iter) {
    const uint64_t dp0 = sim.communicators()[1].hash;
    for (const auto& c : sim.collectives())
      if (c.rank == 0 && c.comm_hash == dp0 && c.iter == iter) return c.kernel_start_ns;
    ADD_FAILURE() << "no dp0 collective";
    return 0.0;
  };
  for (int it = 1; it < 5; ++it) EXPECT_GT(dp0_start(slow, it) - dp0_start(healthy, it), 3.0e6 * it) << it;
  // In the world ring, 5's outbound connection shows the late GPU's mark (data waiting when
  // it runs: little SendGpuWait) as in the plain ring.
  Job j(std::string(kMulti) + ",fault=slow_gpu:5");
  const uint64_t w = j.hash_of.at("world");
  double own = -1;
  std::vector<double> others;
  for (const auto& [k, v] : j.means(true)) {
    if (std::get<0>(k) != w) continue;
    if (std::get<1>(k) == 5) own = v[0];
    else others.push_back(v[0]);
  }
  ASSERT_GE(own, 0);
  EXPECT_LT(own, 0.1 * median(others));
}

// Everything the general engine simulates obeys the same physics as the ring engine.
TEST(SimulatorFlow, TimelineIsConsistent) {
  for (const std::string& spec :
       {std::string(kTree) + ",fault=slow_gpu:6,fault=slow_link:7-8", std::string(kPipe) + ",comms=pp+world,fault=slow_consumer:3",
        std::string(kMulti) + ",fault=slow_flush:4", std::string("topology=tree,comms=world+dp,nodes=3,gpus=2,seqs=3,jitter=0.3,hetero=0.1")}) {
    SCOPED_TRACE(spec);
    Simulation sim(Scenario::parse(spec));
    ASSERT_FALSE(sim.proxy_ops().empty());
    for (const auto& op : sim.proxy_ops()) {
      EXPECT_GE(op.progress_ns, op.sched_ns);
      EXPECT_GE(op.end_ns, op.progress_ns);
      EXPECT_TRUE(std::isfinite(op.end_ns));
      EXPECT_GE(op.task, 0);
      EXPECT_EQ(sim.collectives()[op.task].rank, op.rank);
      for (int k = 0; k < op.n_steps; ++k) {
        const SimStep& st = op.steps[k];
        EXPECT_LE(op.progress_ns, st.t0);
        EXPECT_LE(st.t0, st.t1);
        EXPECT_LE(st.t1, st.t2);
        EXPECT_LE(st.t2, st.t3);
        if (k >= 8) {
          EXPECT_GE(st.t0, op.steps[k - 8].t3) << "8 credits per connection";
        }
      }
    }
    for (const auto& c : sim.collectives()) {
      EXPECT_LE(c.enqueue_ns, c.kernel_start_ns);
      EXPECT_TRUE(std::isfinite(c.end_ns));
      for (double ce : c.channel_end_ns) EXPECT_GT(ce, c.kernel_start_ns);
    }
    // Traces: ts never decrease inside a step, ops sit inside their operation.
    for (int node = 0; node < sim.scenario().nodes; ++node)
      for (const auto& rf : sim.render_host_nccl_json(node)) {
        TFile f = parse_trace(rf.content);
        for (const auto& o : f.ops) {
          EXPECT_LE(o.sched_b, o.progr_b);
          for (const auto& st : o.steps)
            for (int ph = 0; ph < 3; ++ph) EXPECT_LE(st.ts[ph], st.ts[ph + 1]);
        }
      }
  }
}

TEST(SimulatorFlow, Deterministic) {
  auto render = [](const std::string& spec) {
    Simulation sim(Scenario::parse(spec));
    std::string all;
    for (int node = 0; node < sim.scenario().nodes; ++node)
      for (const auto& f : sim.render_host_nccl_json(node)) all += f.name + "\n" + f.content;
    return all;
  };
  for (const std::string& spec : {std::string(kTree), std::string(kPipe), std::string(kMulti),
                                 std::string("nodes=2,gpus=2,seqs=3,hetero=0.2")}) {
    SCOPED_TRACE(spec);
    const std::string a = render(spec + ",jitter=0.3");
    EXPECT_EQ(a, render(spec + ",jitter=0.3"));
    EXPECT_NE(a, render(spec + ",jitter=0.3,seed=99"));
  }
}

TEST(SimulatorFlow, RingThroughTheGeneralEngine) {
  // The same ring, simulated by both engines: the same connections, similar waits.
  World ring(kSmall);
  Job flow(std::string(kSmall) + ",engine=flow");
  std::set<std::tuple<int, int, int, int>> a, b;  // rank, channel, is_send, peer
  for (const auto& [r, f] : ring.files)
    for (const auto& o : f.ops) a.insert({r, o.channel, o.is_send, o.peer});
  for (const auto& [key, f] : flow.files)
    for (const auto& o : f.ops) b.insert({key.second, o.channel, o.is_send, o.peer});
  EXPECT_EQ(a, b);
  std::vector<double> ra, rb, ga, gb;
  for (const auto& [k, v] : ring.conn_means(false, 0)) ra.push_back(v);
  for (const auto& [k, v] : flow.means(false)) rb.push_back(v[0]);
  for (const auto& [k, v] : ring.conn_means(true, 0)) ga.push_back(v);
  for (const auto& [k, v] : flow.means(true)) gb.push_back(v[0]);
  EXPECT_NEAR(median(rb), median(ra), 0.15 * median(ra));
  EXPECT_NEAR(median(gb), median(ga), 0.3 * median(ga));
  EXPECT_EQ(Simulation(Scenario::parse(std::string(kSmall) + ",engine=flow")).ring_next(1, 2), 3);
}

TEST(SimulatorFlow, TwoFaultsBothInTheTruth) {
  for (const std::string& spec : {std::string(kTree) + ",fault=slow_gpu:5,fault=slow_link:11-12",
                                 std::string(kPipe) + ",fault=slow_link:2-4,fault=slow_flush:7",
                                 std::string(kMulti) + ",fault=slow_consumer:6,fault=slow_gpu:9"}) {
    SCOPED_TRACE(spec);
    Simulation sim(Scenario::parse(spec));
    ASSERT_EQ(sim.truth().roots.size(), 2u);
    json gt = json::parse(ground_truth_json(sim.truth(), sim.processes()));
    ASSERT_EQ(gt["roots"].size(), 2u);
    EXPECT_EQ(gt["comms"].size(), sim.communicators().size());
    for (const auto& r : gt["roots"]) EXPECT_NE(r["host"], "");
  }
}

TEST(SimulatorFlow, HangStopsTheJob) {
  // Rank 3 (stage 1, pipeline 1) never starts iteration 1; with a world AllReduce every
  // iteration, everybody ends up waiting.
  Job j(std::string(kPipe) + ",comms=pp+world,fault=hang:3@1");
  EXPECT_EQ(j.sim.truth().roots.at(0).culprit_class, "hang");
  const uint64_t w = j.hash_of.at("world");
  EXPECT_EQ(j.files.at({w, 3}).seqs, (std::vector<int>{0}));
  int stuck = 0;
  for (const auto& [key, f] : j.files)
    for (const auto& o : f.ops) stuck += o.progr_e < o.progr_b;
  EXPECT_GT(stuck, 0);
  Job t(std::string(kTree) + ",fault=hang:8@3");
  EXPECT_EQ(t.files.at({t.hash_of.at("world"), 8}).seqs, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(t.files.at({t.hash_of.at("world"), 0}).seqs, (std::vector<int>{0, 1, 2, 3}));
}

TEST(SimulatorFlow, HeterogeneousHardware) {
  // hetero=0 is the identical cluster (the ring engine's output does not change); hetero>0
  // gives every GPU its own speed and every network link its own bandwidth, fixed for the run.
  auto sw_spread = [](const std::string& spec) {
    World w(spec);
    std::vector<double> v;
    for (const auto& [k, m] : w.conn_means(true, 2)) v.push_back(m);
    std::sort(v.begin(), v.end());
    return v.back() / v.front();
  };
  const std::string base = std::string(kSmall) + ",jitter=0.01,channels=1";
  EXPECT_GT(sw_spread(base + ",hetero=0.2"), sw_spread(base));
  Simulation a(Scenario::parse(base)), b(Scenario::parse(base + ",hetero=0.2"));
  EXPECT_NE(a.collectives().back().end_ns, b.collectives().back().end_ns);
}

TEST(SimulatorFlow, LargeJobsAreFast) {
  for (const char* spec : {"topology=tree,nodes=16,gpus=8,channels=2,seqs=20",
                           "topology=ring,comms=world+dp,nodes=16,gpus=8,channels=2,seqs=10",
                           "topology=pipeline,nodes=16,gpus=8,channels=2,seqs=4,bytes=8M"}) {
    auto t0 = std::chrono::steady_clock::now();
    Simulation sim(Scenario::parse(spec));
    size_t bytes = 0;
    for (int node = 0; node < 16; ++node)
      for (const auto& f : sim.render_host_nccl_json(node)) bytes += f.content.size();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(s, 30.0) << spec;
    std::printf("%s: simulate+render %.2f s, %zu bytes\n", spec, s, bytes);
  }
}

}  // namespace
}  // namespace culprit::mock
