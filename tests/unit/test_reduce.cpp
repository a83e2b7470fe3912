// CPU reduction: window filter, send/receive halves, saturation, thread-count determinism,
// merging of partial summaries, and the --reduce dispatcher.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/reduce_cuda.hpp"
#include "reduce/edge_reduce.hpp"
#include "tests/gpu/reduce_test_data.hpp"

namespace culprit {
namespace {

using testdata::GenOptions;
using testdata::random_records;
using testdata::reference_reduce;
using testdata::same_bits;

ProxyOpRecord make(uint64_t comm, int32_t rank, int32_t peer, int32_t channel, bool send,
                   uint64_t seq = 0, bool p2p = false) {
  ProxyOpRecord r;
  r.comm_hash = comm;
  r.rank = rank;
  r.peer = peer;
  r.channel = channel;
  r.is_send = send ? 1 : 0;
  r.is_p2p = p2p ? 1 : 0;
  r.seq = seq;
  return r;
}

TEST(ReducePath, ParsesTheThreeNames) {
  ReducePath p = ReducePath::kCpu;
  ASSERT_TRUE(parse_reduce_path("cuda", &p));
  EXPECT_EQ(p, ReducePath::kCuda);
  ASSERT_TRUE(parse_reduce_path("auto", &p));
  EXPECT_EQ(p, ReducePath::kAuto);
  ASSERT_TRUE(parse_reduce_path("cpu", &p));
  EXPECT_EQ(p, ReducePath::kCpu);
  EXPECT_FALSE(parse_reduce_path("gpu", &p));
  EXPECT_FALSE(parse_reduce_path("CPU", &p));
  EXPECT_FALSE(parse_reduce_path("", &p));
  EXPECT_EQ(p, ReducePath::kCpu);  // unchanged on failure
}

TEST(ReduceWindow, KeepsP2pUnlistedAndRecentRecords) {
  std::vector<CommWindow> windows = {{10, 5}, {20, 100}, {30, 0}};
  EXPECT_TRUE(record_in_window(make(10, 0, 1, 0, true, 5), windows));   // == min_seq
  EXPECT_TRUE(record_in_window(make(10, 0, 1, 0, true, 6), windows));
  EXPECT_FALSE(record_in_window(make(10, 0, 1, 0, true, 4), windows));  // below
  EXPECT_FALSE(record_in_window(make(20, 0, 1, 0, false, 99), windows));
  EXPECT_TRUE(record_in_window(make(20, 0, 1, 0, false, 99, true), windows));  // p2p
  EXPECT_TRUE(record_in_window(make(30, 0, 1, 0, true, 0), windows));
  EXPECT_TRUE(record_in_window(make(15, 0, 1, 0, true, 0), windows));  // unlisted comm
  EXPECT_TRUE(record_in_window(make(40, 0, 1, 0, true, 0), windows));  // past the end
  EXPECT_TRUE(record_in_window(make(1, 0, 1, 0, true, 0), windows));   // before the start
  EXPECT_TRUE(record_in_window(make(10, 0, 1, 0, true, 0), {}));        // no windows
}

TEST(ReduceCpu, WindowFilterDropsOldCollectivesOnly) {
  std::vector<CommWindow> windows = {{7, 10}};
  std::vector<ProxyOpRecord> recs;
  for (uint64_t seq = 0; seq < 20; ++seq) {
    ProxyOpRecord r = make(7, 0, 1, 0, true, seq);
    r.phase_ns[kSendGpuWait] = 1;
    recs.push_back(r);
  }
  ProxyOpRecord p2p = make(7, 0, 1, 0, true, 0, true);
  p2p.phase_ns[kSendGpuWait] = 1000;
  recs.push_back(p2p);
  ProxyOpRecord other = make(8, 0, 1, 0, true, 0);
  recs.push_back(other);
  auto out = reduce_edges_cpu(recs, windows, 1);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].key.comm_hash, 7u);
  EXPECT_EQ(out[0].send_ops, 11u);  // seq 10..19 and the p2p record
  EXPECT_EQ(out[0].phase_ns[kSendGpuWait], 1010u);
  EXPECT_EQ(out[1].key.comm_hash, 8u);
  EXPECT_EQ(out[1].send_ops, 1u);
}

