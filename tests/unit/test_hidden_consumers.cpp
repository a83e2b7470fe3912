// hidden_consumers: a slow consumer named from its network receives shares its score with the
// GPUs of its node and communicator that receive over NVLink only.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/hidden_consumers.hpp"
#include "analysis/score.hpp"
#include "pass_fixtures.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0x4242ull;

// A ring over two nodes of two GPUs (nodeA: 0 1, nodeB: 2 3) on one channel: 1 -> 2 enters
// nodeB, 3 -> 0 enters nodeA; 2 passes to 3 and 0 to 1 over NVLink, unrecorded. GPU 2's
// network receives are slow to consume, so it is named gpu_consumer.
struct Ring {
  Observations obs;
  std::vector<EdgeFacts> facts;
  std::vector<Evidence> evidence = std::vector<Evidence>(4);
  std::vector<uint32_t> roots{2};

  Ring() {
    test::add_collective_processes(obs, kComm, {"nodeA", "nodeA", "nodeB", "nodeB"});
    test::add_connection(obs, facts, kComm, 1, 2, 0, 10).slow_consume = true;
    test::add_connection(obs, facts, kComm, 3, 0, 0, 10);
    evidence[2].offer(5e6, CulpritClass::kGpuConsumer, std::nullopt, 8.0);
  }
  std::vector<HiddenConsumerCandidates> candidates() {
    ProcessContext context(obs);
    return hidden_consumer_candidates(obs, facts, context, evidence, roots);
  }
};

TEST(HiddenConsumers, AnEntryFeedingAGpuThatNeverReceivesFromTheNetworkSharesWithIt) {
  Ring ring;
  const auto found = ring.candidates();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].named, 2u);
  EXPECT_EQ(found[0].hidden, std::vector<uint32_t>{3});
  EXPECT_EQ(found[0].entries, 1u);
  EXPECT_DOUBLE_EQ(found[0].share(), 0.5);
}

TEST(HiddenConsumers, AConsumerNamedByTheCreditItWithheldSharesAlike) {
  // An input without RecvGpuWait (probing's exports): GPU 2 was named gpu_consumer because it
  // withheld its sender's credit (receiver_explanations.hpp). A slow GPU 3 behind it would hold
  // its buffers the same way.
  Ring ring;
  ring.facts[0].slow_consume = false;
  ring.facts[0].no_credit = true;
  const auto found = ring.candidates();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].named, 2u);
  EXPECT_EQ(found[0].hidden, std::vector<uint32_t>{3});
  // Neither slow to consume nor withholding credit: nothing says where its consumption was judged.
  ring.facts[0].no_credit = false;
  EXPECT_TRUE(ring.candidates().empty());
}

TEST(HiddenConsumers, NobodyIsHiddenWhereEveryGpuOfTheNodeIsAnEntry) {
  Ring ring;
  // A second channel runs the ring the other way: 2 -> 1 enters nodeA, 0 -> 3 enters nodeB.
  test::add_connection(ring.obs, ring.facts, kComm, 2, 1, 1, 10);
  test::add_connection(ring.obs, ring.facts, kComm, 0, 3, 1, 10);
  EXPECT_TRUE(ring.candidates().empty());
}

TEST(HiddenConsumers, AGpuExplainedByItsOwnEvidenceIsNoCandidate) {
  Ring ring;
  ring.evidence[3].offer(1e6, CulpritClass::kGpuProducer, std::nullopt, 3.0);  // its kernels run late
  EXPECT_TRUE(ring.candidates().empty());
}

TEST(HiddenConsumers, AGpuThatReceivesFromTheNetworkElsewhereIsSeenThere) {
  Ring ring;
  // GPU 3 also holds rank 1 of a data-parallel pair with GPU 1 and receives from it there,
  // where its consumption looks normal.
  test::add_comm_ranks(ring.obs, 0x5151, {1, 3});
  test::add_connection(ring.obs, ring.facts, 0x5151, 0, 1, 0, 10).dst = 3;
  ring.facts.back().src = 1;
  EXPECT_TRUE(ring.candidates().empty());
}

TEST(HiddenConsumers, OnlyARootNamedGpuConsumerIsJudged) {
  Ring victim;
  victim.roots = {};
  EXPECT_TRUE(victim.candidates().empty());
  Ring flush;
  flush.evidence[2] = {};
  flush.evidence[2].offer(5e6, CulpritClass::kFlush, std::nullopt, 8.0);
  EXPECT_TRUE(flush.candidates().empty());
}

TEST(HiddenConsumers, TheScoreIsScaledAndTheHiddenGpusAreNamed) {
  Ring ring;
  const double alone = calibrated_score(ring.evidence[2]);
  ProcessContext context(ring.obs);
  std::vector<std::string> notes;
  share_with_hidden_consumers(ring.candidates(), context, ring.evidence, notes);
  EXPECT_DOUBLE_EQ(ring.evidence[2].identified_share, 0.5);
  EXPECT_NEAR(calibrated_score(ring.evidence[2]), alone / 2, 1e-12);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("gpu_consumer nodeB:102"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("by nodeB:103, which receives only over NVLink"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("1 of 2"), std::string::npos) << notes[0];
  // A hang is unambiguous: stopping resets the share.
  ring.evidence[2].stop();
  EXPECT_DOUBLE_EQ(ring.evidence[2].identified_share, 1.0);
}

// Entries of one node held alike: a slow GPU holds every entry before it as long. Measured on
// fresh seed 11057 (a tree 4x4x6 under LL, a 2.43x consumer on one of three entries of a node
// whose chain meets the network at one end): 22.4, 22.7 and 22.2 ms, the longest a healthy
// GPU's, named at 0.98.
TEST(HiddenConsumers, EntriesOfTheNodeHeldAlikeShareTheScore) {
  Ring ring;
  test::add_connection(ring.obs, ring.facts, kComm, 0, 3, 1, 10).slow_consume = true;  // GPU 3 an entry too
  ring.evidence[2] = Evidence{};
  ring.evidence[2].offer(22.7e6, CulpritClass::kGpuConsumer, std::nullopt, 8.0);
  ring.evidence[3].offer(22.4e6, CulpritClass::kGpuConsumer, std::nullopt, 8.0);
  auto found = ring.candidates();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].hidden.empty());
  EXPECT_EQ(found[0].entries, 2u);
  EXPECT_EQ(found[0].alike, std::vector<uint32_t>{3});
  EXPECT_DOUBLE_EQ(found[0].share(), 0.5);
  std::vector<std::string> notes;
  share_with_hidden_consumers(found, ProcessContext(ring.obs), ring.evidence, notes);
  EXPECT_DOUBLE_EQ(ring.evidence[2].identified_share, 0.5);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("nodeB:103 on the same node held its about as long"), std::string::npos) << notes[0];
  // Held less than half as long: its own, not the named one's alike; nothing to share.
  ring.evidence[3] = Evidence{};
  ring.evidence[3].offer(9e6, CulpritClass::kGpuConsumer, std::nullopt, 8.0);
  EXPECT_TRUE(ring.candidates().empty());
  // Evidence of another class (its own work measured slow) is no hold alike.
  ring.evidence[3] = Evidence{};
  ring.evidence[3].offer(22.4e6, CulpritClass::kGpuProducer, std::nullopt, 8.0);
  EXPECT_TRUE(ring.candidates().empty());
}

}  // namespace
}  // namespace culprit
