// A root's job_share (its cost as a share of all processes' time inside NCCL) against the
// simulator's counterfactual: the same run without the fault.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "comm/communicator.hpp"
#include "mock/simulator.hpp"
#include "pipeline/analyze.hpp"

namespace culprit {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  nlohmann::json verdict;
  double slowdown = 0;
};

Outcome analyse(const std::string& spec) {
  fs::path dir = fs::temp_directory_path() / ("culprit-job-share-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  mock::Simulation sim(mock::Scenario::parse(spec));
  sim.measure_effect();
  sim.write((dir / "data").string());
  AnalyzeOptions o;
  o.shared = (dir / "data").string();
  o.output = (dir / "out.h5").string();
  o.json = (dir / "out.json").string();
  o.quiet = true;
  auto comm = make_serial_communicator();
  EXPECT_EQ(run_analyze(o, *comm), kExitOk);
  Outcome out{nlohmann::json::parse(std::ifstream(dir / "out.json")), sim.truth().slowdown};
  fs::remove_all(dir);
  return out;
}

const std::string kRing = "topology=ring,nodes=4,gpus=4,channels=2,seqs=12,bytes=16M";

TEST(JobShare, ASlowGpusShareGrowsWithWhatItCostTheJob) {
  Outcome mild = analyse(kRing + ",fault=slow_gpu:6:1.5");
  Outcome gross = analyse(kRing + ",fault=slow_gpu:6:3");
  ASSERT_FALSE(mild.verdict["culprits"].empty());
  ASSERT_FALSE(gross.verdict["culprits"].empty());
  double a = mild.verdict["culprits"][0]["job_share"], b = gross.verdict["culprits"][0]["job_share"];
  EXPECT_GT(a, 0.0);
  EXPECT_LT(a, b);
  EXPECT_LE(b, 1.0);
  // The job spent slowdown / (1 + slowdown) of its time on the fault; inside NCCL, where the
  // others waited for it, the share is of the same order.
  for (const Outcome* o : {&mild, &gross}) {
    double share = o->verdict["culprits"][0]["job_share"];
    double lost = o->slowdown / (1 + o->slowdown);
    EXPECT_GT(share, lost / 3) << "slowdown " << o->slowdown;
    EXPECT_LT(share, lost * 3 + 0.05) << "slowdown " << o->slowdown;
  }
}

TEST(JobShare, AFaultInsideNcclIsNotGuessed) {
  Outcome link = analyse(kRing + ",fault=slow_link:3-4:4");
  ASSERT_FALSE(link.verdict["culprits"].empty());
  EXPECT_TRUE(link.verdict["culprits"][0]["job_share"].is_null());  // NaN: not measurable here
}

TEST(JobShare, AHangStopsEveryoneWhoWaitsOnIt) {
  Outcome hang = analyse(kRing + ",fault=hang:6");
  ASSERT_EQ(hang.verdict["culprits"].size(), 1u);
  EXPECT_DOUBLE_EQ(hang.verdict["culprits"][0]["job_share"].get<double>(), 1.0);
}

}  // namespace
}  // namespace culprit
