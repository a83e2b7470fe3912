// last_arrival_time on a hand-built judgement: a last arrival's own time is its wait deficit
// times its collectives, summed over its communicators; a pipeline stage's, a GPU's not judged
// in one of its communicators, a GPU's of a node whose exit is held and an unjudged member's
// are none (last_arrival_time.hpp).
#include "analysis/last_arrival_time.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace culprit {
namespace {

constexpr uint64_t kWorld = 0x1, kData = 0x2;

const auto kNotHeld = [](const MemberWait&) { return false; };

MemberWait member(uint32_t process, uint64_t comm, double ops, uint32_t stage = 0) {
  return {process, comm, stage, FlowPlace{}, 1e6, 1e6, true, true, ops, {}, 0, 1e6, 1e6};
}

// `process` judged in `comm` only, 2 ms per op late there at margin 2; the evidence of GPUs
// 0..process offered its own time by `members` and `held`.
std::vector<Evidence> offered_when_late(uint32_t process, uint64_t comm, const std::vector<MemberWait>& members,
                                        const std::function<bool(const MemberWait&)>& held = kNotHeld) {
  ArrivalJudgement judged;
  judged.wait_deficits[{process, comm}] = {2e6, 0.2e6, 7};
  judged.last_arrivals[{process, comm}] = {10, 5};
  std::vector<Evidence> evidence(process + 1);
  offer_last_arrival_time(members, judged, held, evidence);
  return evidence;
}

TEST(LastArrivalTime, ALastArrivalsOwnTimeAddsOverItsCommunicators) {
  // GPU 3 came 2 ms per op late to 10 collectives of one communicator and 1 ms to 4 of another.
  const std::vector<MemberWait> members = {member(3, kWorld, 10), member(3, kData, 4), member(4, kWorld, 10)};
  ArrivalJudgement judged;
  judged.wait_deficits[{3, kWorld}] = {2e6, 0.2e6, 7};
  judged.wait_deficits[{3, kData}] = {1e6, 0.2e6, 7};
  judged.wait_deficits[{4, kWorld}] = {0.1e6, 0.2e6, 7};
  judged.last_arrivals[{3, kWorld}] = {10, 5};
  judged.last_arrivals[{3, kData}] = {6, 4};
  std::vector<Evidence> evidence(5);
  offer_last_arrival_time(members, judged, kNotHeld, evidence);
  EXPECT_EQ(evidence[3].culprit_class, CulpritClass::kGpuProducer);
  EXPECT_DOUBLE_EQ(evidence[3].ns, 2e6 * 10 + 1e6 * 4);
  EXPECT_DOUBLE_EQ(evidence[3].margin, 1.5);  // the weaker of its findings
  EXPECT_FALSE(evidence[4].any());            // judged, not a last arrival
}

TEST(LastArrivalTime, APipelineStageInheritsItsLatenessAndIsNotOffered) {
  // A stage reaches the closing collective when its send/recv input lets it.
  EXPECT_FALSE(offered_when_late(2, kWorld, {member(2, kWorld, 10, 1)})[2].any());
  EXPECT_TRUE(offered_when_late(2, kWorld, {member(2, kWorld, 10, 0)})[2].any());  // outside a pipeline
}

TEST(LastArrivalTime, AGpuNotJudgedInOneOfItsCommunicatorsIsNotOffered) {
  // Its lateness may come from the collective before, in the communicator it is not judged in.
  EXPECT_FALSE(offered_when_late(6, kData, {member(6, kWorld, 10), member(6, kData, 10)})[6].any());
}

TEST(LastArrivalTime, AGpuOfANodeWhoseExitIsHeldIsNotOffered) {
  // Its kernel may wait for a GPU of its node blocked by a slow link over NVLink.
  const auto held = [](const MemberWait& m) { return m.process == 5; };
  EXPECT_FALSE(offered_when_late(5, kWorld, {member(5, kWorld, 10)}, held)[5].any());
}

}  // namespace
}  // namespace culprit
