// Every example-profiler layout of NCCL 2.23 to 2.30 (FORMATS.md §2) and the known defects
// of real files, on lines printed exactly as each version's print_event.c(c) prints them:
// key order, spacing, "%f" timestamps, bare tokens where the plugin leaves them unquoted.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "io/nccl_trace_reader.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 12715772615376301750ull;  // above 2^63, as real hashes often are

// One line of the plugin: {"name": N, "cat": C, "ph": P, "id": I, "pid": 4242, "tid": 1,
// "ts": %f[, "args": {A}]},
class Trace {
 public:
  explicit Trace(int64_t pid = 4242) : pid_(pid) { s_ = "[\n"; }
  Trace& b(const std::string& name, const std::string& cat, int64_t id, double ts,
           const std::string& args = "") {
    return put(name, cat, 'b', id, ts, args);
  }
  Trace& e(const std::string& name, const std::string& cat, int64_t id, double ts) {
    return put(name, cat, 'e', id, ts, "");
  }
  Trace& raw(const std::string& line) {
    s_ += line + "\n";
    return *this;
  }
  std::string str() const { return s_ + "{}]\n"; }
  std::string unterminated() const { return s_; }

 private:
  Trace& put(const std::string& name, const std::string& cat, char ph, int64_t id, double ts,
             const std::string& args) {
    char head[512];
    std::snprintf(head, sizeof head,
                  "{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"%c\", \"id\": %lld, \"pid\": %lld, "
                  "\"tid\": 1, \"ts\": %f",
                  name.c_str(), cat.c_str(), ph, static_cast<long long>(id),
                  static_cast<long long>(pid_), ts);
    s_ += head;
    s_ += args.empty() ? std::string("},\n") : ", \"args\": {" + args + "}},\n";
    return *this;
  }
  int64_t pid_;
  std::string s_;
};

std::string step_arg(int step) { return "\"Step\": " + std::to_string(step); }

std::string op_args(int channel, int peer, int steps, uint64_t trans) {
  return "\"Channel\": " + std::to_string(channel) + ", \"Peer\": " + std::to_string(peer) +
         ", \"Steps\": " + std::to_string(steps) + ", \"ChunkSize\": 4096, \"transSize\": " +
         std::to_string(trans);
}

// 2.23-2.26 proxy op args carry the op's last states as nested objects.
std::string old_op_args(bool send, int channel, int peer, int steps, uint64_t trans) {
  std::string mid = send ? "\"REM_FIFO_WAIT\"" : "\"RECEIVED\"";
  return op_args(channel, peer, steps, trans) + ", \"POSTED\": {\"step\": 2, \"ts\": 140.000000}, " +
         mid + ": {\"step\": 2, \"ts\": 143.000000}, \"TRANSMITTED\": {\"step\": 2, \"ts\": 143.000000}, " +
         "\"DONE\": {\"step\": 2, \"ts\": 163.000000}";
}

// 2.23-2.26 send step: SendBufferWait [start, GPUWait), SendGpuWait [GPUWait, SendWait),
// SendWait [SendWait, stop). No SendPeerWait: its time is inside SendGpuWait.
void old_send_step(Trace& t, int64_t id, int step, double post, double sendwait, double stop,
                   bool qp = false) {
  t.b("SendBufferWait", "NET", id, post - 0.5, step_arg(step)).e("SendBufferWait", "NET", id, post);
  t.b("SendGpuWait", "NET", id, post, step_arg(step)).e("SendGpuWait", "NET", id, sendwait);
  t.b("SendWait", "NET", id, sendwait, step_arg(step));
  if (qp)
    t.b("Qp", "NET_IB", 0, sendwait + 1, "\"device\": 0, \"qp_num\": 77, \"opcode\": 0, \"wr_id\": 5, \"size\": 4096")
        .e("Qp", "NET_IB", 0, sendwait + 2);
  t.e("SendWait", "NET", id, stop);
}

// 2.23-2.26 receive step: RecvBufferWait [start, RecvWait), RecvWait [RecvWait, FlushWait),
// RecvFlushWait [FlushWait, GPUWait), RecvGpuWait [GPUWait, stop).
void old_recv_step(Trace& t, int64_t id, int step, double start, double wait, double flush,
                   double gpu, double stop) {
  t.b("RecvBufferWait", "NET", id, start, step_arg(step)).e("RecvBufferWait", "NET", id, wait);
  t.b("RecvWait", "NET", id, wait, step_arg(step)).e("RecvWait", "NET", id, flush);
  t.b("RecvFlushWait", "NET", id, flush, step_arg(step)).e("RecvFlushWait", "NET", id, gpu);
  t.b("RecvGpuWait", "NET", id, gpu, step_arg(step)).e("RecvGpuWait", "NET", id, stop);
}

