// probing's CSV exports (FORMATS.md §3): nccl.proxy_ops with and without a header, with the
// federation columns and a pid column, P2P rows, malformed rows; the cells probing's
// converter leaves blank, negative cast hashes, several communicators in one export;
// nccl.net_qp (QP stats), nccl.inflight_ops and nccl.coll_perf.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/discover.hpp"
#include "io/probing_csv_reader.hpp"
#include "io/probing_rows.hpp"

namespace culprit {
namespace {

const char* kHeader =
    "ts,rank,tp_rank,pp_rank,dp_rank,comm_hash,coll_func,seq,channel_id,peer,is_send,n_steps,"
    "trans_bytes,send_gpu_wait_ns,send_peer_wait_ns,send_wait_ns,recv_wait_ns,recv_flush_wait_ns";
// Rank 3 sends to 4 and receives from 2 on channel 1 of AllReduce seq 9.
const char* kSendRow = "1765223116927674080,3,0,0,3,12715772615376301750,AllReduce,9,1,4,1,8,65536,1000,200,3000,0,0";
const char* kRecvRow = "1765223116927675080,3,0,0,3,12715772615376301750,AllReduce,9,1,2,0,8,65536,0,0,0,5000,70";

LocalData read(const std::string& text, const std::string& name = "proxy_ops.csv") {
  LocalData d;
  read_probing_csv_buffer(text, name, "hostA", d);
  return d;
}

uint64_t reason(const LocalData& d, const std::string& why) {
  auto it = d.inputs.at(0).reject_reasons.find(why);
  return it == d.inputs.at(0).reject_reasons.end() ? 0 : it->second;
}

void expect_two_rows(const LocalData& d) {
  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_EQ(d.inputs[0].error, "");
  EXPECT_EQ(d.inputs[0].format, "probing-csv");
  EXPECT_EQ(d.inputs[0].layout, "proxy_ops");
  EXPECT_EQ(d.inputs[0].records, 2u);
  EXPECT_EQ(d.inputs[0].rejected, 0u);
  ASSERT_EQ(d.ops.size(), 2u);
  const ProxyOpRecord& s = d.ops[0];
  EXPECT_EQ(s.comm_hash, 12715772615376301750ull);
  EXPECT_EQ(s.rank, 3);
  EXPECT_EQ(s.peer, 4);
  EXPECT_EQ(s.channel, 1);
  EXPECT_EQ(s.seq, 9u);
  EXPECT_EQ(s.is_send, 1);
  EXPECT_EQ(s.is_p2p, 0);
  EXPECT_EQ(s.steps, 8u);
  EXPECT_EQ(s.bytes, 65536u);
  EXPECT_EQ(s.phase_ns[kSendGpuWait], 1000u);
  EXPECT_EQ(s.phase_ns[kSendPeerWait], 200u);
  EXPECT_EQ(s.phase_ns[kSendWait], 3000u);
  const ProxyOpRecord& r = d.ops[1];
  EXPECT_EQ(r.is_send, 0);
  EXPECT_EQ(r.peer, 2);
  EXPECT_EQ(r.phase_ns[kRecvWait], 5000u);
  EXPECT_EQ(r.phase_ns[kRecvFlushWait], 70u);
  EXPECT_EQ(r.phase_ns[kRecvGpuWait], 0u);  // probing has no such column
  ASSERT_EQ(d.comm_ranks.size(), 1u);
  EXPECT_EQ(d.comm_ranks[0].newest_seq, 9u);
}

TEST(ProbingCsv, WithHeader) {
  expect_two_rows(read(std::string(kHeader) + "\n" + kSendRow + "\n" + kRecvRow + "\n"));
}

TEST(ProbingCsv, WithoutHeaderUsesTheExportOrder) {
  LocalData d = read(std::string(kSendRow) + "\n" + kRecvRow + "\n");
  expect_two_rows(d);
  // Without pid or _rank the rank of the file's one communicator names the process.
  ASSERT_EQ(d.processes.size(), 1u);
  EXPECT_EQ(d.processes[0].host, "hostA");
  EXPECT_EQ(d.processes[0].pid, -1);
  EXPECT_EQ(d.processes[0].rank, 3);
  EXPECT_EQ(d.processes[0].label, "");
  ASSERT_EQ(d.inputs[0].notes.size(), 1u);
  EXPECT_EQ(d.inputs[0].notes[0], "no header row: columns taken in the export order of nccl.proxy_ops (18 columns)");
}

TEST(ProbingCsv, CrLfQuotedFieldsAndARepeatedHeader) {
  std::string quoted = std::string(kRecvRow);
  quoted.replace(quoted.find("AllReduce"), 9, "\"AllReduce\"");
  std::string text = std::string(kHeader) + "\r\n" + kSendRow + "\r\n" + kHeader + "\r\n" + quoted + "\r\n";
  expect_two_rows(read(text));
}

TEST(ProbingCsv, ColumnsInAnyOrderAreFoundByName) {
  // The same two rows with the columns reversed.
  auto reverse = [](const std::string& line) {
    std::vector<std::string> f;
    size_t start = 0;
    for (size_t i = 0; i <= line.size(); ++i)
      if (i == line.size() || line[i] == ',') f.push_back(line.substr(start, i - start)), start = i + 1;
    std::string out;
    for (size_t i = f.size(); i-- > 0;) out += f[i] + (i ? "," : "");
    return out;
  };
  expect_two_rows(read(reverse(kHeader) + "\n" + reverse(kSendRow) + "\n" + reverse(kRecvRow) + "\n"));
}

TEST(ProbingCsv, FederationColumnsNameHostAndProcess) {
  std::string header = std::string(kHeader) + ",_host,_addr,_rank,_node_rank,_local_rank,_role";
  std::string a = std::string(kSendRow) + ",node007,10.0.0.7,59,7,3,worker";
  std::string b = std::string(kRecvRow) + ",node007,10.0.0.7,59,7,3,worker";
  LocalData d = read(header + "\n" + a + "\n" + b + "\n");
  expect_two_rows(d);
  ASSERT_EQ(d.processes.size(), 1u);
  EXPECT_EQ(d.processes[0].host, "node007");  // _host wins over the reading node's name
  EXPECT_EQ(d.processes[0].pid, -1);
  EXPECT_EQ(d.processes[0].rank, 59);         // the global rank
  // Headerless with the federation columns appended.
  LocalData h = read(a + "\n" + b + "\n");
  expect_two_rows(h);
  EXPECT_EQ(h.processes.at(0).host, "node007");
}

TEST(ProbingCsv, PidColumnWins) {
  std::string header = std::string(kHeader) + ",pid,_host";
  LocalData d = read(header + "\n" + kSendRow + ",31337,node002\n" + kRecvRow + ",31337,node002\n");
  expect_two_rows(d);
  ASSERT_EQ(d.processes.size(), 1u);
  EXPECT_EQ(d.processes[0].pid, 31337);
  EXPECT_EQ(d.processes[0].host, "node002");
  EXPECT_EQ(d.processes[0].rank, 3);  // one communicator: its rank is the process's rank
}

TEST(ProbingCsv, P2pRowsHaveSequenceZeroAndAreNotCollectives) {
  std::string send = "1,3,0,0,3,77,Send,0,17,9,1,4,4096,10,20,30,0,0";
  std::string recv = "2,9,0,0,3,77,Recv,0,17,3,0,4,4096,0,0,0,40,1";
  LocalData d = read(std::string(kHeader) + "\n" + send + "\n" + recv + "\n");
  ASSERT_EQ(d.ops.size(), 2u);
  EXPECT_EQ(d.ops[0].is_p2p, 1);
  EXPECT_EQ(d.ops[1].is_p2p, 1);
  EXPECT_EQ(d.ops[0].seq, 0u);
  for (const CommRankSeen& c : d.comm_ranks) EXPECT_FALSE(c.has_collective);
  EXPECT_EQ(d.processes.size(), 2u);  // ranks 3 and 9
}

TEST(ProbingCsv, MalformedRowsAreCountedBySpecificReason) {
  std::string text = std::string(kHeader) + "\n" + kSendRow + "\n" +
                     "1,x,0,0,3,77,AllReduce,9,1,4,1,8,65536,1,2,3,0,0\n" +          // rank
                     "1,3,0,0,3,0x4d,AllReduce,9,1,4,1,8,65536,1,2,3,0,0\n" +        // comm_hash
                     "1,3,0,0,3,77,AllReduce,9,-1,4,1,8,65536,1,2,3,0,0\n" +         // channel
                     "1,3,0,0,3,77,AllReduce,9,1,-4,1,8,65536,1,2,3,0,0\n" +         // peer
                     "1,3,0,0,3,77,AllReduce,9,1,4,yes,8,65536,1,2,3,0,0\n" +        // is_send
                     "1,3,0,0,3,77\n" +                                              // short
                     "1,3,0,0,3,99999999999999999999999,AllReduce,9,1,4,1,8,1,1,2,3,0,0\n" +  // overflow
                     "1,3,0,0,3,77,AllReduce,-9,1,4,1,8,65536,1,2,3,0,0\n" +         // seq
                     kRecvRow + "\n";
  LocalData d = read(text);
  EXPECT_EQ(d.inputs[0].records, 2u);
  EXPECT_EQ(d.inputs[0].rejected, 8u);
  EXPECT_EQ(reason(d, "row without a valid seq"), 1u);
  EXPECT_EQ(reason(d, "row without a valid rank"), 1u);
  EXPECT_EQ(reason(d, "row without a valid comm_hash"), 2u);
  EXPECT_EQ(reason(d, "row without a valid channel_id"), 1u);
  EXPECT_EQ(reason(d, "row without a valid peer"), 1u);
  EXPECT_EQ(reason(d, "row without a valid is_send"), 1u);
  EXPECT_EQ(reason(d, "row with fewer columns than the header"), 1u);
  EXPECT_EQ(d.inputs[0].error, "");
}

TEST(ProbingCsv, FilesWithoutUsableRowsAreErrors) {
  EXPECT_EQ(read("").inputs[0].error, "empty CSV file");
  EXPECT_EQ(read("a,b,c\n1,2,3\n").inputs[0].error,
            "CSV columns are none of nccl.proxy_ops (rank, comm_hash, channel_id, peer, is_send), "
            "nccl.net_qp, nccl.inflight_ops, nccl.coll_perf, nccl.profiler_counters");
  LocalData bad = read(std::string(kHeader) + "\n1,x,0\n");
  EXPECT_EQ(bad.inputs[0].error, "no usable nccl.proxy_ops row");
  EXPECT_EQ(bad.inputs[0].rejected, 1u);
  LocalData junk = read(std::string("\x7f" "ELF\x02\x01\x01\0\0\0binary,junk\n", 22) + "\xff\xfe,\x01\n");
  EXPECT_FALSE(junk.inputs[0].error.empty());
  EXPECT_TRUE(junk.ops.empty());
}

// ---- what probing's exports really hold ------------------------------------------------

const char* kFederation = ",_host,_addr,_rank,_node_rank,_local_rank,_role";

std::string note_with(const LocalData& d, const std::string& part) {
  for (const std::string& n : d.inputs.at(0).notes)
    if (n.find(part) != std::string::npos) return n;
  return "";
}

void expect_short_notes(const LocalData& d) {
  for (const std::string& n : d.inputs.at(0).notes) EXPECT_LT(n.size(), 180u) << n;
}

// `SELECT * FROM global.nccl.proxy_ops` as probing writes it: its converter leaves comm_hash,
// seq and trans_bytes empty, and RFC-quotes the _role values.
TEST(ProbingCsv, FederatedExportWithBlankUnsignedCells) {
  std::string text = std::string(kHeader) + kFederation + "\n" +
      "1765223116927674080,3,0,1,2,,AllReduce,,1,4,1,8,,1000,200,3000,0,0,node007,10.0.0.7:9700,59,7,3,\"dp=2,pp=1,tp=0\"\n"
      "1765223116927675080,3,0,1,2,,AllReduce,,1,2,0,8,,0,0,0,5000,70,node007,10.0.0.7:9700,59,7,3,\"dp=2,pp=1,tp=0\"\n"
      "1765223116927676080,4,0,1,2,,Send,,0,3,1,2,,10,0,20,0,0,node007,10.0.0.7:9700,60,7,4,\"dp=2,pp=1,tp=0\"\n";
  LocalData d = read(text, "/data/node007/proxy_ops.csv");
  ASSERT_EQ(d.inputs.size(), 1u);
  const InputReport& in = d.inputs[0];
  EXPECT_EQ(in.error, "");  // was "no usable nccl.proxy_ops row"
  EXPECT_EQ(in.layout, "proxy_ops");
  EXPECT_EQ(in.records, 3u);
  EXPECT_EQ(in.rejected, 0u);
  ASSERT_EQ(d.ops.size(), 3u);
  // One unnamed communicator for the file, named by a hash of its path.
  const uint64_t comm = d.ops[0].comm_hash;
  EXPECT_NE(comm, 0u);
  for (const ProxyOpRecord& r : d.ops) EXPECT_EQ(r.comm_hash, comm);
  LocalData again = read(text, "/data/node007/proxy_ops.csv");
  EXPECT_EQ(again.ops[0].comm_hash, comm);  // stable
  EXPECT_NE(read(text, "/data/node008/proxy_ops.csv").ops[0].comm_hash, comm);
  // Collectives of unknown sequence are kept whatever the window; the Send is a p2p.
  EXPECT_EQ(d.ops[0].seq_unknown, 1);
  EXPECT_EQ(d.ops[1].seq_unknown, 1);
  EXPECT_EQ(d.ops[2].seq_unknown, 0);
  EXPECT_EQ(d.ops[2].is_p2p, 1);
  EXPECT_EQ(d.ops[0].bytes, 0u);
  EXPECT_EQ(d.ops[0].phase_ns[kSendWait], 3000u);
  // _host and _rank name the processes.
  ASSERT_EQ(d.processes.size(), 2u);
  EXPECT_EQ(d.processes[d.ops[0].process].host, "node007");
  EXPECT_EQ(d.processes[d.ops[0].process].rank, 59);
  EXPECT_EQ(d.processes[d.ops[0].process].pid, -1);
  EXPECT_EQ(d.processes[d.ops[2].process].rank, 60);
  ASSERT_EQ(d.comm_ranks.size(), 2u);
  EXPECT_TRUE(d.comm_ranks[0].has_collective);
  EXPECT_FALSE(d.comm_ranks[0].has_seq);  // no sequence window for it
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(comm));
  EXPECT_EQ(in.notes.size(), 3u);
  EXPECT_NE(note_with(d, "comm_hash blank").find(hex), std::string::npos);
  EXPECT_NE(note_with(d, "seq blank on collective rows"), "");
  EXPECT_NE(note_with(d, "trans_bytes blank"), "");
  expect_short_notes(d);
}

TEST(ProbingCsv, NegativeCastHashReadsBackAsTheSameBits) {
  // CAST(comm_hash AS BIGINT) of 11400714819323198485 (>= 2^63) prints a negative number.
  std::string text = std::string(kHeader) + "\n" +
                     "1,3,-1,-1,-1,-7046029254386353131,AllReduce,9,1,4,1,8,65536,1000,0,0,0,0\n"
                     "2,3,-1,-1,-1,-7046029254386353131,AllReduce,9,1,2,0,8,65536,0,0,0,10,0\n"
                     "3,3,-1,-1,-1,-9223372036854775808,AllReduce,9,1,2,0,8,65536,0,0,0,10,0\n"
                     "4,3,-1,-1,-1,-7046029254386353131,AllReduce,-3,1,2,0,8,65536,0,0,0,10,0\n";
  LocalData d = read(text);
  EXPECT_EQ(d.ops.at(0).comm_hash, 11400714819323198485ull);
  EXPECT_EQ(d.ops.at(1).comm_hash, 11400714819323198485ull);
  uint64_t low = 0;
  bool negative = false;
  EXPECT_TRUE(parse_comm_hash("-9223372036854775808", &low, &negative));
  EXPECT_EQ(low, 9223372036854775808ull);
  EXPECT_TRUE(negative);
  EXPECT_FALSE(parse_comm_hash("-18446744073709551615", &low, &negative));
  // A negative seq is a bad row (no sequence is that large).
  EXPECT_EQ(reason(d, "row without a valid seq"), 1u);
  EXPECT_NE(note_with(d, "negative comm_hash"), "");
  expect_short_notes(d);
}

// Two communicators (a world of 4 and a pair) in one per-node export, rows without pid or
// the federation tags: the rank column names no process by itself. With `roles`, every row
// knows its process's tp/pp/dp (dp = the world rank).
std::string two_communicators(bool roles) {
  auto role = [&](int world_rank) { return roles ? "0,0," + std::to_string(world_rank) : std::string("-1,-1,-1"); };
  std::string out = std::string(kHeader) + "\n";
  for (int rank = 0; rank < 4; ++rank)  // world: ranks 0..3, comm 1111
    out += std::to_string(rank + 1) + "," + std::to_string(rank) + "," + role(rank) +
           ",1111,AllReduce,5,0," + std::to_string((rank + 1) % 4) + ",1,4,4096,10,0,20,0,0\n";
  // The pair (comm 2222): its ranks 0 and 1 are the world's ranks 1 and 0.
  out += "9,0," + role(1) + ",2222,AllGather,3,0,1,1,4,4096,10,0,20,0,0\n";
  out += "9,1," + role(0) + ",2222,AllGather,3,0,0,0,4,4096,0,0,0,30,0\n";
  return out;
}

TEST(ProbingCsv, SeveralCommunicatorsWithoutTagsKeepTheLargestAndSaySo) {
  LocalData d = read(two_communicators(false), "node3/proxy_ops.csv");
  const InputReport& in = d.inputs[0];
  EXPECT_EQ(in.error, "");
  EXPECT_EQ(in.records, 4u);
  EXPECT_EQ(in.rejected, 2u);
  EXPECT_EQ(reason(d, "row of a second communicator: without pid, _rank or tp/pp/dp its ranks name no process"), 2u);
  for (const ProxyOpRecord& r : d.ops) EXPECT_EQ(r.comm_hash, 1111u);
  ASSERT_EQ(d.processes.size(), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(d.processes[d.ops[rank].process].rank, rank);
    EXPECT_EQ(d.processes[d.ops[rank].process].pid, -1);
  }
  for (const CommRankSeen& c : d.comm_ranks) EXPECT_EQ(c.comm_hash, 1111u);
  ASSERT_EQ(in.notes.size(), 1u);
  EXPECT_EQ(in.notes[0],
            "2 communicators, no pid, _rank or tp/pp/dp to tell their ranks apart: kept comm 0x457 "
            "(4 ranks), rejected 2 rows of the others");
  expect_short_notes(d);
}

TEST(ProbingCsv, SeveralCommunicatorsWithParallelRanksAreNamedByThem) {
  // Every row knows its process's tp/pp/dp: they name the process within its host.
  LocalData d = read(two_communicators(true));
  const InputReport& in = d.inputs[0];
  EXPECT_EQ(in.records, 6u);
  EXPECT_EQ(in.rejected, 0u);
  ASSERT_EQ(d.processes.size(), 4u);
  const LocalProcess& world0 = d.processes[d.ops[0].process];
  EXPECT_EQ(world0.label, "tp=0,pp=0,dp=0");
  EXPECT_EQ(d.processes[d.ops[3].process].label, "tp=0,pp=0,dp=3");
  EXPECT_EQ(world0.rank, -1);
  EXPECT_EQ(world0.pid, -1);
  EXPECT_EQ(world0.host, "hostA");
  // The pair's rank 1 is the world's rank 0: the same process.
  EXPECT_EQ(d.ops[5].comm_hash, 2222u);
  EXPECT_EQ(d.ops[5].rank, 1);
  EXPECT_EQ(d.ops[5].process, d.ops[0].process);
  EXPECT_EQ(d.ops[4].process, d.ops[1].process);
  EXPECT_EQ(d.comm_ranks.size(), 6u);
  ASSERT_EQ(in.notes.size(), 1u);
  EXPECT_EQ(in.notes[0], "2 communicators without pid or _rank: processes named by tp/pp/dp within the host");
}

TEST(ProbingCsv, SeveralCommunicatorsWithRankTagsNeedNoGuess) {
  std::string header = std::string(kHeader) + kFederation;
  std::string text = header + "\n" +
                     "1,0,-1,-1,-1,1111,AllReduce,5,0,1,1,4,4096,10,0,20,0,0,n1,a,8,1,0,\"dp=0,pp=0,tp=0\"\n"
                     "2,1,-1,-1,-1,1111,AllReduce,5,0,0,1,4,4096,10,0,20,0,0,n1,a,9,1,1,\"dp=1,pp=0,tp=0\"\n"
                     "3,1,-1,-1,-1,2222,AllGather,3,0,0,1,4,4096,10,0,20,0,0,n1,a,8,1,0,\"dp=0,pp=0,tp=0\"\n";
  LocalData d = read(text);
  EXPECT_EQ(d.inputs[0].records, 3u);
  EXPECT_EQ(d.inputs[0].rejected, 0u);
  EXPECT_TRUE(d.inputs[0].notes.empty());
  ASSERT_EQ(d.processes.size(), 2u);
  EXPECT_EQ(d.ops[2].process, d.ops[0].process);  // global rank 8 in both communicators
  EXPECT_EQ(d.processes[d.ops[0].process].rank, 8);
  EXPECT_EQ(d.processes[d.ops[0].process].host, "n1");
}

// ---- nccl.net_qp --------------------------------------------------------------------------

const char* kQpHeader = "ts,rank,device,qp_num,wr_id,opcode,length,duration_ns";

TEST(ProbingNetQp, DurationsAreSummedPerHostRankDeviceAndQp) {
  std::string text = std::string(kQpHeader) + "\n" +
                     "1,3,0,77,5,0,4096,1000\n"
                     "2,3,0,77,6,0,4096,3000\n"
                     "3,3,0,77,7,0,8192,200000\n"   // one slow work request
                     "4,3,1,78,8,0,4096,1500\n"
                     "5,4,0,90,9,0,4096,900\n"
                     "6,x,0,90,9,0,4096,900\n"      // bad rank
                     "7,4,0,90,9,0,4096,-5\n";      // bad duration
  LocalData d = read(text, "net_qp.csv");
  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_EQ(d.inputs[0].layout, "net_qp");
  EXPECT_EQ(d.inputs[0].error, "");
  EXPECT_EQ(d.inputs[0].records, 5u);
  EXPECT_EQ(d.inputs[0].rejected, 2u);
  EXPECT_EQ(reason(d, "net_qp row without a valid duration_ns"), 1u);
  EXPECT_TRUE(d.ops.empty());
  ASSERT_EQ(d.qp_stats.size(), 3u);
  const QpStat& q = d.qp_stats[0];
  EXPECT_EQ(q.host, "hostA");
  EXPECT_EQ(q.rank, 3);
  EXPECT_EQ(q.device, 0);
  EXPECT_EQ(q.qp_num, 77u);
  EXPECT_EQ(q.count, 3u);
  EXPECT_EQ(q.bytes, 16384u);
  EXPECT_EQ(q.sum_ns, 204000u);
  EXPECT_EQ(q.min_ns, 1000u);
  EXPECT_EQ(q.max_ns, 200000u);
  EXPECT_DOUBLE_EQ(q.mean_ns(), 68000.0);
  EXPECT_LE(q.quantile_ns(0.5), 4095u);       // median 3000 ns: within its power-of-two bucket
  EXPECT_GE(q.quantile_ns(0.5), 3000u);
  EXPECT_EQ(q.quantile_ns(1.0), 200000u);     // bounded by the maximum
  EXPECT_EQ(d.processes.at(q.process).pid, -1);  // same identity rule as proxy_ops rows
  EXPECT_EQ(d.processes.at(q.process).rank, 3);
  EXPECT_EQ(d.qp_stats[2].rank, 4);
}

// The idle-send test's input (docs/attribution.md): full-size sends posted after the queue
// pair's previous send completed (ts is the completion, ts - duration_ns the posting), found in
// completion order whatever the rows' order.
TEST(ProbingNetQp, SendsThatFoundTheQueuePairIdleAreKeptApart) {
  std::string text = std::string(kQpHeader) + "\n" +
                     "10000,3,0,77,1,1,4096,1000\n"   // the first: nothing known before it
                     "12000,3,0,77,2,1,4096,1500\n"   // posted at 10500, after 10000: idle
                     "13000,3,0,77,3,1,4096,2000\n"   // posted at 11000, before 12000: queued
                     "14000,3,0,77,4,0,0,50000\n"     // a receive: no length
                     "20000,3,0,77,5,1,2048,500\n"    // idle but not full-size
                     "30000,3,0,77,6,1,4096,1200\n"   // idle
                     "1000,3,0,78,1,1,4096,100\n"
                     "5000,3,0,78,2,1,4096,200\n"     // idle, at 4096
                     "9000,3,0,78,3,1,8192,300\n";    // longer: the full size is now 8192, and idle
  LocalData d = read(text, "net_qp.csv");
  ASSERT_EQ(d.qp_stats.size(), 2u);
  const QpStat& q = d.qp_stats[0];
  EXPECT_EQ(q.wr_length, 4096u);
  EXPECT_EQ(q.idle_sends, 2u);
  EXPECT_DOUBLE_EQ(q.idle_log_ns_sum, std::log(1500.0) + std::log(1200.0));
  EXPECT_EQ(q.count, 6u);  // every row still counts in the sums
  const QpStat& longer = d.qp_stats[1];
  EXPECT_EQ(longer.wr_length, 8192u);
  EXPECT_EQ(longer.idle_sends, 1u);
  EXPECT_DOUBLE_EQ(longer.idle_log_ns_sum, std::log(300.0));

  // A query without ORDER BY may return them in another order: the same sends are idle.
  std::string shuffled = std::string(kQpHeader) + "\n" +
                         "30000,3,0,77,6,1,4096,1200\n"
                         "13000,3,0,77,3,1,4096,2000\n"
                         "20000,3,0,77,5,1,2048,500\n"
                         "10000,3,0,77,1,1,4096,1000\n"
                         "14000,3,0,77,4,0,0,50000\n"
                         "12000,3,0,77,2,1,4096,1500\n";
  LocalData e = read(shuffled, "net_qp.csv");
  ASSERT_EQ(e.qp_stats.size(), 1u);
  EXPECT_EQ(e.qp_stats[0].idle_sends, 2u);
  EXPECT_DOUBLE_EQ(e.qp_stats[0].idle_log_ns_sum, std::log(1500.0) + std::log(1200.0));
  EXPECT_TRUE(e.qp_stats[0].pending_sends.empty());  // folded when the file ends
}

TEST(ProbingNetQp, HeaderlessAndMergedAcrossFiles) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("culprit_qp_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "a_net_qp.csv") << "1,3,0,77,5,0,4096,1000\n2,3,0,77,6,0,4096,3000\n";
  std::ofstream(dir / "b_net_qp.csv") << kQpHeader << "\n3,3,0,77,7,0,4096,2000\n";
  std::ofstream(dir / "c_proxy_ops.csv") << kHeader << "\n" << kSendRow << "\n";
  Discovery found = discover_node_local(dir.string(), "hostA", "auto");
  ASSERT_EQ(found.files.size(), 3u);
  for (const InputFile& f : found.files) EXPECT_EQ(f.format, "probing-csv");
  LocalData d;
  read_input_files(found.files, d, 2);
  ASSERT_EQ(d.qp_stats.size(), 1u);
  EXPECT_EQ(d.qp_stats[0].count, 3u);
  EXPECT_EQ(d.qp_stats[0].sum_ns, 6000u);
  EXPECT_EQ(d.ops.size(), 1u);
  // The QP's process is the proxy_ops row's process (rank 3 of hostA).
  EXPECT_EQ(d.qp_stats[0].process, d.ops[0].process);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace culprit
