// The simulator's probing exports (mock/render_probing.hpp): the layout probing writes, and
// what the readers take back from it in every form.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "io/probing_csv_reader.hpp"
#include "io/probing_json_reader.hpp"
#include "mock/records.hpp"
#include "mock/render_probing.hpp"
#include "mock/simulator.hpp"

namespace culprit {
namespace {

const char* kRing = "topology=ring,nodes=4,gpus=4,channels=2,seqs=6,bytes=4M";

const mock::RenderedFile* file_named(const std::vector<mock::RenderedFile>& files, const std::string& name) {
  for (const mock::RenderedFile& f : files)
    if (f.name == name) return &f;
  return nullptr;
}

// The proxy ops of one host that completed (those an export has rows for).
size_t completed_ops_on(const mock::Simulation& sim, int node) {
  size_t n = 0;
  for (const mock::SimProxyOp& op : sim.proxy_ops())
    n += sim.processes()[static_cast<size_t>(op.rank)].node == node && op.end_ns < sim.dump_time_ns();
  return n;
}

TEST(RenderProbing, CsvHasProbingsHeaderAndOneRowPerCompletedProxyOp) {
  mock::Simulation sim(mock::Scenario::parse(kRing));
  auto files = mock::render_host_probing(sim, 1, mock::parse_probing_format("probing-csv"));
  const mock::RenderedFile* f = file_named(files, "proxy_ops.csv");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->content.rfind("ts,rank,tp_rank,pp_rank,dp_rank,comm_hash,coll_func,seq,channel_id,peer,is_send,"
                             "n_steps,trans_bytes,send_gpu_wait_ns,send_peer_wait_ns,send_wait_ns,recv_wait_ns,"
                             "recv_flush_wait_ns,_host,_addr,_rank,_node_rank,_local_rank,_role\n",
                             0),
            0u);
  EXPECT_NE(f->content.find(",\"dp=1,pp=0,tp=0\"\n"), std::string::npos);  // RFC quoting
  EXPECT_EQ(file_named(files, "inflight_ops.csv"), nullptr);              // nothing alive: no snapshot
  LocalData d;
  read_probing_csv_buffer(f->content, "proxy_ops.csv", "node001", d);
  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_EQ(d.inputs[0].rejected, 0u);
  EXPECT_EQ(d.ops.size(), completed_ops_on(sim, 1));
  std::set<int64_t> ranks;
  for (const LocalProcess& p : d.processes) ranks.insert(p.rank);
  EXPECT_EQ(ranks, (std::set<int64_t>{4, 5, 6, 7}));
  for (const ProxyOpRecord& r : d.ops) EXPECT_EQ(r.comm_hash, sim.comm_hash());
}

TEST(RenderProbing, BlankAndCastCellsAreWhatProbingsConverterAndABigintCastLeave) {
  mock::Simulation sim(mock::Scenario::parse(kRing));
  ASSERT_GT(sim.comm_hash(), uint64_t{1} << 63);  // the seed's hash needs all 64 bits
  auto blank = mock::render_host_probing(sim, 0, mock::parse_probing_format("probing-csv+blank"));
  const std::string& row = blank[0].content.substr(blank[0].content.find('\n') + 1);
  EXPECT_NE(row.find(",0,0,0,,AllReduce,,"), std::string::npos) << row.substr(0, 120);
  auto cast = mock::render_host_probing(sim, 0, mock::parse_probing_format("probing-csv+cast"));
  EXPECT_NE(cast[0].content.find("," + std::to_string(static_cast<int64_t>(sim.comm_hash())) + ",AllReduce,"),
            std::string::npos);
  LocalData d;
  read_probing_csv_buffer(cast[0].content, "cast.csv", "node000", d);
  ASSERT_FALSE(d.ops.empty());
  EXPECT_EQ(d.ops[0].comm_hash, sim.comm_hash());
}

TEST(RenderProbing, JsonRowsReadBackLikeCsvRows) {
  mock::Simulation sim(mock::Scenario::parse(kRing));
  auto csv = mock::render_host_probing(sim, 2, mock::parse_probing_format("probing-csv"));
  auto json = mock::render_host_probing(sim, 2, mock::parse_probing_format("probing-json"));
  ASSERT_EQ(json[0].name, "proxy_ops.json");
  EXPECT_EQ(json[0].content.front(), '[');
  LocalData a, b;
  read_probing_csv_buffer(csv[0].content, "x.csv", "node002", a);
  read_probing_json_buffer(json[0].content, "x.json", "node002", b);
  ASSERT_EQ(a.ops.size(), b.ops.size());
  ASSERT_FALSE(a.ops.empty());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    EXPECT_EQ(a.ops[i].seq, b.ops[i].seq);
    EXPECT_EQ(a.ops[i].bytes, b.ops[i].bytes);
    for (int p = 0; p < kPhaseCount; ++p) EXPECT_EQ(a.ops[i].phase_ns[p], b.ops[i].phase_ns[p]);
  }
}

