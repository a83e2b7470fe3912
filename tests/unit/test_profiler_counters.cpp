// probing's nccl.profiler_counters: what each rank's profiler lost, as notes, and the ranks
// whose queue pairs the idle-send test leaves out.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "io/local_data.hpp"
#include "io/probing_csv_reader.hpp"
#include "io/profiler_counters.hpp"
#include "pipeline/local_stage.hpp"

namespace culprit {
namespace {

const char* kCountersHeader =
    "ts,rank,coll_events,p2p_events,proxy_op_events,proxy_step_events,kernel_ch_events,net_events,rows_written,"
    "pool_exhausted,write_errors,filtered,coll_live,proxy_live,step_live,kch_live,net_live,coll_cap,proxy_cap,"
    "step_cap,kch_cap,net_cap,ring_chunks_recycled,ring_rows_overwritten";

TEST(ProfilerCounters, EachRanksLargestCountIsWhatItLost) {
  ProfilerCounterTally t;
  t.add("nodeA", 3, 5, 0, 0);
  t.add("nodeA", 3, 12, 0, 0);  // cumulative: the later snapshot
  t.add("nodeA", 4, 0, 0, 900);
  t.add("nodeB", 1, 0, 2, 0);
  EXPECT_EQ(t.losing_ranks(), (std::set<std::pair<std::string, int32_t>>{{"nodeA", 3}, {"nodeB", 1}}));
  const std::vector<std::string> notes = t.notes();
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_EQ(notes[0], "probing's event pool ran out on rank 3 (12): rows lost, queue pairs not judged by idle sends");
  EXPECT_EQ(notes[1], "probing failed to write rows of rank 1 (2): rows lost, queue pairs not judged by idle sends");
  EXPECT_EQ(notes[2], "probing's ring buffer overwrote old rows of rank 4 (900): tables hold the newest only");
  ProfilerCounterTally healthy;
  healthy.add("nodeA", 0, 0, 0, 0);
  EXPECT_TRUE(healthy.notes().empty());
  EXPECT_TRUE(healthy.losing_ranks().empty());
}

TEST(ProfilerCounters, ManyRanksAreCountedNotListed) {
  ProfilerCounterTally t;
  for (int32_t r = 0; r < 11; ++r) t.add("nodeA", r, 1, 0, 0);
  const std::vector<std::string> notes = t.notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("rank 0 (1), rank 1 (1) and 9 more:"), std::string::npos);
  // A note stays one short line whatever the ranks and counts.
  ProfilerCounterTally big;
  for (int32_t r = 2147483640; r < 2147483647; ++r)
    big.add("a-very-long-host-name.example.org", r, UINT64_MAX, UINT64_MAX, UINT64_MAX);
  for (const std::string& note : big.notes()) EXPECT_LT(note.size(), 180u) << note;
}

// Read back from the table: the file is no error, names no process, and the queue pairs of a
// rank that lost events give the idle-send test nothing.
TEST(ProfilerCounters, TheTableIsReadAndItsRanksQueuePairsLeftOut) {
  LocalData d;
  read_probing_csv_buffer(std::string(kCountersHeader) + "\n" +
                              "1,3,10,0,40,0,0,7,50,6,0,0,0,0,0,0,0,64,256,0,0,0,0,0\n"
                              "2,4,10,0,40,0,0,7,50,0,0,0,0,0,0,0,0,64,256,0,0,0,0,0\n"
                              "3,x,10,0,40,0,0,7,50,0,0,0,0,0,0,0,0,64,256,0,0,0,0,0\n",
                          "profiler_counters.csv", "nodeA", d);
  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_EQ(d.inputs[0].error, "");
  EXPECT_EQ(d.inputs[0].layout, "profiler_counters");
  EXPECT_EQ(d.inputs[0].records, 2u);
  EXPECT_EQ(d.inputs[0].rejected, 1u);
  EXPECT_TRUE(d.processes.empty());
  ASSERT_EQ(d.inputs[0].notes.size(), 1u);
  EXPECT_EQ(d.inputs[0].notes[0].rfind("probing's event pool ran out on rank 3 (6)", 0), 0u);

  // Ranks 3 and 4 each with a queue pair whose sends found it idle.
  read_probing_csv_buffer("ts,rank,device,qp_num,wr_id,opcode,length,duration_ns\n"
                          "10000,3,0,77,1,1,4096,1000\n20000,3,0,77,2,1,4096,1000\n"
                          "30000,3,0,77,3,1,4096,1000\n40000,3,0,77,4,1,4096,1000\n"
                          "50000,3,0,77,5,1,4096,1000\n"
                          "10000,4,0,78,1,1,4096,1000\n20000,4,0,78,2,1,4096,1000\n"
                          "30000,4,0,78,3,1,4096,1000\n40000,4,0,78,4,1,4096,1000\n"
                          "50000,4,0,78,5,1,4096,1000\n",
                          "net_qp.csv", "nodeA", d);
  const NodeSummary s = run_local_stage(d, {}, ReducePath::kCpu).summary;
  ASSERT_EQ(s.qps.size(), 2u);
  for (const QpObservation& q : s.qps) {
    const int32_t rank = d.processes.at(q.process).rank;
    EXPECT_EQ(q.idle_sends, rank == 3 ? 0u : 4u) << "rank " << rank;
  }
}

}  // namespace
}  // namespace culprit
