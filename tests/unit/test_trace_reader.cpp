// The NCCL 2.27+ trace reader on hand-written lines in the real layout, including the
// known defects of real files (FORMATS.md §2).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/discover.hpp"
#include "io/nccl_trace_reader.hpp"
#include "io/trace_line.hpp"

namespace culprit {
namespace {

// One AllReduce with one receive op and one send op on channel 0, two steps each.
// Times in microseconds. The phases of step 0 of the send: GpuWait 10us, PeerWait 5us,
// SendWait 20us; of step 1: 2, 1, 20. Receive steps: RecvWait 30, Flush 1, GpuWait 4 and
// RecvWait 40, Flush 1, GpuWait 2.
const char* kGoodTrace = R"([
{"name": "AllReduce", "cat": "COLL", "ph": "b", "id": 0, "pid": 4242, "tid": 1, "ts": 100.000000, "args": {"SeqNum": 7, "CommHash": 12715772615376301750, "Rank": 3, "Count": 1024, "Datatype": "ncclFloat32", "Algorithm": "RING", "Protocol": "SIMPLE", "nChannels": 1}},
{"name": "KernelCh", "cat": "GPU", "ph": "b", "id": 0, "pid": 4242, "tid": 1, "ts": 101.000000, "args": {"Channel": 0, "StartGpuClk": 1765223116927674080, "StopGpuClk": 1765223116927774080}},
{"name": "ScheduleRecv", "cat": "PROXY", "ph": "b", "id": 0, "pid": 4242, "tid": 1, "ts": 102.000000, "args": {"Channel": 0, "Peer": 2, "Steps": 2, "ChunkSize": 4096, "transSize": 8192}},
{"name": "ScheduleRecv", "cat": "PROXY", "ph": "e", "id": 0, "pid": 4242, "tid": 1, "ts": 103.000000},
{"name": "ProgressRecv", "cat": "PROXY", "ph": "b", "id": 0, "pid": 4242, "tid": 1, "ts": 103.000000, "args": {"Channel": 0, "Peer": 2, "Steps": 2, "ChunkSize": 4096, "transSize": 8192}},
{"name": "RecvWait", "cat": "NET", "ph": "b", "id": 0, "pid": 4242, "tid": 1, "ts": 110.000000, "args": {"Step": 0}},
{"name": "RecvWait", "cat": "NET", "ph": "e", "id": 0, "pid": 4242, "tid": 1, "ts": 140.000000},
{"name": "RecvFlushWait", "cat": "NET", "ph": "b", "id": 0, "pid": 4242, "tid": 1, "ts": 140.000000, "args": {"Step": 0}},
{"name": "RecvFlushWait", "cat": "NET", "ph": "e", "id": 0, "pid": 4242, "tid": 1, "ts": 141.000000},
{"name": "RecvGpuWait", "cat": "NET", "ph": "b", "id": 0, "pid": 4242, "tid": 1, "ts": 141.000000, "args": {"Step": 0}},
{"name": "RecvGpuWait", "cat": "NET", "ph": "e", "id": 0, "pid": 4242, "tid": 1, "ts": 145.000000},
{"name": "RecvWait", "cat": "NET", "ph": "b", "id": 1, "pid": 4242, "tid": 1, "ts": 111.000000, "args": {"Step": 1}},
{"name": "Qp", "cat": "NET_IB", "ph": "b", "id": 0, "pid": 4242, "tid": 1, "ts": 120.000000, "args": {"device": 0, "qp_num": 77, "opcode": 0, "wr_id": 5, "size": 4096}},
{"name": "Qp", "cat": "NET_IB", "ph": "e", "id": 0, "pid": 4242, "tid": 1, "ts": 121.000000},
{"name": "RecvWait", "cat": "NET", "ph": "e", "id": 1, "pid": 4242, "tid": 1, "ts": 151.000000},
{"name": "RecvFlushWait", "cat": "NET", "ph": "b", "id": 1, "pid": 4242, "tid": 1, "ts": 151.000000, "args": {"Step": 1}},
{"name": "RecvFlushWait", "cat": "NET", "ph": "e", "id": 1, "pid": 4242, "tid": 1, "ts": 152.000000},
{"name": "RecvGpuWait", "cat": "NET", "ph": "b", "id": 1, "pid": 4242, "tid": 1, "ts": 152.000000, "args": {"Step": 1}},
{"name": "RecvGpuWait", "cat": "NET", "ph": "e", "id": 1, "pid": 4242, "tid": 1, "ts": 154.000000},
{"name": "ProgressRecv", "cat": "PROXY", "ph": "e", "id": 0, "pid": 4242, "tid": 1, "ts": 160.000000},
{"name": "ScheduleSend", "cat": "PROXY", "ph": "b", "id": 1, "pid": 4242, "tid": 1, "ts": 102.000000, "args": {"Channel": 0, "Peer": 4, "Steps": 2, "ChunkSize": 4096, "transSize": 8192}},
{"name": "ScheduleSend", "cat": "PROXY", "ph": "e", "id": 1, "pid": 4242, "tid": 1, "ts": 103.000000},
{"name": "ProgressSend", "cat": "PROXY", "ph": "b", "id": 1, "pid": 4242, "tid": 1, "ts": 103.000000, "args": {"Channel": 0, "Peer": 4, "Steps": 2, "ChunkSize": 4096, "transSize": 8192}},
{"name": "SendGpuWait", "cat": "NET", "ph": "b", "id": 2, "pid": 4242, "tid": 1, "ts": 105.000000, "args": {"Step": 0}},
{"name": "SendGpuWait", "cat": "NET", "ph": "e", "id": 2, "pid": 4242, "tid": 1, "ts": 115.000000},
{"name": "SendPeerWait", "cat": "NET", "ph": "b", "id": 2, "pid": 4242, "tid": 1, "ts": 115.000000, "args": {"Step": 0}},
{"name": "SendPeerWait", "cat": "NET", "ph": "e", "id": 2, "pid": 4242, "tid": 1, "ts": 120.000000},
{"name": "SendWait", "cat": "NET", "ph": "b", "id": 2, "pid": 4242, "tid": 1, "ts": 120.000000, "args": {"Step": 0}},
{"name": "SendWait", "cat": "NET", "ph": "e", "id": 2, "pid": 4242, "tid": 1, "ts": 140.000000},
{"name": "SendGpuWait", "cat": "NET", "ph": "b", "id": 3, "pid": 4242, "tid": 1, "ts": 140.000000, "args": {"Step": 1}},
{"name": "SendGpuWait", "cat": "NET", "ph": "e", "id": 3, "pid": 4242, "tid": 1, "ts": 142.000000},
{"name": "SendPeerWait", "cat": "NET", "ph": "b", "id": 3, "pid": 4242, "tid": 1, "ts": 142.000000, "args": {"Step": 1}},
{"name": "SendPeerWait", "cat": "NET", "ph": "e", "id": 3, "pid": 4242, "tid": 1, "ts": 143.000000},
{"name": "SendWait", "cat": "NET", "ph": "b", "id": 3, "pid": 4242, "tid": 1, "ts": 143.000000, "args": {"Step": 1}},
{"name": "SendWait", "cat": "NET", "ph": "e", "id": 3, "pid": 4242, "tid": 1, "ts": 163.000000},
{"name": "ProgressSend", "cat": "PROXY", "ph": "e", "id": 1, "pid": 4242, "tid": 1, "ts": 165.000000},
{"name": "KernelCh", "cat": "GPU", "ph": "e", "id": 0, "pid": 4242, "tid": 1, "ts": 170.000000},
{"name": "AllReduce", "cat": "COLL", "ph": "e", "id": 0, "pid": 4242, "tid": 1, "ts": 171.000000},
{}]
)";