TEST(ReduceCpu, UnsortedWindowsAreSortedFirst) {
  GenOptions o;
  o.n = 20000;
  o.comms = 6;
  o.seed = 13;
  auto recs = random_records(o);
  auto windows = testdata::some_windows(o.comms, o.max_seq);
  ASSERT_GE(windows.size(), 3u);
  std::vector<CommWindow> reversed(windows.rbegin(), windows.rend());
  auto expected = reference_reduce(recs, windows);
  EXPECT_TRUE(same_bits(reduce_edges_cpu(recs, reversed, 1), expected));
  EXPECT_TRUE(same_bits(reduce_edges_cpu(recs, reversed, 3), expected));
}

TEST(ReduceCpu, SendAndReceiveHalvesMeetOnOneEdge) {
  ProxyOpRecord send = make(42, 3, 5, 1, true);  // rank 3 sends to 5
  for (int p = 0; p < kPhaseCount; ++p) send.phase_ns[p] = 100 + p;  // recv phases ignored
  send.steps = 8;
  send.bytes = 4096;
  ProxyOpRecord recv = make(42, 5, 3, 1, false);  // rank 5 receives from 3
  for (int p = 0; p < kPhaseCount; ++p) recv.phase_ns[p] = 1000 + p;  // send phases ignored
  recv.steps = 7;
  recv.bytes = 2048;
  std::vector<ProxyOpRecord> recs = {send, recv, send};
  auto out = reduce_edges_cpu(recs, {}, 1);
  ASSERT_EQ(out.size(), 1u);
  const EdgeSummary& s = out[0];
  EXPECT_EQ(s.key.comm_hash, 42u);
  EXPECT_EQ(s.key.src_rank, 3);
  EXPECT_EQ(s.key.dst_rank, 5);
  EXPECT_EQ(s.key.channel, 1);
  EXPECT_EQ(s.key.pad_, 0);
  EXPECT_EQ(s.phase_ns[kSendGpuWait], 200u);
  EXPECT_EQ(s.phase_ns[kSendPeerWait], 202u);
  EXPECT_EQ(s.phase_ns[kSendWait], 204u);
  EXPECT_EQ(s.phase_ns[kRecvWait], 1003u);
  EXPECT_EQ(s.phase_ns[kRecvFlushWait], 1004u);
  EXPECT_EQ(s.phase_ns[kRecvGpuWait], 1005u);
  EXPECT_EQ(s.send_steps, 16u);
  EXPECT_EQ(s.recv_steps, 7u);
  EXPECT_EQ(s.send_ops, 2u);
  EXPECT_EQ(s.recv_ops, 1u);
  EXPECT_EQ(s.send_bytes, 8192u);
  EXPECT_EQ(s.recv_bytes, 2048u);
}

TEST(ReduceCpu, OutputSortedByKeyWithNegativeRanks) {
  std::vector<ProxyOpRecord> recs = {make(2, 0, 1, 0, true), make(1, 5, -1, 3, true),
                                     make(1, -1, 4, 0, true), make(1, 2, 3, -1, true),
                                     make(1, 2, 3, 0, true)};
  auto out = reduce_edges_cpu(recs, {}, 1);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_TRUE(std::is_sorted(out.begin(), out.end(),
                             [](const EdgeSummary& a, const EdgeSummary& b) { return a.key < b.key; }));
  EXPECT_EQ(out[0].key.src_rank, -1);
  EXPECT_EQ(out[1].key.channel, -1);
  EXPECT_EQ(out[4].key.comm_hash, 2u);
}

TEST(ReduceCpu, SumsSaturateAtMax) {
  ProxyOpRecord a = make(1, 0, 1, 0, true);
  a.phase_ns[kSendWait] = UINT64_MAX - 5;
  a.bytes = UINT64_MAX / 2 + 1;
  a.steps = UINT32_MAX;
  ProxyOpRecord b = a;
  b.phase_ns[kSendWait] = 10;
  ProxyOpRecord c = a;
  c.phase_ns[kSendWait] = 1;
  // Wrapping arithmetic would give (MAX-5)+10+1 = 5; saturation gives MAX whatever the order.
  for (auto order : {std::vector<ProxyOpRecord>{a, b, c}, std::vector<ProxyOpRecord>{c, b, a},
                     std::vector<ProxyOpRecord>{b, c, a}}) {
    auto out = reduce_edges_cpu(order, {}, 1);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].phase_ns[kSendWait], UINT64_MAX);
    EXPECT_EQ(out[0].send_bytes, UINT64_MAX);
    EXPECT_EQ(out[0].send_steps, 3ULL * UINT32_MAX);  // 64-bit sums of 32-bit steps
    EXPECT_EQ(out[0].send_ops, 3u);
  }
}