// The AllReduce of every test: rank 3 receives from rank 2 and sends to rank 4 on channel 0,
// two steps each. Phases (us): send 15+20, 3+20 (2.27+: GpuWait 10+2, PeerWait 5+1);
// receive 30/1/4 and 40/1/2.
enum class Old { k223, k224, k2263 };

std::string old_trace(Old v, int seq = 7, uint64_t trans = 8192) {
  Trace t;
  const bool v223 = v == Old::k223;
  std::string coll = v223 ? "ncclAllReduce" : "AllReduce";
  std::string coll_args = "\"SeqNum\": " + std::to_string(seq) + ", \"CommHash\": " + std::to_string(kComm) +
                          ", \"Rank\": 3, \"Count\": 1024, \"Datatype\": " +
                          (v223 ? std::string("7") : std::string("\"ncclFloat32\"")) +
                          ", \"Algorithm\": \"Ring\", \"Protocol\": \"Simple\", \"nMaxChannels\": 1";
  t.b("Group", "GROUP", 0, 99, "\"groupId\": 0");
  t.b(coll, "COLL", 0, 100, coll_args);
  if (v == Old::k2263) t.b("KernelCh", "GPU", 0, 101, "\"Channel\": 0");
  // 2.23 prints send[c] then recv[c]; so do 2.24-2.26 (send[c][j], recv[c][j]).
  t.b("Send", "PROXY", 0, 103, old_op_args(true, 0, 4, 2, trans));
  old_send_step(t, 0, 0, 105, 120, 140, v == Old::k2263);
  old_send_step(t, 1, 1, 140, 143, 163);
  t.e("Send", "PROXY", 0, 165);
  t.b("Recv", "PROXY", 1, 102, old_op_args(false, 0, 2, 2, trans));
  old_recv_step(t, 2, 0, 109, 110, 140, 141, 145);
  old_recv_step(t, 3, 1, 110.5, 111, 151, 152, 154);
  t.e("Recv", "PROXY", 1, 160);
  if (v == Old::k2263) t.e("KernelCh", "GPU", 0, 170);
  t.e(coll, "COLL", 0, 171);
  t.e("Group", "GROUP", 0, 172);
  // Proxy thread control events come after the groups, outside any collective.
  t.b("Idle", "PROXY", 0, 10).e("Idle", "PROXY", 0, 11);
  t.b("Append", "PROXY", 1, 12, "\"appended\": 2").e("Append", "PROXY", 1, 13);
  return t.str();
}

// 2.27+ proxy op: ScheduleX [start, progress), then ProgressX wrapping the steps.
void new_op(Trace& t, bool send, int64_t id, double sched, double progress, int peer) {
  std::string s = send ? "Send" : "Recv";
  t.b("Schedule" + s, "PROXY", id, sched, op_args(0, peer, 2, 8192)).e("Schedule" + s, "PROXY", id, progress);
  t.b("Progress" + s, "PROXY", id, progress, op_args(0, peer, 2, 8192));
}

void new_send_step(Trace& t, int64_t id, int step, double gpu, double peer, double sw, double stop) {
  t.b("SendGpuWait", "NET", id, gpu, step_arg(step)).e("SendGpuWait", "NET", id, peer);
  t.b("SendPeerWait", "NET", id, peer, step_arg(step)).e("SendPeerWait", "NET", id, sw);
  t.b("SendWait", "NET", id, sw, step_arg(step)).e("SendWait", "NET", id, stop);
}

void new_recv_step(Trace& t, int64_t id, int step, double wait, double flush, double gpu, double stop) {
  t.b("RecvWait", "NET", id, wait, step_arg(step)).e("RecvWait", "NET", id, flush);
  t.b("RecvFlushWait", "NET", id, flush, step_arg(step)).e("RecvFlushWait", "NET", id, gpu);
  t.b("RecvGpuWait", "NET", id, gpu, step_arg(step)).e("RecvGpuWait", "NET", id, stop);
}

