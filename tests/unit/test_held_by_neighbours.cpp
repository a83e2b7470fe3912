// Holds by a stronger neighbour: starved_by_link within a communicator, node_interior within a node.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/held_by_neighbours.hpp"

namespace culprit {
namespace {

constexpr uint64_t kWorld = 0x1111ull;
constexpr uint64_t kOther = 0x2222ull;

// Processes on `hosts` (one entry per process); the first `world` processes hold ranks of
// kWorld, the rest ranks of kOther.
Observations job(const std::vector<std::string>& hosts, size_t world) {
  Observations obs;
  for (size_t p = 0; p < hosts.size(); ++p) {
    obs.processes.push_back({hosts[p], static_cast<int64_t>(100 + p), static_cast<int64_t>(p), ""});
    GlobalCommRank c;
    c.comm_hash = p < world ? kWorld : kOther;
    c.rank = static_cast<int32_t>(p < world ? p : p - world);
    c.process = static_cast<uint32_t>(p);
    c.has_collective = true;
    obs.comm_ranks.push_back(c);
  }
  return obs;
}

Evidence offered(double ns, CulpritClass cls, std::optional<uint32_t> peer = std::nullopt) {
  Evidence e;
  e.offer(ns, cls, peer);
  return e;
}

TEST(StarvedByLink, CreditWithheldForNoReasonOfItsOwnIsHeldByTheStrongestSlowWireOfItsCommunicator) {
  // Every process on its own node, so only the communicator links them.
  ProcessContext ctx(job({"n0", "n1", "n2", "n3", "n4"}, 4));
  std::vector<Evidence> ev(5);
  ev[0] = offered(5000, CulpritClass::kNetworkLink, 1u);
  ev[1] = offered(10000, CulpritClass::kNetworkLink, 2u);  // the worst wire of the world
  ev[3] = offered(4000, CulpritClass::kGpuProducer);
  ev[4] = offered(4000, CulpritClass::kGpuProducer);  // another communicator, no slow wire there
  std::vector<WaitEdge> holds;
  add_starved_by_link_holds(ctx, ev, std::vector<double>(5, 0.0), holds);
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].from, 3u);
  EXPECT_EQ(holds[0].to, 1u);
  EXPECT_DOUBLE_EQ(holds[0].weight_ns, 4000);
  EXPECT_EQ(holds[0].why, "starved_by_link");
}

TEST(StarvedByLink, KernelEvidenceOrALongerDelayThanTheWireIsNotStarvation) {
  ProcessContext ctx(job({"n0", "n1", "n2", "n3"}, 4));
  std::vector<Evidence> ev(4);
  ev[1] = offered(10000, CulpritClass::kNetworkLink, 2u);
  ev[2] = offered(20000, CulpritClass::kGpuProducer);  // more than the wire explains
  ev[3] = offered(4000, CulpritClass::kGpuProducer);   // its kernels measure its own lateness
  ev[0] = offered(4000, CulpritClass::kGpuConsumer);   // a consumer fault, not a late post
  std::vector<double> kernel_late = {0, 0, 0, 4000};
  std::vector<WaitEdge> holds;
  add_starved_by_link_holds(ctx, ev, kernel_late, holds);
  EXPECT_TRUE(holds.empty());
}

TEST(NodeInterior, AWeakerGpuSideDelayIsHeldByTheStrongestOnItsNode) {
  ProcessContext ctx(job({"a", "a", "a", "a", "b"}, 5));
  std::vector<Evidence> ev(5);
  ev[0] = offered(9000, CulpritClass::kGpuConsumer);
  ev[1] = offered(3000, CulpritClass::kGpuProducer);
  ev[2] = offered(100, CulpritClass::kFlush);  // flushes are their own
  ev[4] = offered(1000, CulpritClass::kGpuProducer);  // alone on its node
  std::vector<WaitEdge> holds;
  add_node_interior_holds(ctx, ev, std::vector<double>(5, 0.0), holds);
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].from, 1u);
  EXPECT_EQ(holds[0].to, 0u);
  EXPECT_DOUBLE_EQ(holds[0].weight_ns, 3000);
  EXPECT_EQ(holds[0].why, "node_interior");
}

// Two slow consumers on one node, each in a pipeline of its own (seed 31415: 2.33x and 2.59x
// on node 1 of a 7x7 pipeline, each costing 12 % and 17 % alone): no communicator chains
// them, so neither is the other's backpressure. A GPU that shares a communicator with the
// stronger one is still held by it.
TEST(NodeInterior, GpusThatShareNoCommunicatorHoldNothingOfEachOther) {
  ProcessContext ctx(job({"a", "a", "a"}, 2));  // 0 and 1 in kWorld, 2 alone in kOther
  std::vector<Evidence> ev(3);
  ev[0] = offered(1000, CulpritClass::kGpuConsumer);
  ev[1] = offered(500, CulpritClass::kGpuConsumer);
  ev[2] = offered(9000, CulpritClass::kGpuConsumer);
  std::vector<WaitEdge> holds;
  add_node_interior_holds(ctx, ev, std::vector<double>(3, 0.0), holds);
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].from, 1u);
  EXPECT_EQ(holds[0].to, 0u);
}

