// The pipeline under real mpirun with 1, 2 and 4 ranks: collectives, the exchange, the
// whole analysis, and failures that must not hang anyone.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "mock/mock_source.hpp"
#include "mock/simulator.hpp"
#include "mpi_world.hpp"
#include "output/results_io.hpp"
#include "pipeline/analyze.hpp"
#include "pipeline/exchange.hpp"

namespace culprit {
namespace {
namespace fs = std::filesystem;

// A directory shared by all ranks of this test job (same host), created by rank 0.
std::string job_dir(const std::string& name) {
  Communicator& w = test_world();
  std::string dir = (fs::temp_directory_path() / ("culprit_mpi_" + std::to_string(w.size()) + "_" + name)).string();
  if (w.rank() == 0) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  w.all_agree(true);  // barrier
  return dir;
}

TEST(Mpi, AllAgreeIsFalseWhenOneRankFails) {
  Communicator& w = test_world();
  EXPECT_TRUE(w.all_agree(true));
  EXPECT_EQ(w.all_agree(w.rank() != w.size() - 1), false);
}

TEST(Mpi, AllGatherBytesKeepsRankOrderAndSizes) {
  Communicator& w = test_world();
  std::vector<char> mine(static_cast<size_t>(w.rank() + 1), static_cast<char>('a' + w.rank()));
  std::vector<std::vector<char>> all = w.all_gather_bytes(mine);
  ASSERT_EQ(all.size(), static_cast<size_t>(w.size()));
  for (int r = 0; r < w.size(); ++r) {
    ASSERT_EQ(all[r].size(), static_cast<size_t>(r + 1));
    EXPECT_EQ(all[r][0], static_cast<char>('a' + r));
  }
  EXPECT_EQ(w.all_max({static_cast<uint64_t>(w.rank()), 7})[0], static_cast<uint64_t>(w.size() - 1));
  EXPECT_EQ(w.all_sum({1})[0], static_cast<uint64_t>(w.size()));
}

TEST(Mpi, GatherBytesReachesRankZeroOnlyInRankOrder) {
  Communicator& w = test_world();
  std::vector<char> mine(static_cast<size_t>(2 * w.rank()), static_cast<char>('a' + w.rank()));  // rank 0 sends none
  std::vector<std::vector<char>> all = w.gather_bytes(mine);
  if (w.rank() != 0) {
    EXPECT_TRUE(all.empty());
    return;
  }
  ASSERT_EQ(all.size(), static_cast<size_t>(w.size()));
  for (int r = 0; r < w.size(); ++r) {
    ASSERT_EQ(all[r].size(), static_cast<size_t>(2 * r));
    if (r > 0) {
      EXPECT_EQ(all[r][1], static_cast<char>('a' + r));
    }
  }
}

// With a deadline every collective runs point-to-point through rank 0 (the star): the same
// results as MPI's own collectives while every rank answers, and nobody silent.
TEST(Mpi, CollectivesUnderADeadlineGiveTheSameResults) {
  Communicator& w = test_world();
  w.set_deadline(30);
  EXPECT_TRUE(w.all_agree(true));
  EXPECT_FALSE(w.all_agree(w.rank() != w.size() - 1));
  EXPECT_EQ(w.all_max({static_cast<uint64_t>(w.rank()), 7})[0], static_cast<uint64_t>(w.size() - 1));
  EXPECT_EQ(w.all_sum({1, 2})[1], static_cast<uint64_t>(2 * w.size()));
  std::vector<char> mine(static_cast<size_t>(w.rank() + 1), static_cast<char>('a' + w.rank()));
  std::vector<std::vector<char>> all = w.all_gather_bytes(mine);
  ASSERT_EQ(all.size(), static_cast<size_t>(w.size()));
  for (int r = 0; r < w.size(); ++r)
    EXPECT_EQ(all[r], std::vector<char>(static_cast<size_t>(r + 1), static_cast<char>('a' + r)));
  std::vector<std::vector<char>> at_root = w.gather_bytes(mine);
  EXPECT_EQ(at_root.size(), w.rank() == 0 ? static_cast<size_t>(w.size()) : 0u);
  std::vector<char> root_says = w.broadcast_bytes(w.rank() == 0 ? std::vector<char>{'o', 'k'} : std::vector<char>{});
  EXPECT_EQ(root_says, (std::vector<char>{'o', 'k'}));
  EXPECT_TRUE(w.silent_ranks().empty());
  w.set_deadline(0);  // the other tests use MPI's collectives
}

TEST(Mpi, GatherMergesTheTwoHalvesOfEveryConnection) {
  Communicator& w = test_world();
  const int n = w.size();
  NodeSummary mine;
  mine.processes.push_back({"host" + std::to_string(w.rank()), 100, -1, ""});
  GlobalCommRank cr;
  cr.comm_hash = 0xABCDEF0123456789ull;
  cr.rank = w.rank();
  cr.process = 0;
  mine.comm_ranks.push_back(cr);
  // This rank sends to rank+1 and receives from rank-1: it holds one half of two edges.
  EdgeSummary send;
  send.key = {cr.comm_hash, w.rank(), (w.rank() + 1) % n, 0, 0};
  send.phase_ns[kSendWait] = 1000;
  send.send_steps = 10;
  EdgeSummary recv;
  recv.key = {cr.comm_hash, (w.rank() + n - 1) % n, w.rank(), 0, 0};
  recv.phase_ns[kRecvWait] = 2000;
  recv.recv_steps = 10;
  mine.edges = {send, recv};
  Observations obs;
  std::vector<InputReport> inputs;
  gather_observations(w, mine, 20, &obs, &inputs);
  if (w.rank() != 0) {
    EXPECT_TRUE(obs.edges.empty());
    return;
  }
  EXPECT_EQ(obs.processes.size(), static_cast<size_t>(n));
  ASSERT_EQ(obs.edges.size(), static_cast<size_t>(n));
  // Edge r -> r+1 is merged from rank r's send half and rank r+1's receive half (with one
  // rank both halves are the self edge 0 -> 0): every edge has each half exactly once.
  std::vector<int> edges_from(static_cast<size_t>(n), 0);
  for (const EdgeSummary& e : obs.edges) {
    EXPECT_EQ(e.key.comm_hash, cr.comm_hash);
    ASSERT_GE(e.key.src_rank, 0);
    ASSERT_LT(e.key.src_rank, n);
    EXPECT_EQ(e.key.dst_rank, (e.key.src_rank + 1) % n);
    ++edges_from[static_cast<size_t>(e.key.src_rank)];
    EXPECT_EQ(e.send_steps, 10u);
    EXPECT_EQ(e.recv_steps, 10u);
    EXPECT_EQ(e.phase_ns[kRecvWait], 2000u);
    EXPECT_EQ(e.phase_ns[kSendWait], 1000u);
  }
  for (int r = 0; r < n; ++r) EXPECT_EQ(edges_from[static_cast<size_t>(r)], 1) << "edges from rank " << r;
}

TEST(Mpi, AnalyzeMockFindsTheSlowLinkOnEveryRankCount) {
  Communicator& w = test_world();
  std::string dir = job_dir("mock");
  AnalyzeOptions o;
  o.source = std::make_shared<mock::MockSource>("topology=ring,nodes=4,gpus=4,channels=2,seqs=8,seed=3,fault=slow_link:7-8");
  o.output = dir + "/out.h5";
  o.quiet = true;
  o.reduce = "cpu";
  ASSERT_EQ(run_analyze(o, w), kExitOk);
  if (w.rank() == 0) {
    AnalysisResults r = read_results_h5(o.output);
    EXPECT_EQ(r.info.analyzer_ranks, w.size());
    EXPECT_EQ(r.info.status, "ok");
    ASSERT_FALSE(r.culprits.empty());
    EXPECT_EQ(r.culprits[0].culprit_class, "network_link");
    EXPECT_EQ(r.culprits[0].host, "node001");
    EXPECT_EQ(r.processes.size(), 16u);
  }
}

TEST(Mpi, NodesWithoutInputDoNotHangTheOthers) {
  Communicator& w = test_world();
  std::string dir = job_dir("partial");
  if (w.rank() == 0) {
    mock::Simulation sim(mock::Scenario::parse("nodes=2,gpus=4,seqs=6,fault=slow_consumer:4"));
    sim.write(dir + "/data");
  }
  w.all_agree(true);
  AnalyzeOptions o;
  // Rank r reads node00r: with more than 2 ranks, ranks 2 and 3 find no directory.
  o.input = dir + "/data/node00{rank}";
  setenv("NCCL_CULPRIT_HOST", "node00{rank}", 1);  // each rank plays its own node
  o.output = dir + "/out.h5";
  o.quiet = true;
  o.reduce = "cpu";
  int code = run_analyze(o, w);
  unsetenv("NCCL_CULPRIT_HOST");
  ASSERT_EQ(code, kExitOk);
  if (w.rank() == 0) {
    AnalysisResults r = read_results_h5(o.output);
    // Partial only when a node's data is missing: with more than 2 ranks, ranks 2 and 3 have
    // none. One rank reads node000 alone (node001's ends are a note, not missing data).
    EXPECT_EQ(r.info.status, w.size() > 2 ? "partial" : "ok");
    ASSERT_FALSE(r.culprits.empty());
  }
}

TEST(Mpi, NoDataAnywhereIsExitThreeOnEveryRank) {
  Communicator& w = test_world();
  std::string dir = job_dir("empty");
  AnalyzeOptions o;
  o.input = dir + "/does-not-exist-{rank}";
  o.output = dir + "/out.h5";
  o.quiet = true;
  EXPECT_EQ(run_analyze(o, w), kExitNoData);
  EXPECT_FALSE(fs::exists(o.output));
}

}  // namespace
}  // namespace culprit