// The collective body of 2.27+ (COLL > KernelCh > ops).
void new_coll_body(Trace& t, bool stop_clk_zero) {
  t.b("AllReduce", "COLL", 0, 100,
      "\"SeqNum\": 7, \"CommHash\": " + std::to_string(kComm) +
          ", \"Rank\": 3, \"Count\": 1024, \"Datatype\": \"ncclFloat32\", \"Algorithm\": \"RING\", "
          "\"Protocol\": \"SIMPLE\", \"nChannels\": 1");
  t.b("KernelCh", "GPU", 0, 101,
      std::string("\"Channel\": 0, \"StartGpuClk\": 1765223116927674080, \"StopGpuClk\": ") +
          (stop_clk_zero ? "0" : "1765223116927774080"));
  new_op(t, false, 0, 102, 103, 2);
  new_recv_step(t, 0, 0, 110, 140, 141, 145);
  new_recv_step(t, 1, 1, 111, 151, 152, 154);
  t.e("ProgressRecv", "PROXY", 0, 160);
  new_op(t, true, 1, 102, 103, 4);
  new_send_step(t, 2, 0, 105, 115, 120, 140);
  new_send_step(t, 3, 1, 140, 142, 143, 163);
  t.e("ProgressSend", "PROXY", 1, 165);
  t.e("KernelCh", "GPU", 0, stop_clk_zero ? 0.0 : 170.0);
  t.e("AllReduce", "COLL", 0, 171);
}

LocalData read(const std::string& text, const std::string& name = "prof-hostA-4242.txt") {
  LocalData data;
  read_nccl_trace_buffer(text, name, "hostA", data);
  return data;
}

const ProxyOpRecord* find_op(const LocalData& d, bool is_send, uint64_t comm = kComm) {
  for (const ProxyOpRecord& r : d.ops)
    if (r.is_send == (is_send ? 1 : 0) && r.comm_hash == comm) return &r;
  return nullptr;
}

uint64_t reason(const LocalData& d, const std::string& why) {
  auto it = d.inputs.at(0).reject_reasons.find(why);
  return it == d.inputs.at(0).reject_reasons.end() ? 0 : it->second;
}

void expect_old_phases(const LocalData& d) {
  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_EQ(d.inputs[0].error, "");
  ASSERT_EQ(d.ops.size(), 2u);
  const ProxyOpRecord* send = find_op(d, true);
  const ProxyOpRecord* recv = find_op(d, false);
  ASSERT_TRUE(send && recv);
  EXPECT_EQ(send->rank, 3);
  EXPECT_EQ(send->peer, 4);
  EXPECT_EQ(send->seq, 7u);
  EXPECT_EQ(send->steps, 2u);
  EXPECT_EQ(send->phase_ns[kSendGpuWait], 18000u);  // includes the time waiting for the peer
  EXPECT_EQ(send->phase_ns[kSendPeerWait], 0u);
  EXPECT_EQ(send->phase_ns[kSendWait], 40000u);
  EXPECT_EQ(send->bytes, 8192u);
  EXPECT_EQ(send->start_ns, 103000u);
  EXPECT_EQ(send->end_ns, 165000u);
  EXPECT_EQ(recv->peer, 2);
  EXPECT_EQ(recv->steps, 2u);
  EXPECT_EQ(recv->phase_ns[kRecvWait], 70000u);
  EXPECT_EQ(recv->phase_ns[kRecvFlushWait], 2000u);
  EXPECT_EQ(recv->phase_ns[kRecvGpuWait], 6000u);
  ASSERT_EQ(d.comm_ranks.size(), 1u);
  EXPECT_EQ(d.comm_ranks[0].comm_hash, kComm);
  EXPECT_EQ(d.comm_ranks[0].newest_seq, 7u);
}

// ---- layouts ---------------------------------------------------------------------------

TEST(TraceLayouts, Nccl223IntegerDatatypeNcclNamesRingSimple) {
  LocalData d = read(old_trace(Old::k223));
  expect_old_phases(d);
  EXPECT_EQ(d.inputs[0].layout, "2.23");
  EXPECT_EQ(d.inputs[0].rejected, 0u);
  EXPECT_FALSE(d.inputs[0].truncated);
  EXPECT_TRUE(d.kernel_starts.empty());  // no KernelCh before 2.26.3
}

TEST(TraceLayouts, Nccl224To226NestedStatesAndBufferWaits) {
  LocalData d = read(old_trace(Old::k224));
  expect_old_phases(d);
  EXPECT_EQ(d.inputs[0].layout, "2.24-2.26");
  EXPECT_EQ(d.inputs[0].rejected, 0u);
}

