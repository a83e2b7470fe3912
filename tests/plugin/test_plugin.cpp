// Tests of the live-capture path: libnccl-profiler-culprit.so driven through its C ABI as NCCL
// drives it, its shard files read while written and after the writer was killed, and hang /
// slow-link / slow-consumer diagnosis from shards of simulated clusters.
//
// The plugin is a per-process singleton, so every test that loads it does so in a forked
// child (plugin_driver.hpp); the parent reads the shards and checks.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "io/discover.hpp"
#include "io/local_data.hpp"
#include "io/shard_format.hpp"
#include "io/shard_reader.hpp"
#include "mock/simulator.hpp"
#include "plugin_driver.hpp"

namespace culprit::plugintest {
namespace {

namespace fs = std::filesystem;
using shard::OpRecord;

const std::string kPlugin = CULPRIT_PLUGIN_PATH;
const std::string kCli = CULPRIT_CLI_PATH;

fs::path scratch_root() {
  const char* base = getenv("TMPDIR");
  return fs::path(base && *base ? base : "/tmp") / ("culprit-plugin-" + std::to_string(getpid()));
}

std::string scratch(const std::string& name) {
  fs::path p = scratch_root() / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

// Removes the scratch folders when every test passed (kept for a look otherwise, or with
// CULPRIT_KEEP_SCRATCH=1).
class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    const char* keep = getenv("CULPRIT_KEEP_SCRATCH");
    if (::testing::UnitTest::GetInstance()->Passed() && !(keep && *keep == '1')) {
      std::error_code ec;
      fs::remove_all(scratch_root(), ec);
    } else if (fs::exists(scratch_root())) {
      std::printf("scratch kept in %s\n", scratch_root().c_str());
    }
  }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

std::vector<std::string> shards_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".shard") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The one shard a test's process wrote under `dir`: its path, read into `s`.
void read_the_shard(const std::string& dir, std::string& path, ShardSnapshot& s) {
  const auto files = shards_in(dir);
  ASSERT_EQ(files.size(), 1u);
  path = files[0];
  ASSERT_TRUE(read_shard_snapshot(path, s)) << s.error;
}

// One receive step of `op` as NCCL reports it from time `t`: RecvWait, RecvFlushWait from t + 10,
// RecvGpuWait from t + 30, stopped at t + 60 (10, 20 and 30 ns). `before_stop`, if any, runs at
// t + 50 (a kernel start, say).
template <class BeforeStop>
void receive_step(FakeNccl& n, PluginLib& lib, void* ctx, void* op, int rank, int step, uint64_t t,
                  BeforeStop before_stop) {
  lib.set_time(t);
  void* st = n.start_step(ctx, op, rank, step);
  n.record(st, NCP_STATE_RECV_WAIT, 512);
  lib.set_time(t + 10);
  n.record(st, NCP_STATE_RECV_FLUSH_WAIT, 512);
  lib.set_time(t + 30);
  n.record(st, NCP_STATE_RECV_GPU_WAIT, 512);
  lib.set_time(t + 50);
  before_stop();
  lib.set_time(t + 60);
  n.stop(st);
}
void receive_step(FakeNccl& n, PluginLib& lib, void* ctx, void* op, int rank, int step, uint64_t t) {
  receive_step(n, lib, ctx, op, rank, step, t, [] {});
}

// ---- the library itself -------------------------------------------------------------------------

TEST(PluginAbi, ExportsTheThreeInterfacesAndNothingElse) {
  PluginLib lib;
  ASSERT_TRUE(lib.load(kPlugin)) << lib.error;
  EXPECT_STREQ(lib.v4->name, "nccl-culprit");
  EXPECT_STREQ(lib.v5->name, "nccl-culprit");
  EXPECT_STREQ(lib.v6->name, "nccl-culprit");
  for (auto* t : {reinterpret_cast<void**>(lib.v4), reinterpret_cast<void**>(lib.v5),
                  reinterpret_cast<void**>(lib.v6)})
    for (int i = 1; i < 6; ++i) EXPECT_NE(t[i], nullptr) << "function " << i;
  FILE* nm = popen(("nm -D --defined-only '" + kPlugin + "' 2>/dev/null").c_str(), "r");
  if (nm == nullptr) GTEST_SKIP() << "nm not available";
  std::set<std::string> names;
  char line[512];
  while (fgets(line, sizeof line, nm)) {
    std::istringstream in(line);
    std::string addr, type, name;
    if (in >> addr >> type >> name) names.insert(name);
  }
  int rc = pclose(nm);
  if (rc != 0 || names.empty()) GTEST_SKIP() << "nm gave nothing";
  EXPECT_EQ(names, (std::set<std::string>{"ncclProfiler_v4", "ncclProfiler_v5", "ncclProfiler_v6",
                                          "ncclCulpritTestSetTime"}));
}

// One send op with two overlapping steps (a retried SendPeerWait, a step without one), one
// receive op left in flight, one p2p: every number checked.
TEST(PluginRecords, PhasesOfProxyOpsAsNcclReportsThem) {
  const std::string dir = scratch("phases");
  const uint64_t kHash = 0xF123456789ABCDEFull;  // above 2^63
  int rc = run_in_child([&] {
    setenv("NCCL_CULPRIT_DIR", dir.c_str(), 1);
    setenv("NCCL_CULPRIT_HOST", "hostA", 1);
    unsetenv("NCCL_PROFILE_EVENT_MASK");
    PluginLib lib;
    if (!lib.load(kPlugin)) return 2;
    FakeNccl n(lib, 6);
    auto T = [&](uint64_t t) { lib.set_time(t); };
    T(1000);
    int mask = 0;
    void* ctx = n.init(kHash, "world", 2, 4, 1, &mask);
    if (ctx == nullptr || mask != 94) return 3;
    T(1500);
    void* group = n.start_group(ctx);
    T(2000);
    void* coll = n.start_coll(ctx, 1, 7);
    T(2100);
    n.stop(coll);  // NCCL stops the task event before the proxy starts its ops
    n.stop(group);
    T(3000);
    void* op = n.start_proxy_op(ctx, coll, 1, getpid(), 3, 2, 2, 4096, true);
    T(3100);
    n.record(op, NCP_STATE_PROXY_OP_IN_PROGRESS);
    T(4000);
    void* s0 = n.start_step(ctx, op, 1, 0);
    n.record(s0, NCP_STATE_SEND_GPU_WAIT, 0);
    T(4500);
    n.record(s0, NCP_STATE_SEND_PEER_WAIT, 0);
    T(4700);
    n.record(s0, NCP_STATE_SEND_PEER_WAIT, 0);  // isend retried: the first entry counts
    T(5000);
    n.record(s0, NCP_STATE_SEND_WAIT, 4096);
    T(5500);
    void* s1 = n.start_step(ctx, op, 1, 1);
    n.record(s1, NCP_STATE_SEND_GPU_WAIT, 4096);
    T(6000);
    n.stop(s0);
    T(7000);
    n.record(s1, NCP_STATE_SEND_WAIT, 4096);  // no SendPeerWait (as before v4)
    T(7100);
    n.stop(s1);
    T(8000);
    n.stop(op);
    // A receive that stays in flight: one step done, one waiting for data since 9200.
    T(9000);
    void* rop = n.start_proxy_op(ctx, coll, 1, getpid(), 3, 0, 4, 4096, false);
    T(9100);
    void* r0 = n.start_step(ctx, rop, 1, 0);
    n.record(r0, NCP_STATE_RECV_WAIT, 4096);
    T(9200);
    void* r1 = n.start_step(ctx, rop, 1, 1);
    n.record(r1, NCP_STATE_RECV_WAIT, 4096);
    T(9300);
    n.record(r0, NCP_STATE_RECV_FLUSH_WAIT, 4096);
    T(9400);
    n.record(r0, NCP_STATE_RECV_GPU_WAIT, 4096);
    T(9900);
    n.stop(r0);
    // Two sends to peer 2: p2p ordinals 0 and 1.
    for (int k = 0; k < 2; ++k) {
      T(20000 + k * 1000);
      void* p2p = n.start_p2p(ctx, 1, "Send", 2);
      n.stop(p2p);
      void* pop = n.start_proxy_op(ctx, p2p, 1, getpid(), 17, 2, 1, 1024, true);
      void* ps = n.start_step(ctx, pop, 1, 0);
      n.record(ps, NCP_STATE_SEND_GPU_WAIT, 1024);
      T(20100 + k * 1000);
      n.record(ps, NCP_STATE_SEND_WAIT, 1024);
      T(20300 + k * 1000);
      n.stop(ps);
      n.stop(pop);
    }
    return 0;
  });
  ASSERT_EQ(rc, 0);
  std::string file;
  ShardSnapshot s;
  ASSERT_NO_FATAL_FAILURE(read_the_shard(dir, file, s));
  struct stat st;
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(fs::path(file).filename().string().rfind("hostA-", 0), 0u);
  EXPECT_EQ(s.host, "hostA");
  EXPECT_EQ(s.clock, uint32_t{shard::kClockTest});
  EXPECT_EQ(s.nccl_interface, 6u);
  EXPECT_EQ(s.torn, 0u);
  ASSERT_EQ(s.comms.size(), 1u);
  EXPECT_EQ(s.comms[0].comm_hash, kHash);
  EXPECT_EQ(s.comms[0].rank, 1);
  EXPECT_EQ(s.comms[0].n_ranks, 4);
  EXPECT_EQ(s.comms[0].n_nodes, 2);
  EXPECT_EQ(s.comms[0].name, "world");
  EXPECT_TRUE(s.comms[0].has_collective);
  EXPECT_EQ(s.comms[0].newest_seq, 7u);

  ASSERT_EQ(s.completed.size(), 3u);
  const OpRecord& r = s.completed[0];
  EXPECT_EQ(r.comm_hash, kHash);
  EXPECT_EQ(r.seq, 7u);
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.peer, 2);
  EXPECT_EQ(r.channel, 3);
  EXPECT_EQ(r.flags & (shard::kOpSend | shard::kOpSeqKnown | shard::kOpP2p | shard::kOpInFlight),
            shard::kOpSend | shard::kOpSeqKnown);
  EXPECT_EQ(r.steps, 2u);
  EXPECT_EQ(r.n_steps, 2u);
  EXPECT_EQ(r.bytes, 8192u);
  EXPECT_EQ(r.start_ns, 3000u);
  EXPECT_EQ(r.progress_ns, 3100u);
  EXPECT_EQ(r.end_ns, 8000u);
  EXPECT_EQ(r.phase_ns[0], 500u + 1500u);  // SendGpuWait
  EXPECT_EQ(r.phase_ns[1], 500u);          // SendPeerWait: 4500 (not the retry at 4700) .. 5000
  EXPECT_EQ(r.phase_ns[2], 1000u + 100u);  // SendWait
  EXPECT_EQ(r.phase_ns[3] + r.phase_ns[4] + r.phase_ns[5], 0u);
  EXPECT_EQ(r.shortest_step_ns, 100u);  // step 1's SendWait
  EXPECT_EQ(r.wire_busy_ns, 100u);      // after step 0 completed at 6000: 7000..7100
  EXPECT_EQ(r.wire_queued_steps, 0u);   // step 1 began after step 0 had completed
  for (int k = 0; k < 2; ++k) {
    const OpRecord& p = s.completed[1 + k];
    EXPECT_EQ(p.flags & (shard::kOpP2p | shard::kOpSend), shard::kOpP2p | shard::kOpSend);
    EXPECT_EQ(p.seq, static_cast<uint64_t>(k));
    EXPECT_EQ(p.channel, 17);
    EXPECT_EQ(p.phase_ns[0], 100u);
    EXPECT_EQ(p.phase_ns[2], 200u);
    EXPECT_EQ(p.shortest_step_ns, 200u);
    EXPECT_EQ(p.wire_busy_ns, 0u);  // one step: nothing after the first completion
  }

