// The exchange's generic packer (pipeline/exchange_wire.hpp): trivially copyable records
// travel as they are, strings, lists and maps length-prefixed, and a corrupt blob is an error.
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <string>
#include <vector>

#include "pipeline/exchange_wire.hpp"

namespace culprit {
namespace {

// A record as a signal would add one: nothing but its declaration is needed to send it.
struct PlainSignal {
  uint64_t key = 0;
  int32_t rank = -1;
  bool late = false;
  double share = 0;
};

TEST(ExchangeWire, TriviallyCopyableRecordsTravelAsTheyAre) {
  WireWriter out;
  out.put(std::vector<PlainSignal>{{7, 3, true, 0.25}, {8, -1, false, 1.5}});
  out.put(uint64_t{42});
  std::vector<char> blob = std::move(out).take();
  EXPECT_EQ(blob.size(), 8 + 2 * sizeof(PlainSignal) + 8);
  WireReader in(blob);
  auto back = in.get<std::vector<PlainSignal>>();
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].key, 7u);
  EXPECT_EQ(back[0].rank, 3);
  EXPECT_TRUE(back[0].late);
  EXPECT_EQ(back[1].share, 1.5);
  EXPECT_EQ(in.get<uint64_t>(), 42u);
  EXPECT_TRUE(in.at_end());
}

TEST(ExchangeWire, StringsListsAndMapsKeepEveryByte) {
  const std::string long_text(5000, 'x');
  const std::map<std::string, uint64_t> reasons{{"", 1}, {"malformed line", 2}, {long_text, 3}};
  const std::vector<std::string> notes{"a", "", std::string("with\0nul", 8)};
  WireWriter out;
  out.put(reasons);
  out.put(notes);
  std::vector<char> blob = std::move(out).take();
  WireReader in(blob);
  EXPECT_EQ((in.get<std::map<std::string, uint64_t>>()), reasons);
  EXPECT_EQ(in.get<std::vector<std::string>>(), notes);
  EXPECT_TRUE(in.at_end());
}

TEST(ExchangeWire, ACountBeyondTheBlobIsAnErrorNotAnAllocation) {
  for (bool strings : {false, true}) {
    WireWriter out;
    out.put(std::numeric_limits<uint64_t>::max() / 2);  // a count, and nothing after it
    std::vector<char> blob = std::move(out).take();
    WireReader in(blob);
    if (strings) EXPECT_THROW(in.get<std::vector<std::string>>(), std::runtime_error);
    else EXPECT_THROW(in.get<std::vector<PlainSignal>>(), std::runtime_error);
  }
  std::vector<char> three_bytes(3, 0);
  WireReader in(three_bytes);
  EXPECT_THROW(in.get<uint64_t>(), std::runtime_error);
}

}  // namespace
}  // namespace culprit