TEST(TraceLayouts, Nccl2263KernelChWithoutClocksAndQpInsideSteps) {
  LocalData d = read(old_trace(Old::k2263));
  expect_old_phases(d);
  EXPECT_EQ(d.inputs[0].layout, "2.24-2.26");
  EXPECT_EQ(d.inputs[0].rejected, 0u);
  EXPECT_TRUE(d.kernel_starts.empty());  // KernelCh has only Channel before 2.27
}

TEST(TraceLayouts, Nccl227GroupCollKernelChScheduleProgress) {
  Trace t;
  t.b("Group", "GROUP", 0, 99, "\"groupId\": 0");
  new_coll_body(t, false);
  t.e("Group", "GROUP", 0, 172);
  LocalData d = read(t.str(), "prof_12715772615376301750_3.json");
  EXPECT_EQ(d.inputs[0].layout, "2.27+");
  EXPECT_EQ(d.inputs[0].rejected, 0u);
  ASSERT_EQ(d.ops.size(), 2u);
  EXPECT_EQ(find_op(d, true)->phase_ns[kSendGpuWait], 12000u);
  EXPECT_EQ(find_op(d, true)->phase_ns[kSendPeerWait], 6000u);
  EXPECT_EQ(find_op(d, true)->phase_ns[kSendWait], 40000u);
  EXPECT_EQ(find_op(d, true)->start_ns, 102000u);  // the op starts when it is scheduled

  // A ScheduleSend whose ProgressSend never came does not lend its time to the next op
  // (here the send op's own ScheduleSend lines are replaced by another op's).
  std::string orphan = t.str();
  for (const char* ph : {"b", "e"}) {
    std::string line = std::string("{\"name\": \"ScheduleSend\", \"cat\": \"PROXY\", \"ph\": \"") + ph + "\", \"id\": 1,";
    size_t at = orphan.find(line);
    ASSERT_NE(at, std::string::npos);
    orphan.erase(at, orphan.find('\n', at) + 1 - at);
  }
  Trace o;
  o.b("ScheduleSend", "PROXY", 7, 50, op_args(0, 4, 2, 8192)).e("ScheduleSend", "PROXY", 7, 51);
  orphan.insert(orphan.find("{\"name\": \"ProgressSend\""), o.unterminated().substr(2));
  LocalData d2 = read(orphan, "prof_12715772615376301750_3.json");
  ASSERT_TRUE(find_op(d2, true));
  EXPECT_EQ(find_op(d2, true)->start_ns, 103000u);  // its ProgressSend
  EXPECT_EQ(find_op(d, false)->phase_ns[kRecvWait], 70000u);
  ASSERT_EQ(d.kernel_starts.size(), 1u);
}

// 2.28-2.29.2: API wrappers (Group API > KernelLaunch, COLL_API > COLL), "b" at ts 0,
// unquoted ncclFloat32 / 0x... / (nil), "groupDepth":1 and "GraphCaptured":0 without a space,
// KernelCh on other channels with StopGpuClk 0 and "e" at 0.
TEST(TraceLayouts, Nccl228To2292ApiWrappersWithInvalidJson) {
  Trace t(225798);
  t.b("Group API", "GROUP_API", 0, 3433.595001, "\"groupApiId\": 0, \"groupDepth\":1");
  t.b("KernelLaunch", "KERNEL_LAUNCH", 0, 0, "\"groupId\": 0, \"Stream\": 0x5020000567d0");
  t.e("KernelLaunch", "KERNEL_LAUNCH", 0, 99.5);
  t.b("AllReduce", "COLL_API", 0, 0,
      "\"count\": 1024, \"datatype\": ncclFloat32, \"root\": 0, \"GraphCaptured\":0, \"Stream\": (nil)");
  new_coll_body(t, true);
  t.e("AllReduce", "COLL_API", 0, 172);
  t.e("Group API", "GROUP_API", 0, 173);
  LocalData d = read(t.str(), "prof_12715772615376301750_3.json");
  EXPECT_EQ(d.inputs[0].layout, "2.28-2.29.2");
  EXPECT_EQ(d.inputs[0].rejected, 0u);
  ASSERT_EQ(d.ops.size(), 2u);
  EXPECT_EQ(d.processes.at(0).pid, 225798);
  EXPECT_EQ(find_op(d, false)->phase_ns[kRecvGpuWait], 6000u);
  EXPECT_EQ(d.kernel_starts.size(), 1u);
}