  ASSERT_EQ(s.in_flight.size(), 1u);
  const OpRecord& f = s.in_flight[0];
  EXPECT_TRUE(f.flags & shard::kOpInFlight);
  EXPECT_FALSE(f.flags & shard::kOpSend);
  EXPECT_EQ(f.steps, 1u);
  EXPECT_EQ(f.phase_ns[3], 200u);  // RecvWait 9100..9300
  EXPECT_EQ(f.phase_ns[4], 100u);  // RecvFlushWait
  EXPECT_EQ(f.phase_ns[5], 500u);  // RecvGpuWait
  EXPECT_EQ(f.shortest_step_ns, 500u);  // its one finished step's RecvGpuWait
  EXPECT_EQ(f.cur_phase, 3);       // its oldest open step waits for data...
  EXPECT_EQ(f.phase_since_ns, 9200u);  // ...since 9200
  EXPECT_EQ(f.open_steps, 1u);
  EXPECT_EQ(f.end_ns, 0u);

  // Through the analyzer's reader.
  LocalData data;
  read_shard_file(file, "ignored", data);
  ASSERT_EQ(data.inputs.size(), 1u);
  EXPECT_EQ(data.inputs[0].error, "");
  EXPECT_EQ(data.inputs[0].format, "shard");
  EXPECT_EQ(data.inputs[0].rejected, 0u);
  EXPECT_EQ(data.inputs[0].records, 4u);
  ASSERT_EQ(data.processes.size(), 1u);
  EXPECT_EQ(data.processes[0].host, "hostA");
  ASSERT_EQ(data.comm_ranks.size(), 1u);
  EXPECT_EQ(data.comm_ranks[0].newest_seq, 7u);
  EXPECT_TRUE(data.comm_ranks[0].has_collective);
  ASSERT_EQ(data.ops.size(), 4u);
  EXPECT_EQ(data.ops[0].phase_ns[kSendGpuWait], 2000u);
  EXPECT_EQ(data.ops[0].send_wait_min_ns, 100u);  // the wire reaches the analysis
  EXPECT_EQ(data.ops[0].send_wire_busy_ns, 100u);
  EXPECT_EQ(data.ops[0].wire_steps, 1u);
  EXPECT_EQ(data.ops[3].send_wait_min_ns, 0u);  // a receive has no wire
  EXPECT_TRUE(data.ops[3].has_recv_gpu_wait_min);  // but its shortest consume step
  EXPECT_EQ(data.ops[3].recv_gpu_wait_min_ns, 500u);
  EXPECT_FALSE(data.ops[0].has_recv_gpu_wait_min);
  EXPECT_EQ(data.ops[3].phase_ns[kRecvWait], 200u);
  EXPECT_EQ(data.ops[3].end_ns, 0u);
  EXPECT_EQ(detect_format(file, "auto"), "shard");
}

