// name_of for the culprit classes and edge verdicts: the strings CONTRACT.md's results carry.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "analysis/verdict_kinds.hpp"

namespace culprit {
namespace {

TEST(VerdictKinds, EveryCulpritClassHasItsContractName) {
  EXPECT_EQ(name_of(CulpritClass::kNone), "none");
  EXPECT_EQ(name_of(CulpritClass::kGpuProducer), "gpu_producer");
  EXPECT_EQ(name_of(CulpritClass::kGpuConsumer), "gpu_consumer");
  EXPECT_EQ(name_of(CulpritClass::kNetworkLink), "network_link");
  EXPECT_EQ(name_of(CulpritClass::kFlush), "flush");
  EXPECT_EQ(name_of(CulpritClass::kHang), "hang");
}

TEST(VerdictKinds, EveryEdgeVerdictHasItsContractName) {
  EXPECT_EQ(name_of(EdgeVerdict::kNormal), "normal");
  EXPECT_EQ(name_of(EdgeVerdict::kLateData), "late_data");
  EXPECT_EQ(name_of(EdgeVerdict::kNoCredit), "no_credit");
  EXPECT_EQ(name_of(EdgeVerdict::kSlowLink), "slow_link");
  EXPECT_EQ(name_of(EdgeVerdict::kSlowFlush), "slow_flush");
}

TEST(VerdictKinds, NamesAreDistinctSoReadersCanTellClassesApart) {
  std::set<std::string> classes;
  for (auto c : {CulpritClass::kNone, CulpritClass::kGpuProducer, CulpritClass::kGpuConsumer,
                 CulpritClass::kNetworkLink, CulpritClass::kFlush, CulpritClass::kHang})
    classes.insert(name_of(c));
  EXPECT_EQ(classes.size(), 6u);
  std::set<std::string> verdicts;
  for (auto v : {EdgeVerdict::kNormal, EdgeVerdict::kLateData, EdgeVerdict::kNoCredit, EdgeVerdict::kSlowLink,
                 EdgeVerdict::kSlowFlush})
    verdicts.insert(name_of(v));
  EXPECT_EQ(verdicts.size(), 5u);
}

}  // namespace
}  // namespace culprit