// 2.29.3-2.30: the wrappers are quoted again, and copy-engine collectives (CE_COLL, CE_SYNC,
// CE_BATCH) appear: they have no proxy ops and are ignored without complaint.
TEST(TraceLayouts, Nccl2293To230QuotedAgainAndCopyEngineEventsIgnored) {
  Trace t(225798);
  t.b("Group API", "GROUP_API", 0, 3433.595001, "\"groupApiId\": 0, \"groupDepth\": 1");
  t.b("AllGather", "COLL_API", 0, 0,
      "\"count\": 1024, \"datatype\": \"ncclFloat32\", \"root\": 0, \"GraphCaptured\": 0, \"Stream\": \"0x5020000567d0\"");
  t.b("AllGather", "CE_COLL", 0, 50,
      "\"eventId\": 3, \"count\": 1024, \"datatype\": \"ncclFloat32\", \"strategy\": \"direct\", "
      "\"start_ts_cpu\": 50.000000, \"stop_ts_cpu\": 60.000000, \"duration_cpu_us\": 10.000000, \"duration_gpu_us\": 8");
  t.e("AllGather", "CE_COLL", 0, 60);
  t.b("CeSync", "CE_SYNC", 0, 61,
      "\"eventId\": 4, \"type\": \"barrier\", \"strategy\": \"direct\", \"nRanks\": 8, \"start_ts_cpu\": 61.000000, "
      "\"stop_ts_cpu\": 62.000000, \"duration_cpu_us\": 1.000000");
  t.e("CeSync", "CE_SYNC", 0, 62);
  t.b("CeBatch", "CE_BATCH", 0, 63,
      "\"eventId\": 5, \"numOps\": 7, \"totalBytes\": 4096, \"start_ts_cpu\": 63.000000, \"stop_ts_cpu\": 64.000000, "
      "\"duration_cpu_us\": 1.000000, \"duration_gpu_us\": 1");
  t.e("CeBatch", "CE_BATCH", 0, 64);
  t.e("AllGather", "COLL_API", 0, 65);
  t.b("AllReduce", "COLL_API", 1, 0,
      "\"count\": 1024, \"datatype\": \"ncclFloat32\", \"root\": 0, \"GraphCaptured\": 0, \"Stream\": \"(nil)\"");
  new_coll_body(t, true);
  t.e("AllReduce", "COLL_API", 1, 172);
  t.e("Group API", "GROUP_API", 0, 173);
  LocalData d = read(t.str(), "prof_12715772615376301750_3.json");
  EXPECT_EQ(d.inputs[0].layout, "2.29.3+");
  EXPECT_EQ(d.inputs[0].rejected, 0u);
  EXPECT_EQ(d.ops.size(), 2u);
  EXPECT_EQ(d.comm_ranks.size(), 1u);  // the CE collective names no communicator
}

// 2.23-2.26 write one file per finalizing thread: several communicators and ranks (a thread
// driving several GPUs) share it.
TEST(TraceLayouts, OldLayoutFileWithSeveralCommunicatorsAndRanks) {
  std::string a = old_trace(Old::k224, 7);
  std::string b = old_trace(Old::k224, 11);
  const uint64_t other = 77;
  b.replace(b.find(std::to_string(kComm)), std::to_string(kComm).size(), std::to_string(other));
  b.replace(b.find("\"Rank\": 3"), 9, "\"Rank\": 5");
  // One file: both groups, then the proxy control events.
  std::string body_a = a.substr(2, a.find("{\"name\": \"Idle\"") - 2);
  std::string both = "[\n" + body_a + b.substr(2);
  LocalData d = read(both);
  EXPECT_EQ(d.inputs[0].rejected, 0u);
  ASSERT_EQ(d.ops.size(), 4u);
  ASSERT_EQ(d.comm_ranks.size(), 2u);
  ASSERT_TRUE(find_op(d, true, other));
  EXPECT_EQ(find_op(d, true, other)->rank, 5);
  EXPECT_EQ(find_op(d, true, other)->seq, 11u);
  EXPECT_EQ(find_op(d, true, kComm)->rank, 3);
  EXPECT_EQ(find_op(d, true, other)->process, find_op(d, true, kComm)->process);
}