TEST(ReduceCpu, MatchesReferenceOnRandomInput) {
  GenOptions o;
  o.n = 20000;
  o.seed = 7;
  auto recs = random_records(o);
  auto windows = testdata::some_windows(o.comms, o.max_seq);
  auto ref = reference_reduce(recs, windows);
  ASSERT_GT(ref.size(), 100u);
  EXPECT_TRUE(same_bits(reduce_edges_cpu(recs, windows, 1), ref));
  EXPECT_TRUE(same_bits(reduce_edges_cpu(recs, {}, 1), reference_reduce(recs, {})));
}

TEST(ReduceCpu, MatchesReferenceWithHugeValues) {
  GenOptions o;
  o.n = 5000;
  o.huge_values = true;
  o.ranks = 3;
  o.channels = 2;
  o.seed = 11;
  auto recs = random_records(o);
  auto ref = reference_reduce(recs, {});
  ASSERT_EQ(ref.front().phase_ns[0] == UINT64_MAX || ref.front().phase_ns[3] == UINT64_MAX, true);
  EXPECT_TRUE(same_bits(reduce_edges_cpu(recs, {}, 1), ref));
  EXPECT_TRUE(same_bits(reduce_edges_cpu(recs, {}, 4), ref));
}

TEST(ReduceCpu, ThreadCountDoesNotChangeTheResult) {
  GenOptions o;
  o.n = 400000;  // enough for several threads to get a share
  o.comms = 5;
  o.ranks = 64;
  o.channels = 8;
  o.seed = 3;
  auto recs = random_records(o);
  auto windows = testdata::some_windows(o.comms, o.max_seq);
  auto ref = reference_reduce(recs, windows);
  for (unsigned t : {1u, 2u, 3u, 4u, 7u, 16u, 0u}) {
    SCOPED_TRACE(t);
    EXPECT_TRUE(same_bits(reduce_edges_cpu(recs, windows, t), ref));
  }
}

TEST(ReduceCpu, AllDistinctEdgesAndEmptyInput) {
  std::vector<ProxyOpRecord> recs;
  for (int i = 0; i < 300000; ++i) {
    ProxyOpRecord r = make(static_cast<uint64_t>(i % 7), i, -i, i % 3, i % 2 == 0);
    r.phase_ns[0] = static_cast<uint64_t>(i);
    r.phase_ns[3] = static_cast<uint64_t>(i);
    recs.push_back(r);
  }
  auto ref = reference_reduce(recs, {});
  ASSERT_EQ(ref.size(), recs.size());
  EXPECT_TRUE(same_bits(reduce_edges_cpu(recs, {}, 1), ref));
  EXPECT_TRUE(same_bits(reduce_edges_cpu(recs, {}, 4), ref));
  EXPECT_TRUE(reduce_edges_cpu({}, {}, 0).empty());
}

TEST(MergeEdges, MergingPartsEqualsReducingTheWhole) {
  GenOptions o;
  o.n = 30000;
  o.seed = 5;
  auto recs = random_records(o);
  auto windows = testdata::some_windows(o.comms, o.max_seq);
  std::span<const ProxyOpRecord> all(recs);
  std::vector<EdgeSummary> parts;
  for (std::size_t begin = 0; begin < recs.size(); begin += 7000) {
    auto part = reduce_edges_cpu(all.subspan(begin, std::min<std::size_t>(7000, recs.size() - begin)),
                                 windows, 1);
    parts.insert(parts.begin(), part.begin(), part.end());  // reversed order of parts
  }
  EXPECT_TRUE(same_bits(merge_edge_summaries(parts), reference_reduce(recs, windows)));
  EXPECT_TRUE(merge_edge_summaries({}).empty());
}

// `records` reduced as two parts, split at `split`, and the parts merged.
std::vector<EdgeSummary> reduced_in_two_parts(const std::vector<ProxyOpRecord>& records, size_t split) {
  std::vector<EdgeSummary> parts = reduce_edges_cpu(std::span(records).first(split), {}, 1);
  std::vector<EdgeSummary> rest = reduce_edges_cpu(std::span(records).subspan(split), {}, 1);
  parts.insert(parts.end(), rest.begin(), rest.end());
  return merge_edge_summaries(parts);
}