LocalData read(const std::string& text, const std::string& name = "t.json") {
  LocalData data;
  read_nccl_trace_buffer(text, name, "hostA", data);
  return data;
}

const ProxyOpRecord* find_op(const LocalData& d, bool is_send) {
  for (const ProxyOpRecord& r : d.ops)
    if (r.is_send == (is_send ? 1 : 0)) return &r;
  return nullptr;
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(TraceLine, ParsesBareTokensAndExactMicroseconds) {
  TraceLine ev;
  std::string scratch;
  ASSERT_TRUE(parse_trace_line(
      R"({"name": "Send", "cat": "P2P_API", "ph": "b", "id": 0, "pid": 3937375, "tid": 1, "ts": 0.000000, "args": {"count": 268435456, "datatype": ncclFloat32, "GraphCaptured":0, "Stream": 0x4142e90}},)",
      ev, scratch));
  EXPECT_EQ(ev.name, "Send");
  EXPECT_EQ(ev.pid, 3937375);
  EXPECT_EQ(ev.arg("datatype"), "ncclFloat32");
  EXPECT_EQ(ev.arg("GraphCaptured"), "0");
  EXPECT_EQ(ev.arg("Stream"), "0x4142e90");
  int64_t ns = 0;
  ASSERT_TRUE(parse_us_to_ns("1467846.533691", &ns));
  EXPECT_EQ(ns, 1467846533);  // digits past the nanosecond are dropped
  ASSERT_TRUE(parse_us_to_ns("12.5", &ns));
  EXPECT_EQ(ns, 12500);
  EXPECT_FALSE(parse_us_to_ns("-3.0", &ns));
}

TEST(TraceLine, ANulPhaseIsNoEvent) {
  // Found by fuzz_trace_line: a NUL byte as the phase letter passed the fast path.
  TraceLine ev;
  std::string scratch;
  const std::string line = std::string(R"({"name": "Idle", "cat": "PROXY", "ph": ")") + '\0' +
                           R"(", "id": 0, "pid": 4242, "tid": 1, "ts": 11.000000},)";
  EXPECT_FALSE(parse_trace_line(line, ev, scratch));
}

