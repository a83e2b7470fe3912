// Tests of the simulator (mock/): spec parsing, determinism, rings, the exact trace layout of
// NCCL's 2.27 example profiler, and the physics of every fault. These test the simulator,
// not the analyzer.
#include <gtest/gtest.h>

#include <algorithm>
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
  int rank = -1, seq = -1, channel = -1, peer = -1, n_steps = 0;
  bool is_send = false;
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
  std::vector<int> seqs;
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
        f.seqs.push_back(seq);
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
  EXPECT_NE(msg("topology=tree").find("tree"), std::string::npos);
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

}  // namespace
}  // namespace culprit::mock