TEST(RenderProbing, AHangLeavesItsAliveOperationsInTheSnapshotOnly) {
  mock::Simulation sim(mock::Scenario::parse(std::string(kRing) + ",fault=hang:5@3"));
  ASSERT_LT(sim.dump_time_ns(), 1e300);
  auto files = mock::render_host_probing(sim, 1, mock::parse_probing_format("probing-csv"));
  const mock::RenderedFile* inflight = file_named(files, "inflight_ops.csv");
  ASSERT_NE(inflight, nullptr);
  LocalData d;
  read_probing_csv_buffer(inflight->content, "inflight_ops.csv", "node001", d);
  ASSERT_FALSE(d.inflight.empty());
  std::map<int32_t, uint64_t> coll_seq;  // comm rank -> the collective it is stuck in
  for (const InflightRecord& f : d.inflight) {
    EXPECT_GT(f.age_ns, 0u);
    if (f.kind == InflightKind::kCollective) coll_seq[f.rank] = f.seq;
  }
  // Node 1 holds ranks 4..7: rank 5 never started collective 3, the others wait inside it.
  EXPECT_EQ(coll_seq, (std::map<int32_t, uint64_t>{{4, 3}, {6, 3}, {7, 3}}));
  LocalData ops;
  read_probing_csv_buffer(file_named(files, "proxy_ops.csv")->content, "proxy_ops.csv", "node001", ops);
  for (const ProxyOpRecord& r : ops.ops) EXPECT_LT(r.seq, 3u);  // no row for an op that never stopped
}

TEST(RenderProbing, CollPerfGivesEachRanksKernelWindow) {
  mock::Simulation sim(mock::Scenario::parse(kRing));
  auto files = mock::render_host_probing(sim, 0, mock::parse_probing_format("probing-csv+coll_perf"));
  const mock::RenderedFile* f = file_named(files, "coll_perf.csv");
  ASSERT_NE(f, nullptr);
  LocalData d;
  read_probing_csv_buffer(f->content, "coll_perf.csv", "node000", d);
  EXPECT_EQ(d.kernel_starts.size(), 4u * 6u);  // 4 GPUs x 6 collectives
  for (const KernelStartRecord& k : d.kernel_starts) EXPECT_LT(k.start_gpu_clk_ns, k.stop_gpu_clk_ns);
}

// Without kernel events probing times coll_perf by the rank's proxy ops, or by the host's
// enqueue call where it has none (NVLink only): the reader keeps such rows but takes no
// kernel window from them.
TEST(RenderProbing, CollPerfTimedWithoutKernelEventsGivesNoKernelWindow) {
  // One channel: two GPUs of each node are its network entry and exit, two only NVLink.
  mock::Simulation sim(mock::Scenario::parse("topology=ring,nodes=4,gpus=4,channels=1,seqs=6,bytes=4M"));
  auto files = mock::render_host_probing(sim, 0, mock::parse_probing_format("probing-csv+coll_perf_proxy"));
  const mock::RenderedFile* f = file_named(files, "coll_perf.csv");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->content.find(",proxy,"), std::string::npos);    // GPUs with network connections
  EXPECT_NE(f->content.find(",enqueue,"), std::string::npos);  // GPUs inside the node
  EXPECT_EQ(f->content.find(",kernel_gpu,"), std::string::npos);
  LocalData d;
  read_probing_csv_buffer(f->content, "coll_perf.csv", "node000", d);
  ASSERT_EQ(d.kernel_starts.size(), 4u * 6u);
  for (const KernelStartRecord& k : d.kernel_starts) EXPECT_EQ(k.window_unknown, 1);
}

// probing's enqueue_time_ns is the host's time inside the NCCL call (its collective's start to
// stop event), a few microseconds however far ahead of its GPU the host ran.
TEST(RenderProbing, CollPerfEnqueueTimeIsTheHostsCallNotItsLeadOnTheKernel) {
  mock::Simulation sim(mock::Scenario::parse(std::string(kRing) + ",host=ahead"));
  auto files = mock::render_host_probing(sim, 0, mock::parse_probing_format("probing-csv+coll_perf"));
  const mock::RenderedFile* f = file_named(files, "coll_perf.csv");
  ASSERT_NE(f, nullptr);
  std::istringstream lines(f->content);
  std::string header, line;
  std::getline(lines, header);
  const std::string before = header.substr(0, header.find(",enqueue_time_ns,"));
  const auto column = static_cast<size_t>(std::count(before.begin(), before.end(), ',') + 1);
  size_t rows = 0;
  while (std::getline(lines, line)) {
    std::vector<std::string> cells;
    std::istringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    ASSERT_GT(cells.size(), column);
    const long long enqueue_ns = std::stoll(cells[column]);
    EXPECT_GE(enqueue_ns, 3000);
    EXPECT_LE(enqueue_ns, 7000);
    ++rows;
  }
  EXPECT_EQ(rows, 4u * 6u);
}