TEST(TraceReader, SumsPhasesPerProxyOp) {
  LocalData d = read(kGoodTrace);
  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_EQ(d.inputs[0].error, "");
  EXPECT_EQ(d.inputs[0].rejected, 0u);
  ASSERT_EQ(d.ops.size(), 2u);
  const ProxyOpRecord* send = find_op(d, true);
  const ProxyOpRecord* recv = find_op(d, false);
  ASSERT_TRUE(send && recv);
  EXPECT_EQ(send->comm_hash, 12715772615376301750ull);  // above 2^63
  EXPECT_EQ(send->seq, 7u);
  EXPECT_EQ(send->rank, 3);
  EXPECT_EQ(send->peer, 4);
  EXPECT_EQ(send->channel, 0);
  EXPECT_EQ(send->steps, 2u);
  EXPECT_EQ(send->phase_ns[kSendGpuWait], 12000u);
  EXPECT_EQ(send->phase_ns[kSendPeerWait], 6000u);
  EXPECT_EQ(send->phase_ns[kSendWait], 40000u);
  EXPECT_EQ(send->bytes, 8192u);
  // Wire time after the first completion (140us): step 1's SendWait, 143-163us.
  EXPECT_EQ(send->wire_steps, 1u);
  EXPECT_EQ(send->send_wire_busy_ns, 20000u);
  EXPECT_EQ(send->wire_queued_steps, 0u);  // step 1 found the wire idle
  EXPECT_EQ(send->send_wait_min_ns, 20000u);
  EXPECT_EQ(recv->wire_steps, 0u);
  EXPECT_EQ(recv->send_wait_min_ns, 0u);
  EXPECT_EQ(recv->peer, 2);
  EXPECT_EQ(recv->phase_ns[kRecvWait], 70000u);
  EXPECT_EQ(recv->phase_ns[kRecvFlushWait], 2000u);
  EXPECT_EQ(recv->phase_ns[kRecvGpuWait], 6000u);
  // Its shortest single-step RecvGpuWait: step 1's, 152-154us (step 0 took 4us).
  EXPECT_TRUE(recv->has_recv_gpu_wait_min);
  EXPECT_EQ(recv->recv_gpu_wait_min_ns, 2000u);
  EXPECT_FALSE(send->has_recv_gpu_wait_min);
  EXPECT_EQ(recv->phase_ns[kSendWait], 0u);
  ASSERT_EQ(d.processes.size(), 1u);
  EXPECT_EQ(d.processes[0].host, "hostA");
  EXPECT_EQ(d.processes[0].pid, 4242);
  ASSERT_EQ(d.comm_ranks.size(), 1u);
  EXPECT_EQ(d.comm_ranks[0].newest_seq, 7u);
  ASSERT_EQ(d.kernel_starts.size(), 1u);
  EXPECT_EQ(d.kernel_starts[0].start_gpu_clk_ns, 1765223116927674080ull);
  EXPECT_EQ(d.kernel_starts[0].is_p2p, 0u);
  EXPECT_EQ(d.kernel_starts[0].tree, 0u);  // RING
}

