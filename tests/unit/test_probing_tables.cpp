// probing's nccl.inflight_ops (hang snapshots) and nccl.coll_perf (per-collective timings),
// each read from the same rows as CSV and as JSON (FORMATS.md §3).
#include <gtest/gtest.h>

#include <string>

#include "io/probing_csv_reader.hpp"
#include "io/probing_json_reader.hpp"
#include "test_probing_export.hpp"

namespace culprit {
namespace {

enum class Syntax { kCsv, kJson };

class ProbingTables : public ::testing::TestWithParam<Syntax> {
 protected:
  LocalData read(const std::string& csv, const std::string& name = "export") {
    LocalData d;
    if (GetParam() == Syntax::kCsv) read_probing_csv_buffer(csv, name + ".csv", "hostA", d);
    else read_probing_json_buffer(testing::probing_json(csv), name + ".json", "hostA", d);
    return d;
  }
};

uint64_t reason(const LocalData& d, const std::string& why) {
  auto it = d.inputs.at(0).reject_reasons.find(why);
  return it == d.inputs.at(0).reject_reasons.end() ? 0 : it->second;
}

const char* kInflightHeader = "ts,rank,comm_hash,coll_func,seq,kind,channel_id,peer,is_send,start_ns,age_ns";

TEST_P(ProbingTables, InflightSnapshotsBecomeOneRecordPerOperation) {
  std::string text = std::string(kInflightHeader) + "\n" +
      // Two snapshots of rank 2 inside AllReduce 41, 10 s apart.
      "1765223126000000000,2,77,AllReduce,41,coll,-1,-1,-1,1765223115000000000,11000000000\n"
      "1765223136000000000,2,77,AllReduce,41,coll,-1,-1,-1,1765223115000000000,21000000000\n"
      // Its proxy op waiting to receive from rank 1 on channel 3, and a p2p.
      "1765223136000000000,2,77,AllReduce,41,proxy_op,3,1,0,1765223115000000000,20000000000\n"
      "1765223136000000000,2,77,Send,0,p2p,-1,3,1,1765223116000000000,19000000000\n"
      "1765223136000000000,2,77,AllReduce,41,stuck,-1,-1,-1,1765223115000000000,11000000000\n"
      "1765223136000000000,2,77,AllReduce,41,coll,-1,-1,-1,1765223115000000000,\n";
  LocalData d = read(text);
  const InputReport& in = d.inputs.at(0);
  EXPECT_EQ(in.error, "");
  EXPECT_EQ(in.layout, "inflight_ops");
  EXPECT_EQ(in.records, 3u);
  EXPECT_EQ(in.rejected, 2u);
  EXPECT_EQ(reason(d, "inflight_ops row without a valid kind"), 1u);
  EXPECT_EQ(reason(d, "inflight_ops row without a valid age_ns"), 1u);
  EXPECT_TRUE(d.ops.empty());
  ASSERT_EQ(d.inflight.size(), 3u);
  const InflightRecord& coll = d.inflight[0];
  EXPECT_EQ(coll.kind, InflightKind::kCollective);
  EXPECT_EQ(coll.comm_hash, 77u);
  EXPECT_EQ(coll.rank, 2);
  EXPECT_EQ(coll.seq, 41u);
  EXPECT_EQ(coll.seq_unknown, 0);
  EXPECT_EQ(coll.age_ns, 21000000000u);  // the newest snapshot's age
  EXPECT_EQ(coll.channel, -1);
  EXPECT_EQ(coll.is_send, -1);
  const InflightRecord& op = d.inflight[1];
  EXPECT_EQ(op.kind, InflightKind::kProxyOp);
  EXPECT_EQ(op.channel, 3);
  EXPECT_EQ(op.peer, 1);
  EXPECT_EQ(op.is_send, 0);
  EXPECT_EQ(d.inflight[2].kind, InflightKind::kP2p);
  EXPECT_EQ(d.inflight[2].peer, 3);
  EXPECT_EQ(d.inflight[2].is_send, 1);
  ASSERT_EQ(d.processes.size(), 1u);
  EXPECT_EQ(d.processes[0].rank, 2);
  for (const InflightRecord& f : d.inflight) EXPECT_EQ(f.process, 0u);
  ASSERT_EQ(d.comm_ranks.size(), 1u);
  EXPECT_TRUE(d.comm_ranks[0].has_seq);
  EXPECT_EQ(d.comm_ranks[0].newest_seq, 41u);
}

TEST_P(ProbingTables, InflightWithBlankUnsignedCells) {
  std::string text = std::string(kInflightHeader) + "\n" +
      "1765223126000000000,0,,AllReduce,,coll,-1,-1,-1,1765223115000000000,11000000000\n"
      "1765223126000000000,1,,AllReduce,,coll,-1,-1,-1,1765223115000000000,11000000000\n";
  LocalData d = read(text, "node1/inflight");
  const InputReport& in = d.inputs.at(0);
  EXPECT_EQ(in.error, "");
  ASSERT_EQ(d.inflight.size(), 2u);
  EXPECT_EQ(d.inflight[0].seq_unknown, 1);
  EXPECT_NE(d.inflight[0].comm_hash, 0u);
  EXPECT_EQ(d.inflight[0].comm_hash, d.inflight[1].comm_hash);
  EXPECT_EQ(d.processes.size(), 2u);
  ASSERT_EQ(d.comm_ranks.size(), 2u);
  EXPECT_TRUE(d.comm_ranks[0].has_collective);
  EXPECT_FALSE(d.comm_ranks[0].has_seq);
  ASSERT_EQ(in.notes.size(), 2u);
  EXPECT_EQ(in.notes[0].rfind("comm_hash blank", 0), 0u);
  EXPECT_EQ(in.notes[1].rfind("seq blank on collective rows", 0), 0u);
}

TEST_P(ProbingTables, InflightWithoutRowsIsNoError) {
  LocalData d = read(std::string(kInflightHeader) + "\n");
  if (GetParam() == Syntax::kJson) {
    EXPECT_EQ(d.inputs.at(0).error, "empty JSON file");  // `[]` names no table
    return;
  }
  EXPECT_EQ(d.inputs.at(0).error, "");
  EXPECT_EQ(d.inputs.at(0).notes, std::vector<std::string>{"no rows: no operation was in flight at a watchdog snapshot"});
}

const char* kCollPerfHeader =
    "ts,rank,tp_rank,pp_rank,dp_rank,comm_hash,n_ranks,coll_func,seq,is_p2p,peer,count,"
    "msg_size_bytes,dtype,algo,proto,n_channels,exec_time_ns,enqueue_time_ns,timing_source,"
    "algobw_gbps,pool_events_dropped";

TEST_P(ProbingTables, CollPerfRowsAreTheKernelClock) {
  std::string text = std::string(kCollPerfHeader) + "\n" +
      "1765223116930000000,3,0,0,3,12715772615376301750,8,AllReduce,5,0,-1,1048576,4194304,ncclFloat32,RING,SIMPLE,2,2000000,15000,kernel_gpu,2.097152,0\n"
      "1765223116950000000,3,0,0,3,12715772615376301750,8,AllReduce,6,0,-1,1048576,4194304,ncclFloat32,Tree,SIMPLE,2,2500000,15000,kernel_gpu,1.6777216,0\n"
      "1765223116960000000,3,0,0,3,12715772615376301750,8,Send,0,1,4,1024,4096,ncclFloat32,,SIMPLE,1,300000,9000,proxy,0.013653,0\n"
      "1765223116970000000,3,0,0,3,12715772615376301750,8,AllReduce,7,0,-1,1048576,4194304,ncclFloat32,RING,SIMPLE,2,0,15000,enqueue,0,0\n"
      "1765223116980000000,3,0,0,3,12715772615376301750,8,AllReduce,8,0,-1,1048576,4194304,ncclFloat32,RING,SIMPLE,2,900000,15000,kernel_ch,4.6,3\n"
      "1765223116990000000,3,0,0,3,12715772615376301750,8,AllReduce,9,0,-1,1048576,4194304,ncclFloat32,RING,SIMPLE,2,40000,15000,enqueue,104.8,0\n";
  LocalData d = read(text);
  const InputReport& in = d.inputs.at(0);
  EXPECT_EQ(in.error, "");
  EXPECT_EQ(in.layout, "coll_perf");
  EXPECT_EQ(in.records, 5u);
  EXPECT_EQ(reason(d, "coll_perf row without a valid exec_time_ns"), 1u);
  ASSERT_EQ(d.kernel_starts.size(), 5u);
  // Only the kernel's own events time it: the proxy ops' window, a row that lost child events
  // and the host's enqueue call order the GPU's kernels but are no kernel window.
  const std::vector<int> unknown = {d.kernel_starts[0].window_unknown, d.kernel_starts[1].window_unknown,
                                    d.kernel_starts[2].window_unknown, d.kernel_starts[3].window_unknown,
                                    d.kernel_starts[4].window_unknown};
  EXPECT_EQ(unknown, (std::vector<int>{0, 0, 1, 1, 1}));
  const KernelStartRecord& k = d.kernel_starts[0];
  EXPECT_EQ(k.comm_hash, 12715772615376301750ull);
  EXPECT_EQ(k.seq, 5u);
  EXPECT_EQ(k.rank, 3);
  EXPECT_EQ(k.is_p2p, 0);
  EXPECT_EQ(k.start_gpu_clk_ns, 1765223116930000000ull - 2000000);
  EXPECT_EQ(k.stop_gpu_clk_ns, 1765223116930000000ull);
  EXPECT_EQ(d.kernel_starts[2].is_p2p, 1);
  EXPECT_EQ(k.tree, 0);  // RING
  EXPECT_EQ(d.kernel_starts[1].tree, 1);  // Tree: its stops may give the node's chain order
  ASSERT_EQ(d.comm_ranks.size(), 1u);
  EXPECT_EQ(d.comm_ranks[0].newest_seq, 9u);
  EXPECT_EQ(d.processes.at(k.process).rank, 3);
  ASSERT_EQ(in.notes.size(), 2u);
  EXPECT_EQ(in.notes[0],
            "kernel clock taken from coll_perf: start = ts - exec_time_ns, stop = ts (timing_source "
            "kernel_gpu,proxy,kernel_ch,enqueue)");
  EXPECT_EQ(in.notes[1],
            "3 coll_perf row(s) timed by proxy ops or the enqueue call, or with pool_events_dropped > 0: no kernel "
            "window, they only order their GPU's kernels");
}

TEST_P(ProbingTables, CollPerfWithBlankSequenceCountsForGapsOnly) {
  std::string text = std::string(kCollPerfHeader) + "\n" +
      "1765223116930000000,3,0,0,3,,8,AllReduce,,0,-1,,,ncclFloat32,RING,SIMPLE,2,2000000,15000,kernel_gpu,2.1,0\n";
  LocalData d = read(text);
  ASSERT_EQ(d.kernel_starts.size(), 1u);
  // Not lined up with node peers (its sequence is unknown), but still this GPU's work.
  EXPECT_EQ(d.kernel_starts[0].is_p2p, 1);
  ASSERT_EQ(d.comm_ranks.size(), 1u);
  EXPECT_TRUE(d.comm_ranks[0].has_collective);
  EXPECT_FALSE(d.comm_ranks[0].has_seq);
  EXPECT_EQ(d.inputs[0].notes.size(), 3u);
}

INSTANTIATE_TEST_SUITE_P(CsvAndJson, ProbingTables, ::testing::Values(Syntax::kCsv, Syntax::kJson),
                         [](const auto& info) { return info.param == Syntax::kCsv ? "Csv" : "Json"; });

}  // namespace
}  // namespace culprit
