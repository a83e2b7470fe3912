// The local stage's use of kernel records: a record whose window is not the kernel's (probing's
// coll_perf timed by proxy ops or the host's enqueue, or with child events lost) orders its
// GPU's kernels but gives no gap and no busy time.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "io/local_data.hpp"
#include "pipeline/local_stage.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0xabcdef;

// One GPU, rank 0 of a collective communicator, with kernels 0..5: each runs 2 us and the GPU
// computes 10 us before the next. Kernel `odd_one` has a window that is not the kernel's: the
// host's enqueue call, 3 us long, 1 us before the kernel would start.
LocalData one_gpu(int odd_one) {
  LocalData d;
  const uint32_t process = d.process_index("nodeA", 100, 0);
  d.note_comm_rank(kComm, 0, process, true, 5);
  uint64_t t = 1000000;
  for (uint64_t seq = 0; seq < 6; ++seq) {
    KernelStartRecord k;
    k.comm_hash = kComm;
    k.seq = seq;
    k.process = process;
    k.rank = 0;
    k.start_gpu_clk_ns = t;
    k.stop_gpu_clk_ns = t + 2000;
    if (static_cast<int>(seq) == odd_one) {
      k.start_gpu_clk_ns = t - 1000;
      k.stop_gpu_clk_ns = t + 2000;
      k.window_unknown = 1;
    }
    d.kernel_starts.push_back(k);
    t += 12000;
  }
  return d;
}

TEST(LocalStageKernels, ARecordWithoutTheKernelsWindowGivesNoGapOnEitherSide) {
  const GlobalCommRank all = run_local_stage(one_gpu(-1), {}, ReducePath::kCpu).summary.comm_ranks.at(0);
  EXPECT_EQ(all.gap_samples, 5u);
  EXPECT_EQ(all.gap_sum_ns, 5u * 10000);
  EXPECT_EQ(all.busy_sum_ns, 6u * 2000);

  const GlobalCommRank r = run_local_stage(one_gpu(3), {}, ReducePath::kCpu).summary.comm_ranks.at(0);
  // The gaps before kernels 3 and 4 touch the enqueue-timed record: neither is taken, and no
  // gap spans it (kernel 2's end to kernel 4's start would be 22 us of "own work").
  EXPECT_EQ(r.gap_samples, 3u);
  EXPECT_EQ(r.gap_sum_ns, 3u * 10000);
  std::vector<uint64_t> keys;
  for (const GapSample& g : r.gaps) {
    keys.push_back(g.key);
    EXPECT_NEAR(g.log_ns, std::log(10000.0), 1e-9);
  }
  EXPECT_EQ(keys, (std::vector<uint64_t>{1, 2, 5}));
  EXPECT_EQ(r.busy_sum_ns, 5u * 2000);  // its window is not busy time
}

}  // namespace
}  // namespace culprit