// A tree's kernels stop in the order of the node's chain (pipeline/chain_places.hpp), a ring's
// do not: the reader keeps which algorithm ran, under NCCL's name and the example profiler's.
TEST(TraceReader, KernelOfATreeCollectiveIsMarked) {
  for (const char* name : {"TREE", "Tree"}) {
    std::string text = kGoodTrace;
    const size_t at = text.find("\"RING\"");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 6, std::string("\"") + name + "\"");
    LocalData d = read(text);
    ASSERT_EQ(d.kernel_starts.size(), 1u);
    EXPECT_EQ(d.kernel_starts[0].tree, 1u) << name;
  }
  EXPECT_FALSE(names_tree_algorithm("NVLS_TREE"));
  EXPECT_FALSE(names_tree_algorithm(""));
}

// A host that runs ahead: the receive's data lands before the kernel reaches the collective,
// and the GPU consumes it only from then on. RecvGpuWait counts from the kernel's start on its
// channel (its KernelCh ts), not from the data's landing.
TEST(TraceReader, RecvGpuWaitBeginsNoEarlierThanItsChannelsKernel) {
  const std::string kernel_at_101 =
      R"({"name": "KernelCh", "cat": "GPU", "ph": "b", "id": 0, "pid": 4242, "tid": 1, "ts": 101.000000)";
  const std::string kernel_at_143 =
      R"({"name": "KernelCh", "cat": "GPU", "ph": "b", "id": 0, "pid": 4242, "tid": 1, "ts": 143.000000)";
  LocalData d = read(replace(kGoodTrace, kernel_at_101, kernel_at_143));
  const ProxyOpRecord* recv = find_op(d, false);
  ASSERT_TRUE(recv);
  // Step 0 landed at 141 us, two before the kernel started, and was consumed by 145: two
  // microseconds of it count. Step 1 (152-154) landed after the start: all of it.
  EXPECT_EQ(recv->phase_ns[kRecvGpuWait], 4000u);
  EXPECT_EQ(recv->recv_gpu_wait_min_ns, 2000u);
  EXPECT_EQ(recv->phase_ns[kRecvWait], 70000u);  // the other phases as recorded
  EXPECT_EQ(find_op(d, true)->phase_ns[kSendGpuWait], 12000u);
  // A kernel of another channel does not bound this one's.
  d = read(replace(replace(kGoodTrace, kernel_at_101, kernel_at_143), R"("args": {"Channel": 0, "StartGpuClk")",
                   R"("args": {"Channel": 1, "StartGpuClk")"));
  EXPECT_EQ(find_op(d, false)->phase_ns[kRecvGpuWait], 6000u);
}

// Sends queued behind each other overlap: the wire time counts each moment once, from the
// first completion on, so a backlog queued before it is left out.
TEST(TraceReader, WireTimeOfQueuedSendsIsTheirUnionAfterTheFirstCompletion) {
  std::string trace = kGoodTrace;
  // Step 1 queued behind step 0: its SendWait starts at 125us, before step 0 completes.
  auto move = [&](const std::string& line_start, const std::string& from, const std::string& to) {
    size_t line = trace.find(line_start);
    ASSERT_NE(line, std::string::npos) << line_start;
    size_t pos = trace.find(from, line);
    ASSERT_NE(pos, std::string::npos) << from;
    trace.replace(pos, from.size(), to);
  };
  const std::string b1 = R"("ph": "b", "id": 3, "pid": 4242, "tid": 1, "ts": )";
  const std::string e1 = R"("ph": "e", "id": 3, "pid": 4242, "tid": 1, "ts": )";
  move(R"({"name": "SendGpuWait", "cat": "NET", )" + b1, "140.000000", "121.000000");
  move(R"({"name": "SendGpuWait", "cat": "NET", )" + e1, "142.000000", "122.000000");
  move(R"({"name": "SendPeerWait", "cat": "NET", )" + b1, "142.000000", "122.000000");
  move(R"({"name": "SendPeerWait", "cat": "NET", )" + e1, "143.000000", "125.000000");
  move(R"({"name": "SendWait", "cat": "NET", )" + b1, "143.000000", "125.000000");
  LocalData d = read(trace.c_str());
  const ProxyOpRecord* send = find_op(d, true);
  ASSERT_TRUE(send);
  EXPECT_EQ(d.inputs[0].rejected, 0u);
  EXPECT_EQ(send->steps, 2u);
  EXPECT_EQ(send->phase_ns[kSendWait], 20000u + 38000u);  // 120-140 and 125-163
  EXPECT_EQ(send->wire_steps, 1u);
  EXPECT_EQ(send->send_wire_busy_ns, 23000u);  // 140-163: one transfer after the first
  EXPECT_EQ(send->wire_queued_steps, 1u);       // step 1 began before step 0 completed
  EXPECT_EQ(send->send_wait_min_ns, 20000u);
}