// P2P in 2.24-2.26: the P2P event and its proxy op are both named "Send"; the category tells
// them apart, also when the proxy op's end line is missing.
TEST(TraceLayouts, OldLayoutP2pAndProxyOpOfTheSameName) {
  auto p2p = [](bool drop_proxy_end) {
    Trace t;
    t.b("Group", "GROUP", 0, 99, "\"groupId\": 0");
    t.b("Send", "P2P", 0, 100,
        "\"CommHash\": " + std::to_string(kComm) + ", \"Rank\": 1, \"Peer\": 9, \"Count\": 1024, \"Datatype\": \"ncclFloat32\"");
    t.b("Send", "PROXY", 0, 101, old_op_args(true, 17, 9, 1, 4096));
    old_send_step(t, 0, 0, 102, 110, 130);
    if (!drop_proxy_end) t.e("Send", "PROXY", 0, 131);
    t.e("Send", "P2P", 0, 132);
    t.e("Group", "GROUP", 0, 133);
    return read(t.str());
  };
  LocalData d = p2p(false);
  ASSERT_EQ(d.ops.size(), 1u);
  EXPECT_EQ(d.ops[0].is_p2p, 1);
  EXPECT_EQ(d.ops[0].channel, 17);
  EXPECT_EQ(d.ops[0].peer, 9);
  EXPECT_EQ(d.ops[0].seq, 0u);  // first Send of rank 1 to peer 9
  EXPECT_EQ(d.ops[0].phase_ns[kSendGpuWait], 8000u);
  EXPECT_EQ(d.inputs[0].rejected, 0u);
  LocalData cut = p2p(true);
  EXPECT_TRUE(cut.ops.empty());
  EXPECT_EQ(reason(cut, "unterminated proxy op"), 1u);
  EXPECT_EQ(reason(cut, "end without matching begin"), 0u);
}

// ---- defects in the old layout ----------------------------------------------------------

// Defect 4: a reused step slot keeps the previous occupant's timestamps.
TEST(TraceLayouts, OldLayoutStaleStepIsRejected) {
  std::string t = old_trace(Old::k224);
  // Step 1 of the send never got its GPUWait/SendWait states: the slot's stale times.
  std::string from = "{\"name\": \"SendGpuWait\", \"cat\": \"NET\", \"ph\": \"b\", \"id\": 1, \"pid\": 4242, \"tid\": 1, \"ts\": 140.000000";
  ASSERT_NE(t.find(from), std::string::npos);
  t.replace(t.find(from), from.size(), "{\"name\": \"SendGpuWait\", \"cat\": \"NET\", \"ph\": \"b\", \"id\": 1, \"pid\": 4242, \"tid\": 1, \"ts\": 40.000000");
  LocalData d = read(t);
  const ProxyOpRecord* send = find_op(d, true);
  ASSERT_TRUE(send);
  EXPECT_EQ(send->steps, 1u);
  EXPECT_EQ(send->phase_ns[kSendGpuWait], 15000u);
  EXPECT_EQ(reason(d, "step with stale or non-increasing timestamps"), 1u);
}

// Defect 4: a receive whose irecv was retried starts a new step event each time; the
// abandoned ones never get their states and keep their slot's previous times: zeros, or the
// times of an older step of the same op (inside the op, but before the attempt started).
TEST(TraceLayouts, OldLayoutRetriedReceiveDuplicatesAreDropped) {
  Trace t;
  t.b("Group", "GROUP", 0, 99, "\"groupId\": 0");
  t.b("AllReduce", "COLL", 0, 100,
      "\"SeqNum\": 7, \"CommHash\": " + std::to_string(kComm) +
          ", \"Rank\": 3, \"Count\": 1024, \"Datatype\": \"ncclFloat32\", \"Algorithm\": \"Ring\", \"Protocol\": \"Simple\", \"nMaxChannels\": 1");
  t.b("Recv", "PROXY", 0, 102, old_op_args(false, 0, 2, 1, 4096));
  old_recv_step(t, 0, 0, 104, 0, 0, 0, 0);           // abandoned: a fresh slot (zeros)
  old_recv_step(t, 1, 0, 130, 110, 140, 141, 145);   // abandoned: an older step's times
  old_recv_step(t, 2, 0, 131, 132, 150, 151, 155);   // the attempt that went through
  t.e("Recv", "PROXY", 0, 160);
  t.e("AllReduce", "COLL", 0, 171);
  t.e("Group", "GROUP", 0, 172);
  LocalData d = read(t.str());
  ASSERT_EQ(d.ops.size(), 1u);
  EXPECT_EQ(d.ops[0].steps, 1u);
  EXPECT_EQ(d.ops[0].phase_ns[kRecvWait], 18000u);
  EXPECT_EQ(d.ops[0].phase_ns[kRecvGpuWait], 4000u);
  EXPECT_EQ(reason(d, "step with stale or non-increasing timestamps"), 2u);
  EXPECT_EQ(reason(d, "duplicate step (retried receive)"), 0u);
}