// The same calls through v4, v5 and v6 descriptors give the same records.
TEST(PluginRecords, InterfacesV4V5V6AgreeAndPartsOfNcclThatAreNotRecordedAreHarmless) {
  const std::string dir = scratch("versions");
  int rc = run_in_child([&] {
    setenv("NCCL_CULPRIT_DIR", dir.c_str(), 1);
    PluginLib lib;
    if (!lib.load(kPlugin)) return 2;
    for (int iface = 4; iface <= 6; ++iface) {
      FakeNccl n(lib, iface);
      uint64_t t0 = 1000000ull * iface;
      lib.set_time(t0);
      void* ctx = n.init(100 + iface, "c", 1, 8, iface, nullptr);
      if (!ctx) return 10 + iface;
      void* api = n.start_raw_type(ctx, NCP_EV_COLL_API);  // v5+ only; ignored
      n.record(api, NCP_STATE_GROUP_END_API_START, 0, true);
      // The last interface's collective runs NCCL's tree: the shard says so.
      void* coll = n.start_coll(ctx, iface, 40 + iface, "AllReduce", 2, iface == 6 ? "Tree" : "RING");
      void* kch = n.start_kernel_ch(ctx, coll, iface, 0, 5000 + iface);
      void* op = n.start_proxy_op(ctx, coll, iface, getpid(), 1, 0, 1, 512, false);
      receive_step(n, lib, ctx, op, iface, 0, t0);
      n.stop(op);
      n.record_kernel_stop(kch, 9000 + iface);
      n.stop(kch);
      n.stop(coll);
      n.stop(api);
      n.finalize(ctx);
    }
    return 0;
  });
  ASSERT_EQ(rc, 0);
  std::string file;
  ShardSnapshot s;
  ASSERT_NO_FATAL_FAILURE(read_the_shard(dir, file, s));
  EXPECT_EQ(s.nccl_interface, 4u);  // the first init's
  EXPECT_TRUE(s.state & shard::kStateFinalized);
  ASSERT_EQ(s.comms.size(), 3u);
  ASSERT_EQ(s.completed.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    const int iface = 4 + k;
    const OpRecord& r = s.completed[k];
    EXPECT_EQ(r.comm_hash, static_cast<uint64_t>(100 + iface)) << iface;
    EXPECT_EQ(r.seq, static_cast<uint64_t>(40 + iface)) << iface;
    EXPECT_EQ(r.rank, iface);
    EXPECT_EQ(r.channel, 1);
    EXPECT_EQ(r.phase_ns[3], 10u);
    EXPECT_EQ(r.phase_ns[4], 20u);
    EXPECT_EQ(r.phase_ns[5], 30u);
    EXPECT_TRUE(s.comms[k].finalized);
  }
  ASSERT_EQ(s.collectives.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(s.collectives[k].kernel_start_clk, 5000u + 4 + k);
    EXPECT_EQ(s.collectives[k].kernel_stop_clk, 9000u + 4 + k);
  }
  LocalData data;
  read_shard_file(file, "h", data);
  ASSERT_EQ(data.kernel_starts.size(), 3u);
  EXPECT_EQ(data.kernel_starts[2].start_gpu_clk_ns, 5006u);
  EXPECT_EQ(data.kernel_starts[2].stop_gpu_clk_ns, 9006u);
  EXPECT_EQ(data.kernel_starts[0].tree, 0u);
  EXPECT_EQ(data.kernel_starts[2].tree, 1u);
  EXPECT_EQ(data.inputs[0].layout, "v4");
}