// Defect 1 (2.28-2.29.2): unquoted values and "GraphCaptured":0 inside API wrappers, and
// defect 2: API-level events with "b" ts 0.
TEST(TraceReader, Defect1And2InvalidJsonWrappersAreRead) {
  std::string t = kGoodTrace;
  t = replace(t, "[\n", "[\n{\"name\": \"Group API\", \"cat\": \"GROUP_API\", \"ph\": \"b\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 99.0, \"args\": {\"groupApiId\": 0, \"groupDepth\":2}},\n"
                       "{\"name\": \"AllReduce\", \"cat\": \"COLL_API\", \"ph\": \"b\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 0.000000, \"args\": {\"count\": 1024, \"datatype\": ncclFloat32, \"root\": 0, \"GraphCaptured\":0, \"Stream\": (nil)}},\n");
  t = replace(t, "{}]", "{\"name\": \"AllReduce\", \"cat\": \"COLL_API\", \"ph\": \"e\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 172.0},\n"
                        "{\"name\": \"Group API\", \"cat\": \"GROUP_API\", \"ph\": \"e\", \"id\": 0, \"pid\": 4242, \"tid\": 1, \"ts\": 173.0},\n{}]");
  LocalData d = read(t);
  EXPECT_EQ(d.inputs[0].rejected, 0u);
  EXPECT_EQ(d.ops.size(), 2u);
}

// Defect 3 (2.28+): KernelCh with StopGpuClk 0 and an "e" at ts 0 is harmless.
TEST(TraceReader, Defect3KernelChWithZeroStop) {
  std::string t = replace(kGoodTrace, "\"StopGpuClk\": 1765223116927774080", "\"StopGpuClk\": 0");
  t = replace(t, R"({"name": "KernelCh", "cat": "GPU", "ph": "e", "id": 0, "pid": 4242, "tid": 1, "ts": 170.000000})",
              R"({"name": "KernelCh", "cat": "GPU", "ph": "e", "id": 0, "pid": 4242, "tid": 1, "ts": 0.000000})");
  LocalData d = read(t);
  EXPECT_EQ(d.ops.size(), 2u);
  EXPECT_EQ(d.kernel_starts.size(), 1u);
  EXPECT_TRUE(d.channel_stops.empty());  // no stop of its own recorded
  EXPECT_EQ(d.inputs[0].rejected, 0u);
}

// Each channel's own stop is kept: a tree's channels chain the node's GPUs each in its own order
// (pipeline/chain_places.hpp).
TEST(TraceReader, EachChannelsStopIsKept) {
  const LocalData d = read(kGoodTrace);
  ASSERT_EQ(d.channel_stops.size(), 1u);
  EXPECT_EQ(d.channel_stops[0].channel, 0);
  EXPECT_EQ(d.channel_stops[0].stop_gpu_clk_ns, 1765223116927774080ull);
  EXPECT_EQ(d.channel_stops[0].rank, d.kernel_starts[0].rank);
  EXPECT_EQ(d.channel_stops[0].seq, d.kernel_starts[0].seq);
  EXPECT_EQ(d.channel_stops[0].comm_hash, d.kernel_starts[0].comm_hash);
}

