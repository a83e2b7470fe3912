// The simulator's memory (docs/simulator.md, "Memory"): what a Simulation keeps (Retention),
// the step summaries its renderers read instead of every step, and the records spilled to a
// temporary file. Byte identity with earlier versions is tests/accuracy/sim_identity.py's job;
// these tests check that what is kept does not change what is written.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "mock/records.hpp"
#include "mock/render_flight_recorder.hpp"
#include "mock/render_probing.hpp"
#include "mock/sim_internal.hpp"
#include "mock/simulator.hpp"

namespace culprit::mock {
namespace {

const std::vector<std::string> kSpecs = {
    "topology=ring,nodes=3,gpus=4,channels=2,seqs=4,seed=3",
    "topology=ring,nodes=2,gpus=4,channels=1,seqs=18,bytes=1M,fault=hang:5@17",  // stale pool slots
    "topology=ring,nodes=4,gpus=2,channels=2,seqs=3,bytes=16M,fault=slow_link:3-4,engine=flow",
    "topology=tree,nodes=4,gpus=2,channels=2,seqs=3,bytes=4M,fault=hang:5@2",
    "topology=pipeline,nodes=4,gpus=2,channels=2,seqs=3,bytes=1M,fault=hang:3@1",  // sends done, steps unsent
    "topology=ring,comms=world+dp,nodes=3,gpus=2,channels=2,seqs=3,bytes=4M,fault=slow_consumer:2",
    // more steps a connection than the general engine keeps the times of (kConnWindow)
    "topology=tree,nodes=3,gpus=2,channels=2,seqs=3,bytes=32M,fault=slow_consumer:3",
    "topology=pipeline,comms=pp+world,nodes=4,gpus=2,stages=8,channels=2,seqs=3,bytes=8M,fault=hang:5@2",
};

// Every file of every node, in three formats.
std::vector<std::string> all_files(const Simulation& sim) {
  std::vector<std::string> out;
  for (int node = 0; node < sim.scenario().nodes; ++node) {
    std::vector<RenderedFile> files = sim.render_host_nccl_json(node);
    for (auto& f : render_host_probing(sim, node, parse_probing_format("probing-csv+coll_perf"))) files.push_back(f);
    for (auto& f : render_host_flight_recorder(sim, node, parse_flight_recorder_format("flight-recorder+json+all")))
      files.push_back(f);
    for (const RenderedFile& f : files) out.push_back(std::to_string(node) + "/" + f.name + "\n" + f.content);
  }
  return out;
}

TEST(SimStreaming, WhatIsKeptDoesNotChangeTheFiles) {
  for (const std::string& spec : kSpecs) {
    SCOPED_TRACE(spec);
    const Scenario sc = Scenario::parse(spec);
    const std::vector<std::string> whole = all_files(Simulation(sc));
    EXPECT_EQ(all_files(Simulation(sc, Retention::nodes_only())), whole);
    Retention spill_all = Retention::nodes_only();
    spill_all.memory_budget = 1;  // every record goes through the temporary file
    EXPECT_EQ(all_files(Simulation(sc, spill_all)), whole);
  }
}

TEST(SimStreaming, StepSummariesAgreeWithEveryStep) {
  for (const std::string& spec : kSpecs) {
    SCOPED_TRACE(spec);
    Simulation sim(Scenario::parse(spec));
    for (int node = 0; node < sim.scenario().nodes; ++node)
      for (const ProxyOpRecord& rec : sim.node_timeline(node).proxy_ops) {
        const SimProxyOp& full = sim.proxy_ops().at(size_t(rec.index));
        ASSERT_EQ(int(full.steps.size()), rec.steps.n_steps);
        int started = 0, transferred = 0;
        while (started < full.n_steps && std::isfinite(full.steps[size_t(started)].t0)) ++started;
        double first_phase = 0;
        for (const SimStep& st : full.steps) {
          transferred += std::isfinite(full.is_send ? st.t2 : st.t1);
          first_phase += st.t1 - st.t0;
        }
        EXPECT_EQ(rec.steps.started, started);
        EXPECT_EQ(rec.steps.transferred, transferred);
        if (std::isfinite(full.end_ns)) {
          EXPECT_EQ(full.is_send ? rec.steps.phase[0] : rec.steps.phase[3], first_phase);
        }
        for (int k = std::max(0, started - StepSummary::kKept); k < full.n_steps; ++k) {
          const SimStep kept = rec.steps.step(k), st = full.steps[size_t(k)];
          EXPECT_EQ(kept.step, st.step);
          EXPECT_EQ(kept.t0, st.t0);
          EXPECT_EQ(kept.t1, st.t1);
          EXPECT_EQ(kept.t2, st.t2);
          EXPECT_EQ(kept.t3, st.t3);
        }
      }
  }
}

TEST(SimStreaming, OnlyTheNodesAskedForAreKept) {
  const Scenario sc = Scenario::parse(kSpecs[0]);
  Simulation whole(sc);
  Simulation even(sc, Retention::nodes_only([](int node) { return node % 2 == 0; }));
  EXPECT_EQ(even.render_host_nccl_json(2)[0].content, whole.render_host_nccl_json(2)[0].content);
  EXPECT_THROW(even.node_timeline(1), std::logic_error);
  EXPECT_THROW(even.collectives(), std::logic_error);
  EXPECT_THROW(even.proxy_ops(), std::logic_error);
  EXPECT_TRUE(whole.node_timeline(1).operations.size() == size_t(sc.gpus * sc.seqs));
}

TEST(SimStreaming, KeepingNothingStillTimesTheJob) {
  for (const std::string& spec : kSpecs) {
    SCOPED_TRACE(spec);
    const Scenario sc = Scenario::parse(spec);
    Simulation whole(sc), nothing(sc, Retention::nothing());
    double end = 0;
    for (const SimCollective& c : whole.collectives()) end = std::max(end, c.end_ns);
    EXPECT_EQ(nothing.job_end_ns(), end);
    EXPECT_EQ(nothing.dump_time_ns(), whole.dump_time_ns());
    EXPECT_THROW(nothing.node_timeline(0), std::logic_error);
  }
}

// The general engine runs a pipeline iteration by iteration, but its records keep the indices
// of the whole run's build (each rank's operations of every iteration together): every proxy
// op names its own operation, and each node's records come back in index order.
TEST(SimStreaming, GeneralEngineRecordsKeepTheirIndices) {
  const Scenario sc = Scenario::parse(
      "topology=pipeline,comms=pp+world,nodes=4,gpus=2,stages=4,channels=2,seqs=3,bytes=1M,fault=slow_gpu:3");
  Simulation sim(sc);
  const std::vector<SimCollective>& colls = sim.collectives();
  // Per iteration and pipeline (2 of them): 4 microbatches x 2 operations at each end stage and
  // x 4 at each inner one, plus every rank's world AllReduce.
  ASSERT_EQ(colls.size(), size_t(2 * sc.seqs * (2 * 9 + 2 * 17)));
  for (size_t i = 0; i < colls.size(); ++i) ASSERT_GE(colls[i].iter, 0) << "every operation in its place";
  for (size_t i = 1; i < colls.size(); ++i) {
    ASSERT_LE(colls[i - 1].rank, colls[i].rank) << "a rank's operations of every iteration come together";
    if (colls[i - 1].rank == colls[i].rank) {
      EXPECT_LE(colls[i - 1].iter, colls[i].iter);
    }
  }
  for (const SimProxyOp& op : sim.proxy_ops()) {
    const SimCollective& c = colls.at(size_t(op.task));
    EXPECT_EQ(c.rank, op.rank);
    EXPECT_EQ(c.comm_hash, op.comm_hash);
    EXPECT_EQ(c.seq, op.seq);
  }
  for (int node = 0; node < sc.nodes; ++node) {
    const NodeTimeline t = sim.node_timeline(node);
    for (size_t i = 1; i < t.operations.size(); ++i) EXPECT_LT(t.operations[i - 1].index, t.operations[i].index);
    for (size_t i = 1; i < t.proxy_ops.size(); ++i) EXPECT_LT(t.proxy_ops[i - 1].index, t.proxy_ops[i].index);
  }
}

// A connection of the general engine keeps the times of its latest steps only: each kind of
// event comes in step order, and a read of a step not yet known or out of the window is a bug.
TEST(SimStreaming, AStepWindowKeepsTheLatestSteps) {
  StepWindow w;
  for (int k = 0; k < 40; ++k) w.push(k, 10.0 * k);
  EXPECT_TRUE(w.has(39));
  EXPECT_FALSE(w.has(40));
  EXPECT_EQ(w[39], 390.0);
  EXPECT_EQ(w[40 - kConnWindow], 10.0 * (40 - kConnWindow));
  EXPECT_THROW(w[39 - kConnWindow], std::logic_error);  // fell out of the window
  EXPECT_THROW(w[40], std::logic_error);                // not known yet
  EXPECT_THROW(w.push(41, 1.0), std::logic_error);      // out of step order
}

// A lane's primitives, generated as it runs: the ring's per-loop send, K-1 recv-reduce-sends and
// final receive; a lockstep lane's step k of every connection.
TEST(SimStreaming, LanePrograms) {
  const FlowLaneProgram ring = FlowLaneProgram::ring(7, 9, 3, 2);  // in 7, out 9, K = 3, 2 loops
  ASSERT_EQ(ring.size(), 8u);
  std::vector<std::string> got;
  FlowIO io[2 * kLaneConns];
  for (uint32_t j = 0; j < ring.size(); ++j) {
    int ni = 0, no = 0;
    ring.prim(j, io, ni, no);
    std::string p;
    for (int i = 0; i < ni + no; ++i)
      p += (i < ni ? "r" : "s") + std::to_string(io[i].conn) + "." + std::to_string(io[i].step) + " ";
    got.push_back(p);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"s9.0 ", "r7.0 s9.1 ", "r7.1 s9.2 ", "r7.2 ", "s9.3 ", "r7.3 s9.4 ",
                                           "r7.4 s9.5 ", "r7.5 "}));
  const FlowLaneProgram root = FlowLaneProgram::lockstep({1, 2}, {3, 4}, 5);
  int ni = 0, no = 0;
  root.prim(4, io, ni, no);
  ASSERT_EQ(ni, 2);
  ASSERT_EQ(no, 2);
  EXPECT_EQ(io[1].conn, 2);
  EXPECT_EQ(io[3].conn, 4);
  EXPECT_EQ(io[3].step, 4);
  EXPECT_THROW(FlowLaneProgram::lockstep({1, 2, 3, 4, 5}, {}, 1), std::logic_error);
}