// A host that runs ahead: the receive's data lands before the kernel reaches the collective.
// RecvGpuWait counts from its channel's kernel start as the proxy saw it (its KernelCh start
// event), as the trace reader does; a kernel of another channel does not bound it.
TEST(PluginRecords, RecvGpuWaitCountsFromItsChannelsKernelStart) {
  const std::string dir = scratch("kernel_start");
  int rc = run_in_child([&] {
    setenv("NCCL_CULPRIT_DIR", dir.c_str(), 1);
    PluginLib lib;
    if (!lib.load(kPlugin)) return 2;
    FakeNccl n(lib, 6);
    const uint64_t t0 = 1000000;
    lib.set_time(t0);
    void* ctx = n.init(77, "c", 1, 8, 0, nullptr);
    if (!ctx) return 10;
    void* coll = n.start_coll(ctx, 0, 5);
    void* other = n.start_kernel_ch(ctx, coll, 0, 0, 4000);  // channel 0, before any step
    void* op = n.start_proxy_op(ctx, coll, 0, getpid(), 1, 3, 2, 512, false);
    // Step 0's data is ready for its GPU at t0 + 30, 20 ns before the kernel starts on channel 1.
    void* kch = nullptr;
    receive_step(n, lib, ctx, op, 0, 0, t0, [&] { kch = n.start_kernel_ch(ctx, coll, 0, 1, 5000); });
    receive_step(n, lib, ctx, op, 0, 1, t0 + 100);
    n.stop(op);
    n.stop(kch);
    n.stop(other);
    n.stop(coll);
    n.finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  std::string file;
  ShardSnapshot s;
  ASSERT_NO_FATAL_FAILURE(read_the_shard(dir, file, s));
  ASSERT_EQ(s.completed.size(), 1u);
  const OpRecord& r = s.completed[0];
  EXPECT_EQ(r.channel, 1);
  EXPECT_EQ(r.phase_ns[3], 20u);  // RecvWait and RecvFlushWait as recorded
  EXPECT_EQ(r.phase_ns[4], 40u);
  EXPECT_EQ(r.phase_ns[5], 10u + 30u);  // step 0 from the kernel's start (t0 + 50), step 1 whole
  EXPECT_EQ(r.shortest_step_ns, 10u);
}

// Bad handles, PXN ops, exhausted pools, odd states: nothing crashes, losses are counted.
TEST(PluginRecords, SurvivesWhatNcclMightHandIt) {
  const std::string dir = scratch("robust");
  int rc = run_in_child([&] {
    setenv("NCCL_CULPRIT_DIR", dir.c_str(), 1);
    setenv("NCCL_CULPRIT_INFLIGHT_OPS", "16", 1);
    PluginLib lib;
    if (!lib.load(kPlugin)) return 2;
    FakeNccl n(lib, 5);
    void* ctx = n.init(7, "w", 1, 2, 0, nullptr);
    if (!ctx) return 3;
    int local = 0;
    n.stop(nullptr);
    n.record(nullptr, NCP_STATE_SEND_WAIT);
    n.stop(&local);                              // not ours
    n.record(&local, NCP_STATE_SEND_WAIT);
    n.finalize(&local);
    void* none = n.start_coll(nullptr, 0, 1);    // no context
    if (none != nullptr) return 4;
    void* coll = n.start_coll(ctx, 0, 1);
    void* bogus_step = n.start_step(ctx, coll, 0, 0);  // parent is not a ProxyOp
    if (bogus_step != nullptr) return 5;
    // PXN: another process's op; its parent pointer must never be read.
    void* pxn = n.start_proxy_op(ctx, reinterpret_cast<void*>(0x10), 1, getpid() + 1, 0, 0, 1, 8, true);
    if (pxn == nullptr) return 6;
    void* ps = n.start_step(ctx, pxn, 1, 0);
    n.record(ps, NCP_STATE_SEND_GPU_WAIT, 8);
    n.record(ps, 99, 8);  // unknown state
    n.record(ps, NCP_STATE_SEND_WAIT, 8, true);  // no args
    n.stop(ps);
    n.stop(pxn);
    n.stop(pxn);  // twice
    void* orphan = n.start_proxy_op(ctx, nullptr, 0, getpid(), 0, 1, 1, 8, false);
    n.stop(orphan);
    // More ops than slots: the extra ones get no handle.
    std::vector<void*> held;
    int null_handles = 0;
    for (int i = 0; i < 20; ++i) {
      void* h = n.start_proxy_op(ctx, coll, 0, getpid(), 0, 1, 1, 8, true);
      if (h) held.push_back(h);
      else ++null_handles;
    }
    if (null_handles != 4) return 7;
    for (void* h : held) n.stop(h);
    n.stop(coll);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  std::string file;
  ShardSnapshot s;
  ASSERT_NO_FATAL_FAILURE(read_the_shard(dir, file, s));
  EXPECT_EQ(s.pxn_ops, 1u);
  EXPECT_EQ(s.orphan_ops, 1u);
  EXPECT_EQ(s.dropped_ops, 4u);
  EXPECT_EQ(s.in_flight.size(), 0u);
  LocalData data;
  read_shard_file(file, "h", data);
  ASSERT_EQ(data.inputs.size(), 1u);
  const InputReport& in = data.inputs[0];
  EXPECT_EQ(in.reject_reasons.count("proxy op of another process (PXN)"), 1u);
  EXPECT_EQ(in.reject_reasons.count("proxy op of an unidentified collective"), 1u);
  EXPECT_EQ(in.reject_reasons.count("proxy ops the writer could not record (op slots full)"), 1u);
}

TEST(PluginRecords, DisablesItselfOnceWhenItCannotWrite) {
  const std::string dir = scratch("disabled");
  const std::string blocker = dir + "/not-a-dir";
  std::ofstream(blocker) << "x";
  const std::string err_file = dir + "/stderr.txt";
  int rc = run_in_child([&] {
    int fd = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    setenv("NCCL_CULPRIT_DIR", (blocker + "/sub").c_str(), 1);
    PluginLib lib;
    if (!lib.load(kPlugin)) return 2;
    FakeNccl n(lib, 6);
    int mask = -1;
    void* ctx = n.init(1, "a", 1, 1, 0, &mask);
    if (ctx != nullptr || mask != 0) return 3;
    ctx = n.init(2, "b", 1, 1, 0, &mask);
    if (ctx != nullptr || mask != 0) return 4;
    void* h = n.start_coll(ctx, 0, 0);
    n.stop(h);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  std::ifstream in(err_file);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("nccl-culprit profiler plugin: disabled"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("not-a-dir"), std::string::npos) << lines[0];
}

// ---- reading while the writer runs, and after it was killed ---------------------------------------

// Each synthetic op encodes its own check: op k of a thread has channel k%32, peer (k*7)%100,
// 4 steps of chunk 1000+k%100 bytes, and per step SendGpuWait a, SendPeerWait 2a, SendWait 3a
// with a = 10 + k%1000. A torn copy breaks these relations.
constexpr int kWriterThreads = 2;
constexpr uint64_t kSynthHash[kWriterThreads] = {0xA000000000000001ull, 0xB000000000000002ull};

void synthetic_writer(const PluginLib& lib, int thread, std::atomic<bool>* stop, uint64_t max_ops) {
  FakeNccl n(lib, 5 + thread % 2);
  uint64_t t = 1000000;
  lib.set_time(t);
  void* ctx = n.init(kSynthHash[thread], "synth", 1, 128, 10 + thread, nullptr);
  for (uint64_t k = 0; k < max_ops && !stop->load(std::memory_order_relaxed); ++k) {
    const uint64_t a = 10 + k % 1000;
    const int chunk = static_cast<int>(1000 + k % 100);
    lib.set_time(t += 100);
    void* coll = n.start_coll(ctx, 10 + thread, k);
    n.stop(coll);
    void* op = n.start_proxy_op(ctx, coll, 10 + thread, getpid(), static_cast<int>(k % 32),
                                static_cast<int>((k * 7) % 100), 4, chunk, true);
    for (int s = 0; s < 4; ++s) {
      lib.set_time(t += 1);
      void* st = n.start_step(ctx, op, 10 + thread, s);
      n.record(st, NCP_STATE_SEND_GPU_WAIT, chunk);
      lib.set_time(t += a);
      n.record(st, NCP_STATE_SEND_PEER_WAIT, chunk);
      lib.set_time(t += 2 * a);
      n.record(st, NCP_STATE_SEND_WAIT, chunk);
      lib.set_time(t += 3 * a);
      n.stop(st);
    }
    lib.set_time(t += 5);
    n.stop(op);
  }
}

// Empty string when `r` is one of the synthetic ops, whole or (in flight) partial.
std::string check_synthetic(const OpRecord& r, uint64_t* orphans = nullptr) {
  int thread = r.comm_hash == kSynthHash[0] ? 0 : r.comm_hash == kSynthHash[1] ? 1 : -1;
  if (thread < 0) return "unknown comm hash";
  const bool in_flight = (r.flags & shard::kOpInFlight) != 0;
  if (!(r.flags & shard::kOpSeqKnown)) {
    // Its collective's ticket went stale before the op started (the writer thread was
    // descheduled while the other one went round every task slot): the op is kept without a
    // sequence rather than given another collective's. Check what it carries itself.
    if (orphans) ++*orphans;
    if (r.rank != 10 + thread || r.n_steps != 4 || r.steps > 4) return "orphan geometry";
    if (r.steps == 0) return "";
    const uint64_t a = r.phase_ns[0] / r.steps, kmod100 = r.chunk_bytes - 1000;
    if (r.phase_ns[0] != r.steps * a || r.phase_ns[1] != 2 * r.phase_ns[0] ||
        r.phase_ns[2] != 3 * r.phase_ns[0] || (a - 10) % 100 != kmod100 ||
        r.bytes != r.steps * r.chunk_bytes || r.channel % 4 != static_cast<int>(kmod100 % 4))
      return "orphan phases";
    return "";
  }
  const uint64_t k = r.seq, a = 10 + k % 1000;
  if (r.rank != 10 + thread) return "rank";
  if (r.channel != static_cast<int>(k % 32)) return "channel";
  if (r.peer != static_cast<int>((k * 7) % 100)) return "peer";
  if (r.n_steps != 4 || r.chunk_bytes != 1000 + k % 100) return "geometry";
  if (in_flight ? r.steps > 4 : r.steps != 4) return "steps";
  if (r.bytes != r.steps * (1000 + k % 100)) return "bytes";
  if (r.phase_ns[0] != r.steps * a || r.phase_ns[1] != 2 * r.steps * a ||
      r.phase_ns[2] != 3 * r.steps * a)
    return "phases";
  if (r.phase_ns[3] || r.phase_ns[4] || r.phase_ns[5]) return "receive phases";
  if (!in_flight && r.end_ns != r.start_ns + 4 * (1 + 6 * a) + 5) return "duration";
  if (!(r.flags & shard::kOpSeqKnown) || !(r.flags & shard::kOpSend)) return "flags";
  return "";
}

uint64_t peek_ring_head(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return 0;
  uint64_t v = 0;
  if (pread(fd, &v, sizeof v, offsetof(shard::Header, ring_head)) != sizeof v) v = 0;
  close(fd);
  return v;
}

std::string wait_for_shard(const std::string& dir, double seconds) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (fs::exists(dir)) {
      auto files = shards_in(dir);
      if (!files.empty()) return files[0];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return "";
}

TEST(ShardLive, ReaderNeverAcceptsATornRecordWhileTheWriterAppends) {
  const std::string dir = scratch("live");
  fflush(stdout);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setenv("NCCL_CULPRIT_DIR", dir.c_str(), 1);
    setenv("NCCL_CULPRIT_SHARD_RECORDS", "256", 1);  // the ring laps every few milliseconds
    PluginLib lib;
    if (!lib.load(kPlugin)) _exit(2);
    std::atomic<bool> stop{false};
    std::vector<std::thread> th;
    for (int i = 0; i < kWriterThreads; ++i)
      th.emplace_back([&, i] { synthetic_writer(lib, i, &stop, UINT64_MAX); });
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    stop.store(true);
    for (auto& x : th) x.join();
    _exit(0);
  }
  std::string path = wait_for_shard(dir, 10);
  ASSERT_FALSE(path.empty());
  uint64_t reads = 0, records = 0, in_flight = 0, torn = 0, busy = 0, bad = 0, orphans = 0;
  std::string first_bad;
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    ShardSnapshot s;
    ASSERT_TRUE(read_shard_snapshot(path, s)) << s.error;
    ++reads;
    torn += s.torn;
    busy += s.busy;
    for (const auto* list : {&s.completed, &s.in_flight})
      for (const OpRecord& r : *list) {
        std::string why = check_synthetic(r, &orphans);
        if (!why.empty()) {
          ++bad;
          if (first_bad.empty()) first_bad = why + " (seq " + std::to_string(r.seq) + ")";
        }
      }
    records += s.completed.size();
    in_flight += s.in_flight.size();
  }
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(bad, 0u) << first_bad;
  EXPECT_GE(reads, 5u);
  EXPECT_GT(records, 1000u);
  ShardSnapshot last;
  ASSERT_TRUE(read_shard_snapshot(path, last));
  EXPECT_GT(last.ring_head, 10u * 256u) << "the ring never lapped";
  EXPECT_EQ(last.completed.size(), 256u);
  EXPECT_EQ(last.torn, 0u);
  std::printf("[ live read ] %llu reads, %llu records checked (%llu orphans), %llu in flight, %llu "
              "busy and %llu torn skipped, %llu ops written\n", static_cast<unsigned long long>(reads),
              static_cast<unsigned long long>(records), static_cast<unsigned long long>(orphans),
              static_cast<unsigned long long>(in_flight),
              static_cast<unsigned long long>(busy), static_cast<unsigned long long>(torn),
              static_cast<unsigned long long>(last.ring_head));
}

TEST(ShardLive, FileOfAWriterKilledMidStreamIsReadable) {
  const std::string dir = scratch("killed");
  fflush(stdout);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setenv("NCCL_CULPRIT_DIR", dir.c_str(), 1);
    setenv("NCCL_CULPRIT_SHARD_RECORDS", "4096", 1);
    PluginLib lib;
    if (!lib.load(kPlugin)) _exit(2);
    std::atomic<bool> stop{false};
    std::vector<std::thread> th;
    for (int i = 0; i < kWriterThreads; ++i)
      th.emplace_back([&, i] { synthetic_writer(lib, i, &stop, UINT64_MAX); });
    for (auto& x : th) x.join();  // never: killed
    _exit(0);
  }
  std::string path = wait_for_shard(dir, 10);
  ASSERT_FALSE(path.empty());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (peek_ring_head(path) < 6000 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  ShardSnapshot s;
  ASSERT_TRUE(read_shard_snapshot(path, s)) << s.error;
  EXPECT_GE(s.ring_head, 6000u);
  // Every ring slot is a whole record or counted torn (torn also counts in-flight entries
  // the writer died inside).
  EXPECT_LE(s.completed.size(), std::min<uint64_t>(s.ring_head, 4096));
  EXPECT_GE(s.completed.size() + s.torn, std::min<uint64_t>(s.ring_head, 4096));
  EXPECT_LE(s.torn, static_cast<uint64_t>(kWriterThreads));
  for (const auto* list : {&s.completed, &s.in_flight})
    for (const OpRecord& r : *list) EXPECT_EQ(check_synthetic(r), "") << "seq " << r.seq;
  EXPECT_LE(s.in_flight.size(), static_cast<size_t>(kWriterThreads));
  EXPECT_FALSE(s.state & shard::kStateFinalized);
  ASSERT_EQ(s.comms.size(), static_cast<size_t>(kWriterThreads));

  LocalData data;
  read_shard_file(path, "h", data);
  ASSERT_EQ(data.inputs.size(), 1u);
  EXPECT_EQ(data.inputs[0].error, "");
  EXPECT_GE(data.inputs[0].records, 4000u);
  EXPECT_EQ(data.comm_ranks.size(), static_cast<size_t>(kWriterThreads));
}

// ---- diagnosis from shards of simulated clusters ------------------------------------------------

const std::string kRing = "topology=ring,nodes=4,gpus=8,channels=2,seqs=20";

struct Verdict {
  int rc = -1;
  std::string output;
  nlohmann::json doc;
};

Verdict analyze(const std::string& args, const std::string& work) {
  Verdict v;
  const std::string json_path = work + "/verdict.json";
  const std::string cmd = "cd '" + work + "' && '" + kCli + "' analyze " + args +
                          " --format shard --json '" + json_path + "' --output '" + work +
                          "/verdict.h5' --quiet 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return v;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) v.output += buf;
  int status = pclose(p);
  v.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(json_path);
  if (in) v.doc = nlohmann::json::parse(in, nullptr, false);
  return v;
}

// Simulates `spec`, writes its shards through the plugin and analyses them; checks that the
// first culprit is `rank` (class `cls`, other end `peer_rank`), or with `first` false only
// that `rank` is among the culprits with that class.
void expect_culprit(const std::string& name, const std::string& spec, int rank, const std::string& cls,
                    int peer_rank = -1, bool first = true, bool node_local_too = false) {
  SCOPED_TRACE(spec);
  const std::string work = scratch(name);
  mock::Simulation sim(mock::Scenario::parse(spec));
  std::string err;
  auto pids = write_simulated_shards(kPlugin, sim, work + "/data", &err);
  ASSERT_EQ(err, "");
  ASSERT_EQ(pids.size(), sim.processes().size());
  ASSERT_EQ(shards_in(work + "/data").size(), sim.processes().size());
  Verdict v = analyze("--shared '" + work + "/data'", work);
  ASSERT_EQ(v.rc, 0) << v.output;
  ASSERT_TRUE(v.doc.is_object()) << v.output;
  EXPECT_EQ(v.doc["status"], "ok");
  // One shard per process (<host>-<pid>.shard). Its records are the process's proxy ops with
  // a finished step: at least every op the simulation completed, at most every op it started
  // (none for a GPU whose ring neighbours are all on its node: NVLink has no proxy ops).
  ASSERT_EQ(v.doc["inputs"].size(), sim.processes().size());
  uint64_t all_records = 0;
  for (const auto& in : v.doc["inputs"]) {
    EXPECT_EQ(in["format"], "shard");
    const std::string path = in["path"].get<std::string>();
    int rank = -1;
    for (const auto& [r, pid] : pids) {
      const std::string tail = "-" + std::to_string(pid) + ".shard";
      if (path.size() >= tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0) rank = r;
    }
    ASSERT_GE(rank, 0) << path << " is no simulated process's shard";
    uint64_t started = 0, completed = 0;
    for (const mock::SimProxyOp& o : sim.proxy_ops()) {
      if (o.rank != rank || !std::isfinite(o.sched_ns)) continue;
      ++started;
      completed += std::isfinite(o.end_ns) ? 1 : 0;
    }
    const uint64_t records = in["records"].get<uint64_t>();
    EXPECT_GE(records, completed) << path;
    EXPECT_LE(records, started) << path;
    all_records += records;
  }
  EXPECT_GT(all_records, 0u);
  ASSERT_GE(v.doc["culprits"].size(), 1u) << v.output;
  const mock::SimProcess& want = sim.processes()[static_cast<size_t>(rank)];
  if (!first) {
    bool found = false;
    for (const auto& c : v.doc["culprits"])
      found = found || (c["host"] == want.host && c["pid"].get<int64_t>() == pids.at(rank) &&
                        c["culprit_class"] == cls);
    EXPECT_TRUE(found) << "rank " << rank << " is not among the culprits";
    return;
  }
  const auto& top = v.doc["culprits"][0];
  EXPECT_EQ(top["host"], want.host);
  EXPECT_EQ(top["pid"].get<int64_t>(), static_cast<int64_t>(pids.at(rank)))
      << "culprit is not rank " << rank << " of " << want.host;
  EXPECT_EQ(top["culprit_class"], cls);
  if (peer_rank >= 0) {
    int64_t peer = top["peer_process_id"].get<int64_t>();
    ASSERT_GE(peer, 0);
    const auto& pp = v.doc["processes"][static_cast<size_t>(peer)];
    EXPECT_EQ(pp["host"], sim.processes()[static_cast<size_t>(peer_rank)].host);
    EXPECT_EQ(pp["pid"].get<int64_t>(), static_cast<int64_t>(pids.at(peer_rank)));
  }
  if (node_local_too) {
    // What one analyzer process beside the job sees: only its own node's shards (--input).
    Verdict local = analyze("--input '" + work + "/data/" + want.host + "'", work);
    ASSERT_EQ(local.rc, 0) << local.output;
    ASSERT_GE(local.doc["culprits"].size(), 1u) << local.output;
    EXPECT_EQ(local.doc["culprits"][0]["pid"].get<int64_t>(), static_cast<int64_t>(pids.at(rank)));
    EXPECT_EQ(local.doc["culprits"][0]["culprit_class"], cls);
  }
}

TEST(ShardDiagnosis, HangOfAGpuWithoutNetworkConnections) {
  // Rank 13 (node001 local 5) never launches collective 10; its ring neighbours are on its own
  // node, so only its communicator's sequence numbers can name it.
  expect_culprit("hang", kRing + ",fault=hang:13@10", 13, "hang", -1, true, true);
}

TEST(ShardDiagnosis, HangOfANetworkFacingRank) {
  expect_culprit("hang_net", kRing + ",fault=hang:16@7", 16, "hang");
}

TEST(ShardDiagnosis, HangWithSeveralCommunicatorsPerProcess) {
  // World ring plus one data-parallel communicator per local GPU index: every process inits
  // two communicators and drives each from its own host thread. Rank 13's DP peers wait for
  // it inside their DP collective and so never start the next world collective: they lag in
  // the world as 13 lags in its DP communicator; only 13 is behind everywhere it is a member.
  expect_culprit("hang_dp", kRing + ",comms=world+dp,fault=hang:13@10", 13, "hang");
}

TEST(ShardDiagnosis, SlowLink) {
  expect_culprit("slow_link", kRing + ",fault=slow_link:15-16", 15, "network_link", 16);
}

// Shards hold every step of every op (the NCCL trace files only the last 16), and in the
// steady pipeline the slow interior GPU 13 back-pressures its NVLink predecessor 12, a
// network receiver, whose RecvGpuWait per step is then ~200 us. The kernel clocks (13's own
// work between collectives is 3x its peers') must win over that consume delay on 12.
TEST(ShardDiagnosis, SlowGpu) {
  expect_culprit("slow_gpu", kRing + ",fault=slow_gpu:13", 13, "gpu_producer");
}

TEST(ShardDiagnosis, SlowFlush) {
  expect_culprit("slow_flush", kRing + ",fault=slow_flush:8", 8, "flush");
}

TEST(ShardDiagnosis, SlowConsumer) {
  expect_culprit("slow_consumer", kRing + ",fault=slow_consumer:16", 16, "gpu_consumer");
}

// Pipelines through live capture: the wire of each send (its shortest SendWait and the time
// its SendWait intervals cover) and the kernel clocks of send/recv calls reach the analysis.
const std::string kPipeline = "topology=pipeline,nodes=4,gpus=4,channels=2,seqs=3,microbatches=4,bytes=2M";

TEST(ShardDiagnosis, PipelineSlowLink) {
  expect_culprit("pp_slow_link", kPipeline + ",fault=slow_link:4-8", 4, "network_link", 8);
}

TEST(ShardDiagnosis, PipelineSlowGpu) {
  expect_culprit("pp_slow_gpu", kPipeline + ",fault=slow_gpu:5", 5, "gpu_producer");
}

// A healthy tree+dp job under LL128 whose hosts run ahead (a false root of the healthy-only
// study in NCCL traces, docs/accuracy.md): data lands before the receivers' kernels reach the
// collective. Counted from the kernels' starts, as the trace reader does, nobody is named.
TEST(ShardDiagnosis, HostsAheadHealthyTreeNamesNobody) {
  const std::string spec =
      "topology=tree,comms=world+dp,nodes=3,gpus=7,channels=8,seqs=8,bytes=27020K,jitter=0.299,hetero=0.077,"
      "seed=169921,compute=0.724,host=ahead,proto=ll128,fault=none";
  const std::string work = scratch("ahead_healthy");
  mock::Simulation sim(mock::Scenario::parse(spec));
  std::string err;
  auto pids = write_simulated_shards(kPlugin, sim, work + "/data", &err);
  ASSERT_EQ(err, "");
  ASSERT_EQ(shards_in(work + "/data").size(), sim.processes().size());
  Verdict v = analyze("--shared '" + work + "/data'", work);
  ASSERT_EQ(v.rc, 0) << v.output;
  ASSERT_TRUE(v.doc.is_object()) << v.output;
  uint64_t records = 0;
  for (const auto& in : v.doc["inputs"]) records += in["records"].get<uint64_t>();
  EXPECT_GT(records, 1000u);
  EXPECT_EQ(v.doc["culprits"].size(), 0u) << v.doc["culprits"].dump();
}

}  // namespace
}  // namespace culprit::plugintest