// Defect 4: a reused step slot with stale timestamps (before its op began) is rejected and
// counted; a duplicate Step of a retried receive is counted once.
TEST(TraceReader, Defect4StaleAndDuplicateStepsAreRejected) {
  std::string stale = replace(kGoodTrace,
      R"({"name": "SendGpuWait", "cat": "NET", "ph": "b", "id": 3, "pid": 4242, "tid": 1, "ts": 140.000000, "args": {"Step": 1}},)",
      R"({"name": "SendGpuWait", "cat": "NET", "ph": "b", "id": 3, "pid": 4242, "tid": 1, "ts": 40.000000, "args": {"Step": 1}},)");
  LocalData d = read(stale);
  const ProxyOpRecord* send = find_op(d, true);
  ASSERT_TRUE(send);
  EXPECT_EQ(send->steps, 1u);
  EXPECT_EQ(send->phase_ns[kSendGpuWait], 10000u);
  EXPECT_EQ(d.inputs[0].rejected, 1u);
  EXPECT_EQ(d.inputs[0].reject_reasons.count("step with stale or non-increasing timestamps"), 1u);

  std::string dup = kGoodTrace;
  for (const char* ts : {"111", "151", "152"})
    dup = replace(dup, std::string("\"ts\": ") + ts + ".000000, \"args\": {\"Step\": 1}}",
                  std::string("\"ts\": ") + ts + ".000000, \"args\": {\"Step\": 0}}");
  LocalData d2 = read(dup);
  const ProxyOpRecord* recv = find_op(d2, false);
  ASSERT_TRUE(recv);
  EXPECT_EQ(recv->steps, 1u);
  // The copy that begins last is the real attempt (an abandoned attempt keeps its slot's
  // older times): the second copy here, RecvWait 111 -> 151.
  EXPECT_EQ(recv->phase_ns[kRecvWait], 40000u);
  EXPECT_EQ(recv->phase_ns[kRecvGpuWait], 2000u);
  EXPECT_EQ(d2.inputs[0].reject_reasons.count("duplicate step (retried receive)"), 1u);

  // The same when the slots are printed the other way round (the ring of slots wrapped).
  const std::string first_step = dup.substr(dup.find(R"({"name": "RecvWait", "cat": "NET", "ph": "b", "id": 0,)"),
                                            dup.find(R"({"name": "RecvWait", "cat": "NET", "ph": "b", "id": 1,)") -
                                                dup.find(R"({"name": "RecvWait", "cat": "NET", "ph": "b", "id": 0,)"));
  std::string swapped = dup;
  swapped.erase(swapped.find(first_step), first_step.size());
  swapped.insert(swapped.find(R"({"name": "ProgressRecv", "cat": "PROXY", "ph": "e")"), first_step);
  LocalData d3 = read(swapped);
  ASSERT_TRUE(find_op(d3, false));
  EXPECT_EQ(find_op(d3, false)->phase_ns[kRecvWait], 40000u);
}

// Defect 5: only the last steps of a long op survive, printed in slot order (wrapped).
TEST(TraceReader, Defect5WrappedStepRingIsSummedOverSurvivingSteps) {
  // Steps 28 announced, only steps 27 (slot 11) and 16 (slot 0) survive, printed in slot order.
  std::string t = kGoodTrace;
  for (const char* ts : {"105", "115", "120"})
    t = replace(t, std::string("\"ts\": ") + ts + ".000000, \"args\": {\"Step\": 0}}",
                std::string("\"ts\": ") + ts + ".000000, \"args\": {\"Step\": 16}}");
  for (const char* ts : {"140", "142", "143"})
    t = replace(t, std::string("\"ts\": ") + ts + ".000000, \"args\": {\"Step\": 1}}",
                std::string("\"ts\": ") + ts + ".000000, \"args\": {\"Step\": 27}}");
  t = replace(t, "\"Peer\": 4, \"Steps\": 2", "\"Peer\": 4, \"Steps\": 28");
  t = replace(t, "\"Peer\": 4, \"Steps\": 2", "\"Peer\": 4, \"Steps\": 28");
  LocalData d = read(t);
  const ProxyOpRecord* send = find_op(d, true);
  ASSERT_TRUE(send);
  EXPECT_EQ(send->steps, 2u);
  EXPECT_EQ(send->phase_ns[kSendWait], 40000u);
  EXPECT_EQ(send->bytes, 8192u);
  EXPECT_EQ(d.inputs[0].rejected, 0u);
}

// Defect 6: transSize inflated by slot reuse is bounded by Steps x ChunkSize.
TEST(TraceReader, Defect6InflatedTransSizeIsBounded) {
  std::string t = kGoodTrace;
  for (int i = 0; i < 4; ++i) t = replace(t, "\"transSize\": 8192", "\"transSize\": 999999999");
  LocalData d = read(t);
  ASSERT_EQ(d.ops.size(), 2u);
  EXPECT_EQ(d.ops[0].bytes, 8192u);
  EXPECT_EQ(d.ops[1].bytes, 8192u);
}

