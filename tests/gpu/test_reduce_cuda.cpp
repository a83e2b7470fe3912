// CUDA reduction against the CPU path and an independent reference, bit for bit, on random
// and adversarial inputs. Every test skips (saying why) when no usable CUDA device exists;
// with a device they compare for real.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdio>
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

#define REQUIRE_CUDA()                                                            \
  do {                                                                            \
    CudaAvailability cuda_ = cuda_availability();                                 \
    if (!cuda_.usable) GTEST_SKIP() << "CUDA reduction not usable: " << cuda_.reason; \
  } while (0)

// CUDA result (default chunking and the given chunk sizes) == CPU result == reference.
void expect_all_agree(const std::vector<ProxyOpRecord>& recs, const std::vector<CommWindow>& windows,
                      std::initializer_list<std::size_t> chunks = {}) {
  auto ref = reference_reduce(recs, windows);
  auto cpu = reduce_edges_cpu(recs, windows, 0);
  ASSERT_TRUE(same_bits(cpu, ref)) << "CPU path disagrees with the reference";
  auto gpu = reduce_edges_cuda(recs, windows);
  EXPECT_EQ(gpu.size(), ref.size());
  EXPECT_TRUE(same_bits(gpu, ref)) << "CUDA path (default chunks) disagrees";
  for (std::size_t c : chunks) {
    SCOPED_TRACE(c);
    EXPECT_TRUE(same_bits(reduce_edges_cuda_chunked(recs, windows, c), ref))
        << "CUDA path with chunks of " << c << " records disagrees";
  }
}

TEST(ReduceCuda, ProbeReportsDevice) {
  REQUIRE_CUDA();
  CudaAvailability a = cuda_availability();
  EXPECT_TRUE(a.reason.empty());
  EXPECT_FALSE(a.device.empty());
  std::printf("CUDA device: %s\n", a.device.c_str());
}

TEST(ReduceCuda, RandomInputsMatchCpu) {
  REQUIRE_CUDA();
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(seed);
    GenOptions o;
    o.n = 50000 * seed;
    o.comms = static_cast<int>(2 + seed);
    o.ranks = 16;
    o.channels = 4;
    o.seed = seed;
    auto recs = random_records(o);
    expect_all_agree(recs, testdata::some_windows(o.comms, o.max_seq), {4096, 33333});
    expect_all_agree(recs, {});
  }
}

TEST(ReduceCuda, LargeInputSpansSeveralDefaultChunks) {
  REQUIRE_CUDA();
  GenOptions o;
  o.n = 5'000'000;  // more than two default chunks: both buffer sets are reused
  o.comms = 4;
  o.ranks = 256;
  o.channels = 16;
  o.seed = 99;
  auto recs = random_records(o);
  auto windows = testdata::some_windows(o.comms, o.max_seq);
  auto cpu = reduce_edges_cpu(recs, windows, 0);
  auto gpu = reduce_edges_cuda(recs, windows);
  EXPECT_GT(gpu.size(), 10000u);
  EXPECT_TRUE(same_bits(gpu, cpu));
}

TEST(ReduceCuda, OneEdgeWithEverything) {
  REQUIRE_CUDA();
  std::vector<ProxyOpRecord> recs(1'000'000);
  for (std::size_t i = 0; i < recs.size(); ++i) {
    ProxyOpRecord& r = recs[i];
    r.comm_hash = 5;
    r.is_send = static_cast<uint8_t>(i % 2);
    r.rank = r.is_send ? 1 : 2;  // rank 1 sends to 2, rank 2 receives from 1: one edge
    r.peer = r.is_send ? 2 : 1;
    r.channel = 0;
    r.seq = i;
    for (int p = 0; p < kPhaseCount; ++p) r.phase_ns[p] = i * 7 + static_cast<uint64_t>(p);
    r.steps = static_cast<uint32_t>(i % 100);
    r.bytes = i;
  }
  auto ref = reference_reduce(recs, {});
  ASSERT_EQ(ref.size(), 1u);
  expect_all_agree(recs, {}, {100000, 999999});
  std::vector<CommWindow> windows = {{5, 500000}};
  expect_all_agree(recs, windows, {65536});
}

TEST(ReduceCuda, AllDistinctEdges) {
  REQUIRE_CUDA();
  std::vector<ProxyOpRecord> recs(600000);
  for (std::size_t i = 0; i < recs.size(); ++i) {
    ProxyOpRecord& r = recs[i];
    const auto j = static_cast<int32_t>(i);
    r.comm_hash = i % 5 == 0 ? UINT64_MAX : i % 11;
    r.rank = j;
    r.peer = -j;
    r.channel = j % 7 - 3;
    r.is_send = static_cast<uint8_t>(i % 3 == 0);
    r.phase_ns[0] = r.phase_ns[3] = i;
    r.steps = 1;
    r.bytes = i;
  }
  auto ref = reference_reduce(recs, {});
  ASSERT_EQ(ref.size(), recs.size());
  expect_all_agree(recs, {}, {1000, 250000});
}

