// The exchange blob: every table survives pack/unpack, and a serial gather merges halves.
#include <gtest/gtest.h>

#include "pipeline/exchange.hpp"

namespace culprit {
namespace {

NodeSummary sample() {
  NodeSummary s;
  s.processes = {{"nodeA", 11, -1, ""}, {"nodeB", -1, 12, ""}, {"nodeB", -1, -1, "tp=1,pp=0,dp=2"}};
  GlobalCommRank c;
  c.comm_hash = 0xFEDCBA9876543210ull;
  c.rank = 3;
  c.process = 1;
  c.newest_seq = 41;
  c.has_collective = true;
  c.cut_short = true;
  c.seq_unknown = true;
  c.gap_sum_ns = 777;
  c.gap_period_sum_ns = 1999;
  c.gap_samples = 7;
  c.gaps = {{41, 9.5}, {42, 9.75}};
  s.comm_ranks = {c};
  EdgeSummary e;
  e.key = {c.comm_hash, 3, 4, 1, 0};
  e.phase_ns[kSendWait] = 99;
  e.send_steps = 16;
  s.edges = {e};
  InputReport in;
  in.host = "nodeB";
  in.path = "/data/nodeB/x.json";
  in.format = "nccl-json";
  in.records = 5;
  in.rejected = 2;
  in.truncated = true;
  in.reject_reasons["malformed line"] = 2;
  in.notes = {"comm_hash blank: one unnamed communicator", "seq blank"};
  s.inputs = {in};
  s.qps = {{1, 0, 77, 10, 4096, 12345, 2048, 6, 55.5, 520.25}};
  P2pCallCount p;
  p.comm_hash = 0x8000000000000001ull;
  p.calls = 17;
  p.process = 1;
  p.rank = 1;
  p.peer = 2;
  p.is_send = 1;
  s.p2p_calls = {p};
  InflightRecord f;
  f.comm_hash = 0x8000000000000002ull;
  f.seq = 9;
  f.age_ns = 30'000'000'000ull;
  f.process = 2;
  f.rank = 5;
  f.peer = 4;
  f.channel = 1;
  f.kind = InflightKind::kProxyOp;
  f.is_send = 0;
  s.inflight = {f};
  return s;
}

TEST(Exchange, PackUnpackKeepsEveryTable) {
  NodeSummary back = unpack_node_summary(pack_node_summary(sample()));
  ASSERT_EQ(back.processes.size(), 3u);
  EXPECT_EQ(back.processes[1].host, "nodeB");
  EXPECT_EQ(back.processes[0].pid, 11);
  EXPECT_EQ(back.processes[0].rank, -1);
  EXPECT_EQ(back.processes[1].pid, -1);
  EXPECT_EQ(back.processes[1].rank, 12);
  EXPECT_EQ(back.processes[2].label, "tp=1,pp=0,dp=2");
  ASSERT_EQ(back.comm_ranks.size(), 1u);
  EXPECT_EQ(back.comm_ranks[0].comm_hash, 0xFEDCBA9876543210ull);
  EXPECT_TRUE(back.comm_ranks[0].cut_short);
  EXPECT_TRUE(back.comm_ranks[0].seq_unknown);
  EXPECT_EQ(back.comm_ranks[0].gap_samples, 7u);
  ASSERT_EQ(back.comm_ranks[0].gaps.size(), 2u);
  EXPECT_EQ(back.comm_ranks[0].gaps[1].key, 42u);
  EXPECT_EQ(back.comm_ranks[0].gaps[1].log_ns, 9.75);
  EXPECT_EQ(back.comm_ranks[0].gap_period_sum_ns, 1999u);
  ASSERT_EQ(back.edges.size(), 1u);
  EXPECT_EQ(back.edges[0].phase_ns[kSendWait], 99u);
  ASSERT_EQ(back.inputs.size(), 1u);
  EXPECT_TRUE(back.inputs[0].truncated);
  EXPECT_EQ(back.inputs[0].reject_reasons.at("malformed line"), 2u);
  EXPECT_EQ(back.inputs[0].notes, sample().inputs[0].notes);
  ASSERT_EQ(back.qps.size(), 1u);
  EXPECT_EQ(back.qps[0].qp_num, 77u);
  EXPECT_EQ(back.qps[0].sum_ns, 12345u);
  // The idle-send test's figures travel too.
  EXPECT_EQ(back.qps[0].wr_length, 2048u);
  EXPECT_EQ(back.qps[0].idle_sends, 6u);
  EXPECT_DOUBLE_EQ(back.qps[0].idle_log_ns_sum, 55.5);
  EXPECT_DOUBLE_EQ(back.qps[0].idle_log_ns_sq_sum, 520.25);
  ASSERT_EQ(back.p2p_calls.size(), 1u);
  EXPECT_EQ(back.p2p_calls[0].comm_hash, 0x8000000000000001ull);
  EXPECT_EQ(back.p2p_calls[0].calls, 17u);
  EXPECT_EQ(back.p2p_calls[0].peer, 2);
  EXPECT_EQ(back.p2p_calls[0].is_send, 1u);
  ASSERT_EQ(back.inflight.size(), 1u);
  EXPECT_EQ(back.inflight[0].comm_hash, 0x8000000000000002ull);
  EXPECT_EQ(back.inflight[0].age_ns, 30'000'000'000ull);
  EXPECT_EQ(back.inflight[0].kind, InflightKind::kProxyOp);
  EXPECT_EQ(back.inflight[0].peer, 4);
  EXPECT_EQ(back.inflight[0].is_send, 0);
}

// Reports travel whole: every reason and note, texts of any length, the layout.
TEST(Exchange, InputReportsTravelWhole) {
  NodeSummary s = sample();
  InputReport& in = s.inputs[0];
  in.path = "/data/" + std::string(400, 'p') + "/x.json";
  in.layout = "2.27+";
  in.error = "cannot parse";
  for (int k = 0; k < 5; ++k) in.reject_reasons["reason " + std::to_string(k)] = 10 + k;
  in.notes.push_back(std::string(300, 'n'));
  in.notes.push_back("fourth note");
  NodeSummary back = unpack_node_summary(pack_node_summary(s));
  ASSERT_EQ(back.inputs.size(), 1u);
  EXPECT_EQ(back.inputs[0].path, in.path);
  EXPECT_EQ(back.inputs[0].layout, "2.27+");
  EXPECT_EQ(back.inputs[0].error, "cannot parse");
  EXPECT_EQ(back.inputs[0].reject_reasons, in.reject_reasons);
  EXPECT_EQ(back.inputs[0].notes, in.notes);
  EXPECT_EQ(back.inputs[0].records, 5u);
  EXPECT_EQ(back.inputs[0].rejected, 2u);
}

TEST(Exchange, EveryFixedFieldOfACommRankTravels) {
  NodeSummary s = sample();
  GlobalCommRank& c = s.comm_ranks[0];
  c.kernel_late_sum_ns = -123;
  c.kernel_samples = 4;
  c.op_time_sum_ns = 5555;
  c.op_samples = 6;
  c.busy_sum_ns = 987654321;
  c.last_stop_samples = 8;
  c.last_stops = 7;
  c.loop_lag_sum = 32.5;
  c.loop_lag_sq_sum = 132.25;
  c.loop_lag_samples = 2;
  c.chain_from[0] = 5;
  c.chain_from[3] = 2;
  c.chain_length = 4;
  const GlobalCommRank back = unpack_node_summary(pack_node_summary(s)).comm_ranks[0];
  EXPECT_EQ(back.last_stop_samples, 8u);
  EXPECT_EQ(back.last_stops, 7u);
  EXPECT_EQ(back.loop_lag_sum, 32.5);
  EXPECT_EQ(back.loop_lag_sq_sum, 132.25);
  EXPECT_EQ(back.loop_lag_samples, 2u);
  EXPECT_EQ(back.chain_from[0], 5);
  EXPECT_EQ(back.chain_from[3], 2);
  EXPECT_EQ(back.chain_length, 4u);
  EXPECT_EQ(back.kernel_late_sum_ns, -123);
  EXPECT_EQ(back.kernel_samples, 4u);
  EXPECT_EQ(back.op_time_sum_ns, 5555u);
  EXPECT_EQ(back.op_samples, 6u);
  EXPECT_EQ(back.busy_sum_ns, 987654321u);
  EXPECT_EQ(back.newest_seq, 41u);
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.process, 1u);
}

// The same rank reported twice (copied files): each kind of evidence from the richer report.
TEST(Exchange, ARankReportedTwiceKeepsTheRicherEvidence) {
  NodeSummary s = sample();
  GlobalCommRank more = s.comm_ranks[0];
  more.newest_seq = 50;
  more.has_collective = false;
  more.cut_short = false;
  more.seq_unknown = false;
  more.kernel_late_sum_ns = 900;
  more.kernel_samples = 9;
  more.gap_samples = 3;  // fewer gaps than the first report: its gaps stay
  more.gap_sum_ns = 1;
  more.gaps.clear();
  more.op_samples = 2;
  more.op_time_sum_ns = 222;
  more.busy_sum_ns = 77;
  more.last_stop_samples = 5;  // the first report has none: these come through
  more.last_stops = 5;
  more.loop_lag_sum = 16.5;
  more.loop_lag_sq_sum = 272.25;
  more.loop_lag_samples = 1;
  more.chain_from[1] = 7;
  more.chain_length = 3;
  s.comm_ranks.push_back(more);
  auto comm = make_serial_communicator();
  Observations obs;
  std::vector<InputReport> inputs;
  gather_observations(*comm, s, 20, &obs, &inputs);
  ASSERT_EQ(obs.comm_ranks.size(), 1u);
  const GlobalCommRank& c = obs.comm_ranks[0];
  EXPECT_EQ(c.newest_seq, 50u);
  EXPECT_TRUE(c.has_collective);
  EXPECT_TRUE(c.cut_short);
  EXPECT_FALSE(c.seq_unknown);
  EXPECT_EQ(c.kernel_late_sum_ns, 900);
  EXPECT_EQ(c.kernel_samples, 9u);
  EXPECT_EQ(c.gap_samples, 7u);
  EXPECT_EQ(c.gap_sum_ns, 777u);
  EXPECT_EQ(c.gaps.size(), 2u);
  EXPECT_EQ(c.op_samples, 2u);
  EXPECT_EQ(c.op_time_sum_ns, 222u);
  EXPECT_EQ(c.busy_sum_ns, 77u);
  EXPECT_EQ(c.last_stop_samples, 5u);
  EXPECT_EQ(c.last_stops, 5u);
  EXPECT_EQ(c.loop_lag_sum, 16.5);
  EXPECT_EQ(c.loop_lag_samples, 1u);
  EXPECT_EQ(c.chain_from[1], 7);
  EXPECT_EQ(c.chain_length, 3u);
}

TEST(Exchange, InflightRecordWithABadProcessIsRejected) {
  NodeSummary s = sample();
  s.inflight[0].process = 99;
  EXPECT_THROW(unpack_node_summary(pack_node_summary(s)), std::runtime_error);
}

TEST(Exchange, CorruptBlobIsAnErrorNotACrash) {
  std::vector<char> blob = pack_node_summary(sample());
  blob.resize(blob.size() / 2);
  EXPECT_THROW(unpack_node_summary(blob), std::runtime_error);
  blob.assign(64, 'x');
  EXPECT_THROW(unpack_node_summary(blob), std::runtime_error);
  blob = pack_node_summary(sample());
  blob.push_back('\0');  // a byte after the last table
  EXPECT_THROW(unpack_node_summary(blob), std::runtime_error);
}

TEST(Exchange, CommRankWithABadProcessIsRejected) {
  NodeSummary s = sample();
  s.comm_ranks[0].process = 3;
  EXPECT_THROW(unpack_node_summary(pack_node_summary(s)), std::runtime_error);
}

TEST(Exchange, SerialGatherRemapsProcessesOfQueuePairsAndP2pCalls) {
  auto comm = make_serial_communicator();
  Observations obs;
  std::vector<InputReport> inputs;
  gather_observations(*comm, sample(), 20, &obs, &inputs);
  ASSERT_EQ(obs.qps.size(), 1u);
  EXPECT_EQ(obs.processes[obs.qps[0].process].host, "nodeB");
  ASSERT_EQ(obs.p2p_calls.size(), 1u);
  EXPECT_EQ(obs.processes[obs.p2p_calls[0].process].host, "nodeB");
  ASSERT_EQ(obs.inflight.size(), 1u);
  EXPECT_EQ(obs.processes[obs.inflight[0].process].label, "tp=1,pp=0,dp=2");
  // Processes are told apart by pid, rank and label: three rows stay three.
  EXPECT_EQ(obs.processes.size(), 3u);
  EXPECT_EQ(inputs.size(), 1u);
  EXPECT_EQ(obs.edges.size(), 1u);
}

}  // namespace
}  // namespace culprit
