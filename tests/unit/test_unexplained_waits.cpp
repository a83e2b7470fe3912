// unexplained_wait_targets / note_unexplained_wait_targets: the GPUs that waits lead to and
// that nothing of their own explains, said in the notes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/unexplained_waits.hpp"
#include "pass_fixtures.hpp"

namespace culprit {
namespace {

// Four processes, none with kernel clocks: 0 and 1 wait for 2's credit, 2 for nothing.
struct Waits {
  std::vector<WaitEdge> holds{{0, 2, 3e8, "no_credit"}, {1, 2, 1e8, "no_credit"}};
  std::vector<Evidence> evidence = std::vector<Evidence>(4);
  std::vector<bool> measured = std::vector<bool>(4, false);
  std::vector<UnexplainedWaitTarget> targets() const { return unexplained_wait_targets(holds, evidence, measured); }
};

TEST(UnexplainedWaits, TheGpuTheWaitsEndAtWithNothingOfItsOwnIsNamedWithWhatWasWaited) {
  const Waits w;
  const std::vector<UnexplainedWaitTarget> t = w.targets();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].process, 2u);
  EXPECT_DOUBLE_EQ(t[0].waited_ns, 4e8);
}

TEST(UnexplainedWaits, AGpuWithEvidenceOrMeasuredWorkOrWaitingItselfIsNoUnexplainedEnd) {
  Waits explained;
  explained.evidence[2].offer(1e6, CulpritClass::kGpuProducer);
  EXPECT_TRUE(explained.targets().empty());
  Waits measured;  // its own work measured and in order: its program's schedule kept them waiting
  measured.measured[2] = true;
  EXPECT_TRUE(measured.targets().empty());
  Waits passed_on;  // 2 waits on 3 in turn: the waits end at 3
  passed_on.holds.push_back({2, 3, 2e8, "backpressure"});
  const std::vector<UnexplainedWaitTarget> t = passed_on.targets();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].process, 3u);
}

TEST(UnexplainedWaits, OrdersByTimeWaitedAndNamesThemInOneNote) {
  Waits w;
  w.holds.push_back({0, 3, 9e8, "no_credit"});
  const std::vector<UnexplainedWaitTarget> t = w.targets();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].process, 3u);
  EXPECT_EQ(t[1].process, 2u);
  Observations obs;
  test::add_collective_processes(obs, 0x77, {"n0", "n1", "n2", "n3"});
  const ProcessContext context(obs);
  std::vector<std::string> notes;
  note_unexplained_wait_targets({}, 1e10, context, notes);
  EXPECT_TRUE(notes.empty());
  note_unexplained_wait_targets(t, 1e10, context, notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("waits lead to 2 GPU(s)"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find(context.name_of(3) + " (0.9 s, 9 % of all waiting), " + context.name_of(2) +
                          " (0.4 s, 4 % of all waiting)"),
            std::string::npos)
      << notes[0];
  EXPECT_NE(notes[0].find("slowest healthy GPU"), std::string::npos) << notes[0];
}

}  // namespace
}  // namespace culprit
