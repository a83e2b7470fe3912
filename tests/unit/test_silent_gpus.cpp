// silent_gpus_beside_roots / note_silent_gpus_beside_roots: the GPUs of a root's node that no
// record names, said in the notes.
#include "analysis/silent_gpus.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace culprit {
namespace {

// Three nodes of seven GPUs in blocks (node k: global ranks 7k .. 7k+6), of which only each
// node's network GPUs recorded anything, as in probing's exports of a ring: its first and its
// last. Process i is the i-th of those: node0 rank 0, node0 rank 6, node1 rank 7, ...
struct NetworkGpusOnly {
  Observations obs;
  std::vector<Evidence> evidence;
  NetworkGpusOnly() {
    for (int64_t node = 0; node < 3; ++node)
      for (int64_t rank : {7 * node, 7 * node + 6})
        obs.processes.push_back({"node" + std::to_string(node), -1, rank, ""});
    evidence.resize(obs.processes.size());
  }
};

TEST(SilentGpus, ARootNamedForItsGpuTimeIsGivenTheRanksOfItsNodeThatNobodyHolds) {
  NetworkGpusOnly job;
  job.evidence[2].offer(1e8, CulpritClass::kGpuProducer);  // node1 rank 7
  const std::vector<SilentNodeGpus> found = silent_gpus_beside_roots({2}, job.evidence, job.obs.processes);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].root, 2u);
  EXPECT_EQ(found[0].ranks, (std::vector<int64_t>{8, 9, 10, 11, 12}));
  const ProcessContext context(job.obs);
  std::vector<std::string> notes;
  note_silent_gpus_beside_roots(found, job.evidence, context, notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("node1 rank 7, named gpu_producer, has 5 GPU(s) of its node that recorded nothing "
                          "(global rank(s) 8-12"),
            std::string::npos)
      << notes[0];
}

TEST(SilentGpus, NothingIsSaidOfALinkAHangANodeSeenWholeOrAJobLaunchedOtherwise) {
  NetworkGpusOnly link;  // a wire's root: the GPUs behind it do not make a wire slow
  link.evidence[2].offer(1e8, CulpritClass::kNetworkLink, 4u);
  EXPECT_TRUE(silent_gpus_beside_roots({2}, link.evidence, link.obs.processes).empty());
  NetworkGpusOnly hang;  // a stopped GPU: its own records say where it stopped
  hang.evidence[2].stop();
  EXPECT_TRUE(silent_gpus_beside_roots({2}, hang.evidence, hang.obs.processes).empty());

  // Every GPU of the root's node recorded: nothing silent.
  Observations whole;
  for (int64_t r = 0; r < 8; ++r) whole.processes.push_back({"node" + std::to_string(r / 4), -1, r, ""});
  std::vector<Evidence> evidence(whole.processes.size());
  evidence[1].offer(1e8, CulpritClass::kGpuConsumer);
  EXPECT_TRUE(silent_gpus_beside_roots({1}, evidence, whole.processes).empty());

  // Round-robin placement (node0 the even ranks, node1 the odd ones, rank 5 silent): no block
  // layout, so no rank is placed on the root's node.
  Observations round_robin;
  for (int64_t r = 0; r < 8; ++r)
    if (r != 5) round_robin.processes.push_back({"node" + std::to_string(r % 2), -1, r, ""});
  std::vector<Evidence> rr_evidence(round_robin.processes.size());
  rr_evidence[1].offer(1e8, CulpritClass::kGpuProducer);
  EXPECT_TRUE(silent_gpus_beside_roots({1}, rr_evidence, round_robin.processes).empty());
}

TEST(SilentGpus, RanksAboveTheHighestSeenAreNotAssumedAndAtMostThreeRootsAreNoted) {
  // The last node's block would run to rank 20, but the highest rank seen is 17: its node
  // may hold fewer GPUs.
  NetworkGpusOnly job;
  job.obs.processes.pop_back();  // node2 rank 20 gone: node2's block is 14 .. 20, seen up to 14
  job.obs.processes.push_back({"node2", -1, 17, ""});
  for (Evidence& e : job.evidence) e.offer(1e8, CulpritClass::kGpuConsumer);
  const std::vector<SilentNodeGpus> found =
      silent_gpus_beside_roots({0, 1, 2, 3, 4, 5}, job.evidence, job.obs.processes);
  ASSERT_EQ(found.size(), 6u);
  EXPECT_EQ(found[4].ranks, (std::vector<int64_t>{15, 16}));
  const ProcessContext context(job.obs);
  std::vector<std::string> notes;
  note_silent_gpus_beside_roots(found, job.evidence, context, notes);
  EXPECT_EQ(notes.size(), 3u);
}

}  // namespace
}  // namespace culprit