// `check` of the one summary that `records` (one connection) reduce to, whole and split in two
// at every place: the merge must not depend on how the records were divided.
template <typename Check>
void for_every_split(const std::vector<ProxyOpRecord>& records, Check check) {
  for (size_t split = 0; split <= records.size(); ++split) {
    std::vector<EdgeSummary> out = reduced_in_two_parts(records, split);
    ASSERT_EQ(out.size(), 1u);
    check(out[0], split);
  }
}

TEST(ReduceCpu, ShortestConsumeIsTheMinimumOverTheReceivesThatKnowIt) {
  // Three receives of one connection: 5 us and 0 us known, one unknown (probing's sums
  // carry no steps) whose stale value must not count. 0 is a real shortest step.
  std::vector<ProxyOpRecord> records(3);
  const uint64_t known[] = {5000, 0, 1};
  for (size_t i = 0; i < records.size(); ++i) {
    records[i].comm_hash = 7;
    records[i].rank = 1;
    records[i].peer = 0;
    records[i].channel = 0;
    records[i].steps = 1;
    records[i].recv_gpu_wait_min_ns = known[i];
    records[i].has_recv_gpu_wait_min = i < 2;
  }
  for (size_t split = 0; split <= records.size(); ++split) {
    // Reduced whole, and as two parts merged: the same minimum and count.
    std::vector<EdgeSummary> out = reduced_in_two_parts(records, split);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].recv_gpu_wait_min_ops, 2u) << "split " << split;
    EXPECT_EQ(out[0].recv_gpu_wait_min_ns, 0u) << "split " << split;
  }
  records[1].has_recv_gpu_wait_min = 0;
  std::vector<EdgeSummary> out = reduce_edges_cpu(records, {}, 1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].recv_gpu_wait_min_ops, 1u);
  EXPECT_EQ(out[0].recv_gpu_wait_min_ns, 5000u);
}

// Ops of one connection (rank 0 sends to rank 1): a send sets `send_phase`, a receive
// `recv_phase`, to its value.
std::vector<ProxyOpRecord> ops_of_one_connection(const std::vector<bool>& is_send, const std::vector<uint32_t>& steps,
                                                 int send_phase, int recv_phase, const std::vector<uint64_t>& values) {
  std::vector<ProxyOpRecord> records(is_send.size());
  for (size_t i = 0; i < records.size(); ++i) {
    records[i].comm_hash = 7;
    records[i].is_send = is_send[i];
    records[i].rank = is_send[i] ? 0 : 1;
    records[i].peer = is_send[i] ? 1 : 0;
    records[i].steps = steps[i];
    records[i].phase_ns[is_send[i] ? send_phase : recv_phase] = values[i];
  }
  return records;
}

TEST(ReduceCpu, QuickestSendOpIsTheSmallestSendWaitPerStepOverTheSendsWithSteps) {
  // Three sends of one connection: 4 steps in 800 us, 2 steps in 100 us, and one without steps
  // (nothing to divide by) that must not count; a receive of the same connection neither.
  const std::vector<ProxyOpRecord> records =
      ops_of_one_connection({true, true, true, false}, {4, 2, 0, 1}, kSendWait, kRecvWait, {800000, 100000, 5, 1});
  for (size_t split = 0; split <= records.size(); ++split) {
    // Reduced whole, and as two parts merged: the same minimum and count.
    std::vector<EdgeSummary> out = reduced_in_two_parts(records, split);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].send_op_wait_min_ops, 2u) << "split " << split;
    EXPECT_EQ(out[0].send_op_wait_min_ns, 50000u) << "split " << split;
  }
}

TEST(ReduceCpu, WorstReceiveOpIsTheLongestRecvGpuWaitPerStepTiesToTheLargerSum) {
  // Four receives of one connection: 30 us a step over 4 steps, a one-off 900 us a step over 2,
  // 900 us a step over 1 (a tie per step: the larger sum stands), and one without steps that
  // must not count; a send of the same connection neither.
  const std::vector<ProxyOpRecord> records =
      ops_of_one_connection({false, false, false, false, true}, {4, 2, 1, 0, 1}, kSendWait, kRecvGpuWait,
                            {120000, 1800000, 900000, 7, 5000000});
  for_every_split(records, [](const EdgeSummary& e, size_t split) {
    EXPECT_EQ(e.recv_worst_op_step_ns, 900000u) << "split " << split;
    EXPECT_EQ(e.recv_worst_op_gpu_wait_ns, 1800000u) << "split " << split;
    EXPECT_EQ(e.recv_worst_op_steps, 2u) << "split " << split;
  });
}