// nccl.net_qp: a row per IB work request of every step kept (Retention::every_step), read
// back as one send queue pair per network connection the node sends on, every send full-size,
// and one receive queue pair per connection it receives on, with no length.
// The ring kept step by step (Retention::every_step, as `mock --format ...+net_qp` keeps it).
mock::Retention every_step() {
  mock::Retention keep = mock::Retention::nodes_only();
  keep.every_step = true;
  return keep;
}

// Node 1's net_qp table in the export `format` (empty where it has none).
std::string net_qp_of_node1(const mock::Simulation& sim, const char* format) {
  auto files = mock::render_host_probing(sim, 1, mock::parse_probing_format(format));
  const mock::RenderedFile* f = file_named(files, "net_qp.csv");
  return f ? f->content : std::string();
}

TEST(RenderProbing, NetQpHasAWorkRequestPerStepOfEachConnectionEnd) {
  mock::Simulation sim(mock::Scenario::parse(kRing), every_step());
  const std::string table = net_qp_of_node1(sim, "probing-csv+net_qp");
  ASSERT_FALSE(table.empty());
  LocalData d;
  read_probing_csv_buffer(table, "net_qp.csv", "node001", d);
  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_EQ(d.inputs[0].rejected, 0u);
  const mock::NodeTimeline timeline = sim.node_timeline(1);
  std::map<std::tuple<int, int, int, bool>, uint64_t> steps;  // per connection end: its steps
  uint64_t chunk = 0;
  for (const mock::ProxyOpRecord& r : timeline.proxy_ops) {
    steps[{r.op.rank, r.op.peer, r.op.channel, r.op.is_send}] += static_cast<uint64_t>(r.op.n_steps);
    if (r.op.is_send) chunk = r.op.chunk_bytes;
  }
  ASSERT_EQ(d.qp_stats.size(), steps.size());
  uint64_t rows = 0, sends = 0;
  for (const QpStat& q : d.qp_stats) {
    rows += q.count;
    if (q.bytes == 0) continue;  // a receive's queue pair
    ++sends;
    EXPECT_EQ(q.wr_length, chunk);
    EXPECT_EQ(q.bytes, q.count * chunk);
    EXPECT_GE(q.idle_sends, 1u);  // at least the first step of each collective found it idle
  }
  uint64_t all_steps = 0, send_ends = 0;
  for (const auto& [end, n] : steps) {
    all_steps += n;
    send_ends += std::get<3>(end);
  }
  EXPECT_EQ(rows, all_steps);  // nothing hung: every step completed
  EXPECT_EQ(sends, send_ends);
}

// probing's default export leaves nccl.net_qp's unsigned `wr_id` and `length` blank, as it does
// proxy_ops' unsigned cells: the rows are read and counted, no send is sized or idle, and the
// input note says why.
TEST(RenderProbing, BlankNetQpLengthsAreReadAsUnsizedWorkRequests) {
  mock::Simulation sim(mock::Scenario::parse(kRing), every_step());
  const std::string table = net_qp_of_node1(sim, "probing-csv+net_qp+blank");
  ASSERT_FALSE(table.empty());
  EXPECT_NE(table.find(",,1,,"), std::string::npos);  // wr_id, opcode, length of a send
  LocalData d;
  read_probing_csv_buffer(table, "net_qp.csv", "node001", d);
  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_EQ(d.inputs[0].rejected, 0u);
  ASSERT_FALSE(d.qp_stats.empty());
  for (const QpStat& q : d.qp_stats) {
    EXPECT_GT(q.count, 0u);
    EXPECT_EQ(q.bytes, 0u);
    EXPECT_EQ(q.wr_length, 0u);
    EXPECT_EQ(q.idle_sends, 0u);
  }
  bool noted = false;
  for (const std::string& n : d.inputs[0].notes) noted |= n.find("length blank") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(RenderProbing, UnknownFormatOptionsAreRefused) {
  EXPECT_THROW(mock::parse_probing_format("probing-xml"), std::invalid_argument);
  EXPECT_THROW(mock::parse_probing_format("probing-csv+sideways"), std::invalid_argument);
  EXPECT_FALSE(mock::parse_probing_format("probing-json+untagged").tags);
}

}  // namespace
}  // namespace culprit
