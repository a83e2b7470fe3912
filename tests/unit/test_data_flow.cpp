// Data flow for victims: a receiver depends on its network sender, a node's senders on its receivers and interior GPUs; what each waited.
#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/data_flow.hpp"
#include "pass_fixtures.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0xDA7Aull;
constexpr uint64_t kOther = 0x0DDull;

struct Job {
  Observations obs;
  std::vector<EdgeFacts> facts;

  explicit Job(const std::vector<std::string>& hosts) { test::add_collective_processes(obs, kComm, hosts); }
  // A network connection src -> dst with its phases (ns over the window).
  void add(uint32_t src, uint32_t dst, const std::array<uint64_t, kPhaseCount>& phase_ns = {}) {
    test::add_connection(obs, facts, kComm, src, dst, 0, 8);
    for (int p = 0; p < kPhaseCount; ++p) obs.edges.back().phase_ns[p] = phase_ns[static_cast<size_t>(p)];
  }
  std::set<std::pair<uint32_t, uint32_t>> flow() const {
    ProcessContext ctx(obs);
    std::set<std::pair<uint32_t, uint32_t>> out;
    for (const WaitEdge& e : data_flow_edges(obs, facts, ctx)) {
      EXPECT_EQ(e.why, "data");
      EXPECT_DOUBLE_EQ(e.weight_ns, 1.0);
      out.insert({e.from, e.to});
    }
    return out;
  }
};

using Flow = std::set<std::pair<uint32_t, uint32_t>>;

TEST(DataFlow, ReceiversDependOnTheirNetworkSendersAndSendersOnTheirNodesReceivers) {
  // Two nodes of two GPUs in a ring: 1 (a) -> 2 (b), 3 (b) -> 0 (a). 0 and 2 only receive
  // from the network, 1 and 3 only send to it.
  Job job({"a", "a", "b", "b"});
  job.add(1, 2);
  job.add(3, 0);
  EXPECT_EQ(job.flow(), (Flow{{2, 1}, {0, 3}, {1, 0}, {3, 2}}));
}

TEST(DataFlow, InteriorGpusCarryDataFromTheReceiversToTheSenders) {
  // Three GPUs per node: 1 and 4 have no network connection (NVLink in between).
  Job job({"a", "a", "a", "b", "b", "b"});
  job.add(2, 3);
  job.add(5, 0);
  Flow expected = {{3, 2}, {0, 5},                  // the network hops
                   {1, 0}, {2, 0}, {2, 1},          // node a: interior from receiver, sender from both
                   {4, 3}, {5, 3}, {5, 4}};         // node b likewise
  EXPECT_EQ(job.flow(), expected);
}

TEST(DataFlow, ConnectionsToItselfAndOtherCommunicatorsOfTheNodeAddNoFlow) {
  Job job({"a", "a", "a"});
  job.add(0, 0);
  // Process 2 holds a rank of another communicator only: it shares node a, not the data.
  job.obs.comm_ranks[2].comm_hash = kOther;
  job.obs.comm_ranks[2].rank = 0;
  // Within kComm both GPUs of node a pass data to each other (neither touches the network).
  EXPECT_EQ(job.flow(), (Flow{{0, 1}, {1, 0}}));
}

TEST(DataFlow, AReceiverWaitedItsRecvWaitAndASenderItsGpuAndCreditWaits) {
  Job job({"a", "b", "c"});
  // SendGpuWait, SendPeerWait, SendWait, RecvWait, RecvFlushWait, RecvGpuWait.
  job.add(0, 1, {100, 20, 7000, 300, 9000, 9000});
  job.add(1, 2, {5, 1, 7000, 40, 9000, 9000});
  std::vector<double> waited = waited_per_process(job.obs, job.facts, 4);
  ASSERT_EQ(waited.size(), 4u);
  EXPECT_DOUBLE_EQ(waited[0], 120);       // its sends: SendGpuWait + SendPeerWait, not the wire
  EXPECT_DOUBLE_EQ(waited[1], 300 + 6);   // its receive's RecvWait and its send's waits
  EXPECT_DOUBLE_EQ(waited[2], 40);        // flush and consumption are its own work, not waiting
  EXPECT_DOUBLE_EQ(waited[3], 0);
}

}  // namespace
}  // namespace culprit