TEST(ReduceCuda, ExtremeKeysSortLikeEdgeKey) {
  REQUIRE_CUDA();
  std::vector<ProxyOpRecord> recs;
  const int32_t values[] = {INT32_MIN, INT32_MIN + 1, -2, -1, 0, 1, INT32_MAX - 1, INT32_MAX};
  const uint64_t hashes[] = {0, 1, 0x8000000000000000ULL, UINT64_MAX};
  for (uint64_t h : hashes)
    for (int32_t a : values)
      for (int32_t b : values)
        for (int32_t c : {INT32_MIN, -1, 0, INT32_MAX}) {
          ProxyOpRecord r;
          r.comm_hash = h;
          r.rank = a;
          r.peer = b;
          r.channel = c;
          r.is_send = static_cast<uint8_t>((a ^ b) & 1);
          r.phase_ns[1] = r.phase_ns[4] = 3;
          recs.push_back(r);
          recs.push_back(r);
        }
  expect_all_agree(recs, {}, {1, 7, 1000});
}

TEST(ReduceCuda, EmptyAndFullyFilteredInputs) {
  REQUIRE_CUDA();
  EXPECT_TRUE(reduce_edges_cuda({}, {}).empty());
  GenOptions o;
  o.n = 10000;
  o.p2p_fraction = 0;
  auto recs = random_records(o);
  std::vector<CommWindow> all_out;
  for (int c = 0; c < o.comms; ++c) all_out.push_back({testdata::comm_hash_of(c), UINT64_MAX});
  std::sort(all_out.begin(), all_out.end(),
            [](const CommWindow& a, const CommWindow& b) { return a.comm_hash < b.comm_hash; });
  EXPECT_TRUE(reduce_edges_cuda(recs, all_out).empty());
  EXPECT_TRUE(reduce_edges_cuda_chunked(recs, all_out, 999).empty());
  // min_seq 0 keeps everything; p2p records survive any window.
  std::vector<CommWindow> keep_all = all_out;
  for (auto& w : keep_all) w.min_seq = 0;
  expect_all_agree(recs, keep_all);
  o.p2p_fraction = 0.5;
  auto mixed = random_records(o);
  expect_all_agree(mixed, all_out, {100});
}

TEST(ReduceCuda, SaturatesNearOverflow) {
  REQUIRE_CUDA();
  GenOptions o;
  o.n = 200000;
  o.huge_values = true;
  o.comms = 2;
  o.ranks = 4;
  o.channels = 2;
  o.seed = 17;
  auto recs = random_records(o);
  auto ref = reference_reduce(recs, {});
  ASSERT_EQ(ref.front().send_bytes, UINT64_MAX);  // the data really does saturate
  expect_all_agree(recs, {}, {1, 3, 5000});
  // Sums that only saturate when chunk results are merged.
  std::vector<ProxyOpRecord> two(2);
  for (auto& r : two) {
    r.comm_hash = 1;
    r.rank = 0;
    r.peer = 1;
    r.channel = 0;
    r.is_send = 1;
    r.phase_ns[0] = UINT64_MAX / 2 + 1;
    r.bytes = UINT64_MAX - 1;
  }
  auto merged = reduce_edges_cuda_chunked(two, {}, 1);
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].phase_ns[0], UINT64_MAX);
  EXPECT_EQ(merged[0].send_bytes, UINT64_MAX);
  EXPECT_EQ(merged[0].send_ops, 2u);
}

TEST(ReduceCuda, ManySmallChunksAndRepeatedCalls) {
  REQUIRE_CUDA();
  GenOptions o;
  o.n = 100000;
  o.seed = 23;
  auto recs = random_records(o);
  auto windows = testdata::some_windows(o.comms, o.max_seq);
  auto ref = reference_reduce(recs, windows);
  for (std::size_t chunk : {1000u, 997u, 65536u, 99999u, 100000u, 200000u}) {
    SCOPED_TRACE(chunk);
    EXPECT_TRUE(same_bits(reduce_edges_cuda_chunked(recs, windows, chunk), ref));
  }
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(same_bits(reduce_edges_cuda(recs, windows), ref));
}

TEST(ReduceCuda, UnsortedWindowsAreSortedFirst) {
  REQUIRE_CUDA();
  GenOptions o;
  o.n = 50000;
  o.comms = 6;
  o.seed = 29;
  auto recs = random_records(o);
  auto windows = testdata::some_windows(o.comms, o.max_seq);
  std::vector<CommWindow> reversed(windows.rbegin(), windows.rend());
  EXPECT_TRUE(same_bits(reduce_edges_cuda(recs, reversed), reference_reduce(recs, windows)));
}

TEST(ReduceCuda, DispatcherRunsCuda) {
  REQUIRE_CUDA();
  GenOptions o;
  o.n = 20000;
  auto recs = random_records(o);
  auto out = reduce_edges(recs, {}, ReducePath::kCuda);
  EXPECT_EQ(out.path_used, "cuda");
  EXPECT_TRUE(out.note.empty());
  EXPECT_TRUE(same_bits(out.edges, reference_reduce(recs, {})));
  auto automatic = reduce_edges(recs, {}, ReducePath::kAuto);
  EXPECT_EQ(automatic.path_used, "cuda");
}

}  // namespace
}  // namespace culprit