// Defect 5: only the last 16 steps survive, printed in slot order (step % 16).
TEST(TraceLayouts, OldLayoutWrappedStepRing) {
  Trace t;
  t.b("Group", "GROUP", 0, 99, "\"groupId\": 0");
  t.b("AllReduce", "COLL", 0, 100,
      "\"SeqNum\": 7, \"CommHash\": " + std::to_string(kComm) +
          ", \"Rank\": 3, \"Count\": 1024, \"Datatype\": \"ncclFloat32\", \"Algorithm\": \"Ring\", \"Protocol\": \"Simple\", \"nMaxChannels\": 1");
  t.b("Send", "PROXY", 0, 101, old_op_args(true, 0, 4, 18, 18 * 4096));
  for (int slot = 0; slot < 16; ++slot) {
    int step = slot < 2 ? 16 + slot : slot;  // steps 16, 17 overwrote slots 0, 1
    double post = 110 + step * 10;
    old_send_step(t, slot, step, post, post + 2, post + 7);
  }
  t.e("Send", "PROXY", 0, 300);
  t.e("AllReduce", "COLL", 0, 301);
  t.e("Group", "GROUP", 0, 302);
  LocalData d = read(t.str());
  ASSERT_EQ(d.ops.size(), 1u);
  EXPECT_EQ(d.ops[0].steps, 16u);
  EXPECT_EQ(d.ops[0].phase_ns[kSendGpuWait], 16u * 2000u);
  EXPECT_EQ(d.ops[0].phase_ns[kSendWait], 16u * 5000u);
  EXPECT_EQ(d.ops[0].bytes, 18u * 4096u);
  EXPECT_EQ(d.inputs[0].rejected, 0u);
}

// Defect 6: transSize inflated by the reuse of the pool slot is bounded by Steps x ChunkSize.
TEST(TraceLayouts, OldLayoutInflatedTransSize) {
  LocalData d = read(old_trace(Old::k224, 7, 999999999));
  ASSERT_EQ(d.ops.size(), 2u);
  EXPECT_EQ(d.ops[0].bytes, 8192u);
  EXPECT_EQ(d.ops[1].bytes, 8192u);
}

// Defect 7: a receive step without its end (stop time 0, or the stale stop of the slot's
// previous occupant): the phases before it count, the unfinished last one does not.
TEST(TraceLayouts, OldLayoutReceiveStepWithoutItsEnd) {
  for (double stop : {0.0, 20.0}) {
    std::string t = old_trace(Old::k224);
    std::string from = "{\"name\": \"RecvGpuWait\", \"cat\": \"NET\", \"ph\": \"e\", \"id\": 3, \"pid\": 4242, \"tid\": 1, \"ts\": 154.000000}";
    ASSERT_NE(t.find(from), std::string::npos);
    char to[200];
    std::snprintf(to, sizeof to, "{\"name\": \"RecvGpuWait\", \"cat\": \"NET\", \"ph\": \"e\", \"id\": 3, \"pid\": 4242, \"tid\": 1, \"ts\": %f}", stop);
    t.replace(t.find(from), from.size(), to);
    LocalData d = read(t);
    const ProxyOpRecord* recv = find_op(d, false);
    ASSERT_TRUE(recv);
    EXPECT_EQ(recv->steps, 2u);
    EXPECT_EQ(recv->phase_ns[kRecvWait], 70000u);
    EXPECT_EQ(recv->phase_ns[kRecvFlushWait], 2000u);
    EXPECT_EQ(recv->phase_ns[kRecvGpuWait], 4000u);  // step 1's 2us are unknown
    EXPECT_EQ(reason(d, "receive step without its end (last phase not counted)"), 1u);
  }
}