TEST(SimStreaming, AStepLogKeepsTheLastStartedSteps) {
  const double inf = INFINITY;
  StepLog log(100, false);
  for (int k = 0; k < 60; ++k) log.sent(k, SimStep{k, 10.0 * k, 10.0 * k + 1, 10.0 * k + 2, 10.0 * k + 3});
  EXPECT_EQ(log.summary().phase[2], 60.0);  // SendWait, 1 ns a step
  for (int k = 60; k < 100; ++k) log.sent(k, SimStep{k, inf, inf, inf, inf});  // never started
  const StepSummary& s = log.summary();
  EXPECT_EQ(s.started, 60);
  EXPECT_EQ(s.transferred, 60);
  EXPECT_EQ(s.last, 593.0);
  EXPECT_EQ(s.step(59).t3, 593.0);
  EXPECT_EQ(s.step(28).t0, 280.0);
  EXPECT_EQ(s.step(70).t0, inf);
  EXPECT_THROW(s.step(27), std::logic_error);  // older than the kept window

  StepLog recv(20, false);
  recv.received(0, 1, 2, 3);
  recv.received(1, inf, inf, inf);
  EXPECT_THROW(recv.received(2, inf, 5, 6), std::logic_error);  // a time on a step that never started
  recv.freed(0, 4);
  EXPECT_EQ(recv.summary().step(0).t3, 4.0);
  EXPECT_THROW(recv.freed(1, 7), std::logic_error);
}

}  // namespace
}  // namespace culprit::mock
