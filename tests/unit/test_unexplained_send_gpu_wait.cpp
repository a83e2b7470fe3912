// unexplained_send_gpu_wait on hand-built facts, and probing's own mock export (8 ranks;
// rank 2's SendGpuWait is 40 times everyone else's while its input arrives on time; rank 5,
// the designated victim, waits long for its data) analysed end to end: the sender is named
// first, as gpu_producer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>

#include "analysis/unexplained_send_gpu_wait.hpp"
#include "comm/communicator.hpp"
#include "pipeline/analyze.hpp"

namespace culprit {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kComm = 7;

// A send on `channel` of communicator kComm by `sender`, alone on its node (the node is named
// after it), waiting `excess` ns per step beyond the baseline over `steps` steps, `margin` x
// its guard.
SendGpuWaitFact send_of(uint32_t sender, double excess, double steps, double margin = 1, int32_t channel = 0) {
  SendGpuWaitFact s;
  s.sender = s.node = sender;
  s.comm_hash = kComm;
  s.channel = channel;
  s.excess_per_step_ns = excess;
  s.steps = steps;
  s.margin = margin;
  return s;
}

// An input of `receiver` (alone on its node) from another node, `late` ns per step.
InputArrivalFact input_of(uint32_t receiver, double late, int32_t channel = 0, uint64_t comm = kComm) {
  InputArrivalFact in;
  in.receiver = in.node = receiver;
  in.comm_hash = comm;
  in.channel = channel;
  in.late_per_step_ns = late;
  return in;
}

TEST(UnexplainedSendGpuWait, LateInputExplainsTheWait) {
  // Rank 1 waits for its GPU 5 us per step beyond the baseline, and its input came 5 us late.
  const SendGpuWaitFact victim = send_of(1, 5000, 10);
  const InputArrivalFact late_input = input_of(1, 5000);
  EXPECT_TRUE(unexplained_send_gpu_wait(std::span(&victim, 1), std::span(&late_input, 1)).empty());
}

TEST(UnexplainedSendGpuWait, OnTimeInputLeavesTheGpusOwnTime) {
  const SendGpuWaitFact straggler = send_of(2, 5000, 10);
  const InputArrivalFact on_time = input_of(2, 0);
  auto own = unexplained_send_gpu_wait(std::span(&straggler, 1), std::span(&on_time, 1));
  ASSERT_EQ(own.size(), 1u);
  EXPECT_DOUBLE_EQ(own.at(2).ns, 5000.0 * 10);
}

TEST(UnexplainedSendGpuWait, OnlyTheLatestOfSeveralInputsCountsAndOnlyInItsCommunicator) {
  const SendGpuWaitFact s = send_of(3, 5000, 2, 2.5);  // its 5 us excess is 2.5x its guard (2 us)
  // Communicator 99 is another job's.
  const InputArrivalFact inputs[] = {input_of(3, 1000), input_of(3, 4000), input_of(3, 50000, 0, 99)};
  auto own = unexplained_send_gpu_wait(std::span(&s, 1), std::span(inputs));
  EXPECT_DOUBLE_EQ(own.at(3).ns, 1000.0 * 2);
  // The unexplained 1 us per step against that 2 us guard: half of it.
  EXPECT_DOUBLE_EQ(own.at(3).margin, 0.5);
}

TEST(UnexplainedSendGpuWait, ASendWaitNoLongerThanItsInputsRecordedWaitIsExplained) {
  // A tree's root on a wire-bound channel (probing form, a healthy job): 73 us per step for its
  // GPU, 63 us beyond the senders' reference; its child's data took 82.6 us per step to come,
  // 52.8 us beyond the receivers' lower reference. The references differ; the recorded waits
  // say the GPU waited for its input.
  SendGpuWaitFact root = send_of(1, 63000, 656);
  root.wait_per_step_ns = 73000;
  InputArrivalFact child = input_of(1, 52800);
  EXPECT_EQ(unexplained_send_gpu_wait(std::span(&root, 1), std::span(&child, 1)).size(), 1u);  // without the wait
  child.wait_per_step_ns = 82600;
  EXPECT_TRUE(unexplained_send_gpu_wait(std::span(&root, 1), std::span(&child, 1)).empty());
  // A straggler whose input waited 5 us keeps its own time beyond that.
  SendGpuWaitFact straggler = send_of(2, 390000, 10);
  straggler.wait_per_step_ns = 400000;
  InputArrivalFact on_time = input_of(2, 0);
  on_time.wait_per_step_ns = 5000;
  auto own = unexplained_send_gpu_wait(std::span(&straggler, 1), std::span(&on_time, 1));
  ASSERT_EQ(own.size(), 1u);
  EXPECT_DOUBLE_EQ(own.at(2).ns, 390000.0 * 10);
}

TEST(UnexplainedSendGpuWait, AnUnseenInputJudgesNothing) {
  const SendGpuWaitFact s = send_of(4, 5000, 2);  // it records no receive at all
  const InputArrivalFact elsewhere = input_of(5, 0);
  EXPECT_TRUE(unexplained_send_gpu_wait(std::span(&s, 1), std::span(&elsewhere, 1)).empty());
}

TEST(UnexplainedSendGpuWait, WhatASenderSendsOnAChannelIsMadeOfWhatItsNodeReceivedOnThatChannel) {
  // Two GPUs of one node (node 0) in a ring whose channels rotate them: GPU 1 receives channel
  // 0 from the network and passes it to GPU 2 over NVLink, which sends it on; GPU 2 receives
  // channel 1 from the network. GPU 2's send on channel 0 waited 5 us per step for data that
  // came late to GPU 1: its own on-time input of channel 1 does not make that wait its own.
  SendGpuWaitFact exit = send_of(2, 5000, 10, 2, 0);
  exit.node = 0;
  InputArrivalFact entry0 = input_of(1, 5000, 0), entry1 = input_of(2, 0, 1);
  entry0.node = entry1.node = 0;
  const InputArrivalFact inputs[] = {entry0, entry1};
  EXPECT_TRUE(unexplained_send_gpu_wait(std::span(&exit, 1), std::span(inputs)).empty());
  // With its own input on channel 0 (one GPU per node), that input judges it.
  const InputArrivalFact own_entry[] = {input_of(2, 0, 0)};
  EXPECT_EQ(unexplained_send_gpu_wait(std::span(&exit, 1), std::span(own_entry)).size(), 1u);
  // Where no GPU of its node receives channel 0 from another node, the data it sends there was
  // made in the node from what it received: its input on channel 1 stands in.
  InputArrivalFact inside = input_of(1, 0, 0);
  inside.node = 0;
  inside.from_other_node = false;
  const InputArrivalFact inside_node[] = {inside, entry1};
  EXPECT_EQ(unexplained_send_gpu_wait(std::span(&exit, 1), std::span(inside_node)).size(), 1u);
}

TEST(UnexplainedSendGpuWait, ATreeHeadsReceiveFromTheGpuItSendsToIsNotThatSendsInput) {
  // A healthy tree of two nodes, two GPUs each, probing form (seed 884991, per step): on
  // channel 0 GPU 1 heads the leaf node and sends up to GPU 2, which heads the root node and
  // sends the result back down. GPU 1's send up waited 835 us for its GPU, fed over NVLink by
  // a slower GPU of its node; its parent's data came down early. That early broadcast is not
  // what GPU 1's send up was made of: its input is unseen.
  SendGpuWaitFact leaf = send_of(1, 700000, 32, 3, 0);
  leaf.wait_per_step_ns = 835152;
  leaf.receiver = 2;
  leaf.node_holds_others = true;
  InputArrivalFact broadcast = input_of(1, 0, 0);
  broadcast.sender = 2;
  EXPECT_TRUE(unexplained_send_gpu_wait(std::span(&leaf, 1), std::span(&broadcast, 1)).empty());
  EXPECT_FALSE(unexplained_per_step(std::span(&leaf, 1), std::span(&broadcast, 1))[0].has_value());
  // An interior head sending up is fed by its child (late 5 us), not by its parent (early).
  InputArrivalFact child = input_of(1, 5000, 0);
  child.sender = 3;
  const InputArrivalFact both[] = {broadcast, child};
  leaf.excess_per_step_ns = 5000;
  EXPECT_TRUE(unexplained_send_gpu_wait(std::span(&leaf, 1), std::span(both)).empty());
  EXPECT_DOUBLE_EQ(*unexplained_per_step(std::span(&leaf, 1), std::span(both))[0], 835152.0 - 5000);
  // One rank of the communicator per node (a ring of two such nodes): the GPU it sends to
  // feeds it, and its on-time input leaves its wait its own.
  leaf.node_holds_others = false;
  leaf.excess_per_step_ns = 700000;
  EXPECT_EQ(unexplained_send_gpu_wait(std::span(&leaf, 1), std::span(&broadcast, 1)).size(), 1u);
}

TEST(UnexplainedSendGpuWait, NoMoreIsOwnTimeThanItsReceiverWaitedForTheData) {
  // Without SendPeerWait (2.24-2.26) SendGpuWait holds the wait for the receiver's credit: a
  // sender held 5 us per step by a slow receiver, whose receiver found the data waiting, did
  // not delay it.
  const InputArrivalFact on_time = input_of(2, 0);
  SendGpuWaitFact held = send_of(2, 5000, 10, 2.5);
  held.output_late_per_step_ns = 0;
  EXPECT_TRUE(unexplained_send_gpu_wait(std::span(&held, 1), std::span(&on_time, 1)).empty());
  // A receiver that waited 2 us per step for it: 2 us of it were the sender's own.
  SendGpuWaitFact partly = held;
  partly.output_late_per_step_ns = 2000;
  auto own = unexplained_send_gpu_wait(std::span(&partly, 1), std::span(&on_time, 1));
  EXPECT_DOUBLE_EQ(own.at(2).ns, 2000.0 * 10);
  EXPECT_DOUBLE_EQ(own.at(2).margin, 1.0);  // 2 us against the 2 us guard its 5 us cleared 2.5x
}

// probing's mock rows (python/probing/nccl/mock.py: seed_mock(ranks=8, ops_per_rank=5)),
// written as its CLI exports nccl.proxy_ops.
std::string probing_mock_export() {
  std::string csv =
      "ts,rank,tp_rank,pp_rank,dp_rank,comm_hash,coll_func,seq,channel_id,peer,is_send,n_steps,trans_bytes,"
      "send_gpu_wait_ns,send_peer_wait_ns,send_wait_ns,recv_wait_ns,recv_flush_wait_ns\n";
  auto row = [&](long long ts, int rank, int seq, int channel, int is_send, long long sgw, long long spw, long long sw,
                 long long rw, long long rfw) {
    csv += std::to_string(ts) + "," + std::to_string(rank) + "," + std::to_string(rank % 2) + "," +
           std::to_string((rank / 2) % 2) + "," + std::to_string(rank / 4) + ",3735928559,AllReduce," +
           std::to_string(seq) + "," + std::to_string(channel) + "," + std::to_string((rank + 1) % 8) + "," +
           std::to_string(is_send) + ",4,1048576," + std::to_string(sgw) + "," + std::to_string(spw) + "," +
           std::to_string(sw) + "," + std::to_string(rw) + "," + std::to_string(rfw) + "\n";
  };
  const long long base = 1'764'000'000'000'000'000LL;
  for (int seq = 0; seq < 5; ++seq) {
    const long long ts = base + seq * 10'000'000LL;
    for (int rank = 0; rank < 8; ++rank) {
      if (rank == 2) {  // the culprit: slow GPU, high SendGpuWait
        row(ts, rank, seq, 0, 1, 8'000'000, 0, 500'000, 200'000, 0);
        row(ts + 1000, rank, seq, 1, 0, 0, 0, 0, 300'000, 0);
      } else if (rank == 5) {  // the victim: waits on its peers
        row(ts, rank, seq, 0, 1, 100'000, 0, 0, 150'000, 0);
        row(ts + 1000, rank, seq, 0, 0, 0, 0, 0, 12'000'000, 800'000);
      } else {
        row(ts, rank, seq, 0, 1, 200'000, 50'000, 300'000, 250'000, 0);
      }
    }
  }
  return csv;
}

TEST(UnexplainedSendGpuWait, ProbingsMockNamesTheSlowSenderFirst) {
  fs::path dir = fs::temp_directory_path() / ("culprit-probing-mock-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "mock-host-0");
  std::ofstream(dir / "mock-host-0" / "proxy_ops.csv") << probing_mock_export();
  AnalyzeOptions o;
  o.shared = dir.string();
  o.output = (dir / "out.h5").string();
  o.json = (dir / "out.json").string();
  o.quiet = true;
  auto comm = make_serial_communicator();
  ASSERT_EQ(run_analyze(o, *comm), kExitOk);
  nlohmann::json v = nlohmann::json::parse(std::ifstream(dir / "out.json"));
  fs::remove_all(dir);
  ASSERT_FALSE(v["culprits"].empty()) << v["notes"];
  const auto& top = v["culprits"][0];
  const auto& process = v["processes"][top["process_id"].get<size_t>()];
  EXPECT_EQ(process["rank"], 2) << v["culprits"];
  EXPECT_EQ(top["culprit_class"], "gpu_producer") << v["culprits"];
  EXPECT_EQ(v["status"], "ok") << v["notes"];
}

}  // namespace
}  // namespace culprit