TEST(NodeInterior, KernelEvidenceOutranksLongerProxyEvidenceAndAHangOutranksTime) {
  ProcessContext ctx(job({"a", "a", "a"}, 3));
  std::vector<Evidence> ev(3);
  ev[0] = offered(9000, CulpritClass::kGpuProducer);
  ev[1] = offered(3000, CulpritClass::kGpuProducer);
  ev[2] = offered(1000, CulpritClass::kGpuProducer);  // measured by its kernels
  std::vector<WaitEdge> holds;
  add_node_interior_holds(ctx, ev, {0, 0, 1000}, holds);
  ASSERT_EQ(holds.size(), 2u);
  EXPECT_EQ(holds[0].from, 0u);
  EXPECT_EQ(holds[0].to, 2u);
  EXPECT_EQ(holds[1].from, 1u);
  EXPECT_EQ(holds[1].to, 2u);

  // Without kernel clocks, a stopped GPU is what its node waits for; it is held by nobody.
  ev[2].stop();
  holds.clear();
  add_node_interior_holds(ctx, ev, {0, 0, 0}, holds);
  ASSERT_EQ(holds.size(), 2u);
  EXPECT_EQ(holds[0].to, 2u);
  EXPECT_EQ(holds[1].to, 2u);
  EXPECT_DOUBLE_EQ(holds[0].weight_ns, 9000);
}

// A tree 12x4x4 under LL whose 2.36x consumer (GPU 3 of node 0) made the job 33 % slower (fresh
// seed 11131): each of the node's four GPUs held its network inputs about as long (19.6-22.7 ms
// in all), and another entry, with a little more, was named first. The consumer's steps, set
// against its free output slots, queued seven of its own (90.8 us held, 12.8 us worked): a
// hold measured so is the node's, and the others' are its backpressure.
TEST(NodeInterior, AHoldSetAgainstTheOutputSlotsOutranksALongerHoldReadFromWaits) {
  ProcessContext ctx(job({"a", "a", "a"}, 3));
  std::vector<Evidence> ev(3);
  ev[0] = offered(9000, CulpritClass::kGpuConsumer);  // the entry
  ev[2] = offered(4000, CulpritClass::kGpuConsumer);  // its own hold measured
  std::vector<WaitEdge> holds;
  add_node_interior_holds(ctx, ev, {0, 0, 0}, holds, {2});
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].from, 0u);
  EXPECT_EQ(holds[0].to, 2u);
  // Kernel clocks still outrank it.
  holds.clear();
  ev[1] = offered(1000, CulpritClass::kGpuProducer);
  add_node_interior_holds(ctx, ev, {0, 1000, 0}, holds, {2});
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].from, 0u);
  EXPECT_EQ(holds[0].to, 2u);  // a GPU late by its own work does not hold a consumer
}

// A ring 3x2x4 with a 1.62x consumer and a 1.27x slow GPU on one node (seed 60221, 6 % and
// 12 % alone): the GPU, late by its own work, withholds its peer's credit at the start of each
// collective, but the consumer held its inputs at every step. It stays a root; a late post
// beside the slow GPU is still its victim.
TEST(NodeInterior, AGpuLateByItsOwnWorkDoesNotHoldAPeerSlowToConsume) {
  ProcessContext ctx(job({"a", "a", "a"}, 3));
  std::vector<Evidence> ev(3);
  ev[0] = offered(6.7e6, CulpritClass::kGpuConsumer);
  ev[1] = offered(1e6, CulpritClass::kGpuProducer);
  ev[2] = offered(2e6, CulpritClass::kGpuProducer);  // measured by its kernels
  std::vector<WaitEdge> holds;
  add_node_interior_holds(ctx, ev, {0, 0, 2e6}, holds);
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].from, 1u);
  EXPECT_EQ(holds[0].to, 2u);

  // Stopped, it holds the consumer too.
  ev[2].stop();
  holds.clear();
  add_node_interior_holds(ctx, ev, {0, 0, 2e6}, holds);
  ASSERT_EQ(holds.size(), 2u);
  EXPECT_EQ(holds[0].from, 0u);
  EXPECT_EQ(holds[0].to, 2u);
}

TEST(NodeInterior, ASlowWireCountsOnTheNodeItFeedsAndIsNeverHeldItself) {
  // Process 2 on node b sends over a slow wire into process 0 on node a.
  ProcessContext ctx(job({"a", "a", "b", "b"}, 4));
  std::vector<Evidence> ev(4);
  ev[0] = offered(9000, CulpritClass::kGpuConsumer);
  ev[1] = offered(3000, CulpritClass::kGpuProducer);
  ev[2] = offered(50000, CulpritClass::kNetworkLink, 0u);
  ev[3] = offered(2000, CulpritClass::kGpuProducer);
  std::vector<WaitEdge> holds;
  add_node_interior_holds(ctx, ev, std::vector<double>(4, 0.0), holds);
  ASSERT_EQ(holds.size(), 3u);
  for (const WaitEdge& h : holds) {
    EXPECT_EQ(h.to, 2u);
    EXPECT_NE(h.from, 2u);
  }
  EXPECT_EQ(holds[0].from, 0u);
  EXPECT_EQ(holds[1].from, 1u);
  EXPECT_EQ(holds[2].from, 3u);
}

}  // namespace
}  // namespace culprit