// Defect 7 variant: a receive step that only got as far as its irecv (RecvWait's end is
// the slot's stale FlushWait time) has nothing to count and is rejected.
TEST(TraceLayouts, OldLayoutReceiveStepWithOnlyItsStart) {
  std::string t = old_trace(Old::k224);
  for (const char* ts : {"151.000000}", "152.000000}", "154.000000}"}) {
    std::string end = std::string("\"id\": 3, \"pid\": 4242, \"tid\": 1, \"ts\": ") + ts;
    ASSERT_NE(t.find(end), std::string::npos);
    t.replace(t.find(end), end.size(), "\"id\": 3, \"pid\": 4242, \"tid\": 1, \"ts\": 0.000000}");
  }
  for (const char* ts : {"151.000000,", "152.000000,"}) {
    std::string begin = std::string("\"id\": 3, \"pid\": 4242, \"tid\": 1, \"ts\": ") + ts;
    ASSERT_NE(t.find(begin), std::string::npos);
    t.replace(t.find(begin), begin.size(), "\"id\": 3, \"pid\": 4242, \"tid\": 1, \"ts\": 0.000000,");
  }
  LocalData d = read(t);
  const ProxyOpRecord* recv = find_op(d, false);
  ASSERT_TRUE(recv);
  EXPECT_EQ(recv->steps, 1u);
  EXPECT_EQ(recv->phase_ns[kRecvWait], 30000u);
  EXPECT_EQ(reason(d, "step with stale or non-increasing timestamps"), 1u);
}

// Defect 8: the PXN ops of other processes come at top level after everything else in the
// file of the last thread to finalize.
TEST(TraceLayouts, OldLayoutTopLevelPxnOps) {
  std::string t = old_trace(Old::k224);
  Trace pxn;
  pxn.b("Send", "PROXY", 5, 200, old_op_args(true, 1, 6, 1, 4096));
  old_send_step(pxn, 9, 0, 201, 202, 205);
  pxn.e("Send", "PROXY", 5, 206);
  t.insert(t.rfind("{}]"), pxn.unterminated().substr(2));
  LocalData d = read(t);
  EXPECT_EQ(d.ops.size(), 2u);
  EXPECT_EQ(reason(d, "proxy op outside any collective (PXN op of another process)"), 1u);
}

// Defect 9: a curly quote in place of a plain one.
TEST(TraceLayouts, OldLayoutCurlyQuotes) {
  std::string t = old_trace(Old::k224);
  std::string from = "{\"name\": \"RecvWait\", \"cat\": \"NET\", \"ph\": \"b\", \"id\": 2,";
  ASSERT_NE(t.find(from), std::string::npos);
  t.replace(t.find(from), from.size(), "{\xE2\x80\x9Cname\": \"RecvWait\", \"cat\": \"NET\", \"ph\": \"b\", \"id\": 2,");
  LocalData d = read(t);
  expect_old_phases(d);
  EXPECT_EQ(d.inputs[0].rejected, 0u);
}

// An op still in flight when the file was written keeps a stale (earlier) stop time.
TEST(TraceLayouts, OpWithoutItsEndIsCountedNotUsed) {
  std::string t = old_trace(Old::k224);
  std::string from = "{\"name\": \"Send\", \"cat\": \"PROXY\", \"ph\": \"e\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 165.000000}";
  ASSERT_NE(t.find(from), std::string::npos);
  t.replace(t.find(from), from.size(), "{\"name\": \"Send\", \"cat\": \"PROXY\", \"ph\": \"e\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 0.000000}");
  LocalData d = read(t);
  EXPECT_EQ(d.ops.size(), 1u);
  EXPECT_EQ(reason(d, "proxy op without its end (in flight when the trace was written)"), 1u);
}

TEST(TraceLayouts, TruncatedOldLayoutFileIsMarked) {
  std::string t = old_trace(Old::k224);
  t = t.substr(0, t.find("{\"name\": \"Recv\", \"cat\": \"PROXY\", \"ph\": \"e\""));
  LocalData d = read(t);
  ASSERT_EQ(d.ops.size(), 1u);
  EXPECT_TRUE(d.inputs[0].truncated);
  ASSERT_EQ(d.comm_ranks.size(), 1u);
  EXPECT_TRUE(d.comm_ranks[0].cut_short);
}

// Every line of every layout also parses without the fast path's exact spacing (tabs,
// extra spaces, keys reordered by a JSON tool): the general scanner gives the same result.
TEST(TraceLayouts, ReformattedLinesGiveTheSameRecords) {
  std::string t = old_trace(Old::k224);
  std::string spaced;
  for (char c : t) {
    spaced.push_back(c);
    if (c == ':') spaced += "  ";
    if (c == ',') spaced += "\t";
  }
  LocalData a = read(t), b = read(spaced);
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i)
    for (int p = 0; p < kPhaseCount; ++p) EXPECT_EQ(a.ops[i].phase_ns[p], b.ops[i].phase_ns[p]);
  EXPECT_EQ(b.inputs[0].rejected, 0u);
}

}  // namespace
}  // namespace culprit