TEST(ReduceCpu, LongestShortestSendIsTheMaximumOverTheSendsThatKnowIt) {
  // Three sends whose shortest steps took 12, 46 and 13 us, one that does not know it (0).
  std::vector<ProxyOpRecord> records = ops_of_one_connection({true, true, true, true}, {16, 16, 16, 16}, kSendWait,
                                                             kRecvWait, {200000, 800000, 210000, 5});
  const uint64_t shortest[] = {12000, 46000, 13000, 0};
  for (size_t i = 0; i < records.size(); ++i) records[i].send_wait_min_ns = shortest[i];
  for_every_split(records, [](const EdgeSummary& e, size_t split) {
    EXPECT_EQ(e.send_wait_min_ops, 3u) << "split " << split;
    EXPECT_EQ(e.send_wait_min_sum_ns, 71000u) << "split " << split;
    EXPECT_EQ(e.send_wait_min_max_ns, 46000u) << "split " << split;
  });
}

TEST(MergeEdges, SaturatesEveryFieldAndClearsPadding) {
  EdgeSummary a;
  a.key = {9, 1, 2, 3, 77};
  for (auto& p : a.phase_ns) p = UINT64_MAX - 1;
  a.send_steps = a.recv_steps = a.send_ops = a.recv_ops = a.send_bytes = a.recv_bytes =
      UINT64_MAX - 1;
  EdgeSummary b = a;
  b.key.pad_ = 5;
  EdgeSummary c;
  c.key = {8, 0, 0, 0, 0};
  c.send_ops = 1;
  std::vector<EdgeSummary> in = {a, c, b};
  auto out = merge_edge_summaries(in);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].key.comm_hash, 8u);
  EXPECT_EQ(out[0].send_ops, 1u);
  EXPECT_EQ(out[1].key.pad_, 0);
  for (auto p : out[1].phase_ns) EXPECT_EQ(p, UINT64_MAX);
  EXPECT_EQ(out[1].send_steps, UINT64_MAX);
  EXPECT_EQ(out[1].recv_steps, UINT64_MAX);
  EXPECT_EQ(out[1].send_ops, UINT64_MAX);
  EXPECT_EQ(out[1].recv_ops, UINT64_MAX);
  EXPECT_EQ(out[1].send_bytes, UINT64_MAX);
  EXPECT_EQ(out[1].recv_bytes, UINT64_MAX);
}

TEST(ReduceDispatch, CpuPathHasNoNote) {
  GenOptions o;
  o.n = 1000;
  auto recs = random_records(o);
  auto r = reduce_edges(recs, {}, ReducePath::kCpu);
  EXPECT_EQ(r.path_used, "cpu");
  EXPECT_TRUE(r.note.empty());
  EXPECT_TRUE(same_bits(r.edges, reference_reduce(recs, {})));
}

TEST(ReduceDispatch, CudaAndAutoFallBackOrRunWithTheSameResult) {
  GenOptions o;
  o.n = 5000;
  auto recs = random_records(o);
  auto windows = testdata::some_windows(o.comms, o.max_seq);
  auto ref = reference_reduce(recs, windows);
  CudaAvailability cuda = cuda_availability();
  if (!cuda.usable) {
    EXPECT_FALSE(cuda.reason.empty());
  }
  auto forced = reduce_edges(recs, windows, ReducePath::kCuda);
  auto automatic = reduce_edges(recs, windows, ReducePath::kAuto);
  EXPECT_TRUE(same_bits(forced.edges, ref));
  EXPECT_TRUE(same_bits(automatic.edges, ref));
  if (cuda.usable) {
    EXPECT_EQ(forced.path_used, "cuda");
    EXPECT_TRUE(forced.note.empty());
    EXPECT_EQ(automatic.path_used, "cuda");
    EXPECT_TRUE(automatic.note.empty());
  } else {
    EXPECT_EQ(forced.path_used, "cpu");
    EXPECT_EQ(forced.note, "CUDA reduction unavailable (" + cuda.reason + "); used the CPU path");
    EXPECT_EQ(automatic.path_used, "cpu");
    EXPECT_EQ(automatic.note, "CUDA not used: " + cuda.reason);
    EXPECT_THROW(reduce_edges_cuda(recs, windows), CudaReduceError);
  }
}

}  // namespace
}  // namespace culprit