// Defect 8: a PXN op of another process at top level, outside any collective, is counted
// and the rest is kept.
TEST(TraceReader, Defect8TopLevelPxnOpIsRejected) {
  std::string t = replace(kGoodTrace, "{}]",
      "{\"name\": \"ProgressSend\", \"cat\": \"PROXY\", \"ph\": \"b\", \"id\": 9, \"pid\": 4242, \"tid\": 1, \"ts\": 200.0, \"args\": {\"Channel\": 1, \"Peer\": 5, \"Steps\": 1, \"ChunkSize\": 4096, \"transSize\": 4096}},\n"
      "{\"name\": \"SendGpuWait\", \"cat\": \"NET\", \"ph\": \"b\", \"id\": 9, \"pid\": 4242, \"tid\": 1, \"ts\": 201.0, \"args\": {\"Step\": 0}},\n"
      "{\"name\": \"SendGpuWait\", \"cat\": \"NET\", \"ph\": \"e\", \"id\": 9, \"pid\": 4242, \"tid\": 1, \"ts\": 202.0},\n"
      "{\"name\": \"ProgressSend\", \"cat\": \"PROXY\", \"ph\": \"e\", \"id\": 9, \"pid\": 4242, \"tid\": 1, \"ts\": 203.0},\n{}]");
  LocalData d = read(t);
  EXPECT_EQ(d.ops.size(), 2u);
  EXPECT_EQ(d.inputs[0].reject_reasons.count("proxy op outside any collective (PXN op of another process)"), 1u);
}

// Defect 9: curly quotes pasted into a line.
TEST(TraceReader, Defect9CurlyQuotes) {
  std::string t = replace(kGoodTrace, R"({"name": "ScheduleSend", "cat": "PROXY", "ph": "b", "id": 1,)",
                          "{\"name\": \xE2\x80\x9CScheduleSend\xE2\x80\x9D, \"cat\": \"PROXY\", \"ph\": \"b\", \"id\": 1,");
  LocalData d = read(t);
  EXPECT_EQ(d.ops.size(), 2u);
  EXPECT_EQ(d.inputs[0].rejected, 0u);
}

TEST(TraceReader, TruncatedFileKeepsCompletedOpsAndCountsTheRest) {
  std::string t = kGoodTrace;
  t = t.substr(0, t.find(R"({"name": "SendWait", "cat": "NET", "ph": "e", "id": 3)"));
  LocalData d = read(t);
  ASSERT_EQ(d.ops.size(), 1u);
  EXPECT_EQ(d.ops[0].is_send, 0);
  EXPECT_GE(d.inputs[0].rejected, 1u);
  EXPECT_EQ(d.inputs[0].error, "");
}

TEST(TraceReader, GarbageAndEmptyFilesAreErrorsNamingTheProblem) {
  LocalData g = read("\x01\x02 this is not a trace\n{{{{\n\xff\xfe\n");
  EXPECT_TRUE(g.ops.empty());
  EXPECT_EQ(g.inputs[0].rejected, 3u);
  EXPECT_NE(g.inputs[0].error.find("not an NCCL profiler trace"), std::string::npos);
  LocalData e = read("");
  EXPECT_NE(e.inputs[0].error.find("empty"), std::string::npos);
}

TEST(TraceReader, FilesOnDiskAndOverlongLines) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("culprit_reader_" + std::to_string(::getpid()));
  fs::create_directories(dir / "sub");
  {
    std::ofstream(dir / "a_1_3.json") << kGoodTrace;
    std::ofstream big(dir / "sub" / "b_1_4.json");
    big << "[\n" << std::string(3 << 20, 'x') << "\n" << kGoodTrace + 2;
    std::ofstream(dir / "notes.log") << "ignored";
  }
  Discovery found = discover_node_local(dir.string(), "hostA", "auto");
  EXPECT_EQ(found.error, "");
  ASSERT_EQ(found.files.size(), 2u);
  LocalData d;
  read_input_files(found.files, d, 2);
  ASSERT_EQ(d.inputs.size(), 2u);
  EXPECT_EQ(d.ops.size(), 4u);
  uint64_t overlong = 0;
  for (const InputReport& in : d.inputs) overlong += in.reject_reasons.count("line longer than 1 MiB") ? 1 : 0;
  EXPECT_EQ(overlong, 1u);
  Discovery missing = discover_node_local((dir / "nope").string(), "hostA", "auto");
  EXPECT_NE(missing.error.find("does not exist"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace culprit
