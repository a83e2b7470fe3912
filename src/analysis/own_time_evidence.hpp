// Pass 3 of the attribution, the evidence of a process's own time (DESIGN.md, "Own time,
// not wait"), offered as self evidence:
//   - kernel lateness: a GPU whose own work between kernels (or kernel starts) is late
//     against its peers (own_delay.hpp) is a gpu_producer; its slow consumption is the same
//     straggler, not a consumer fault;
//   - without kernel clocks: SendGpuWait its inputs' arrival does not explain
//     (unexplained_send_gpu_wait.hpp), collective connections only;
//   - slow wires (slow_wire.hpp): network_link at the sender, towards the receiver; without
//     wire timing, SendWait beyond its peers' (send_wait_peers.hpp) likewise;
//   - queue pairs whose idle sends take longer than their peers' (queue_pair_wires.hpp):
//     network_link; where no wire is timed at all, a note says what that hides.
#pragma once

#include <string>
#include <vector>

#include "analysis/connection_facts.hpp"
#include "analysis/own_delay.hpp"
#include "analysis/peer_roles.hpp"
#include "analysis/process_context.hpp"
#include "analysis/self_evidence.hpp"

namespace culprit {

// Offers gpu_producer evidence for unexplained SendGpuWait to the processes whose own work
// is not measured by kernel clocks; notes when no process has kernel clocks at all. `context`
// places every process (placeholders of ranks without data included) on its host; `roles`
// gives each its peers.
void offer_unexplained_send_gpu_wait(const Observations& observations, const ProcessContext& context,
                                     const LazyPeerRoles& roles, const std::vector<EdgeFacts>& facts,
                                     const OwnDelay& own_delay, std::vector<Evidence>& evidence,
                                     std::vector<std::string>& notes);

// Where no connection of the input is timed step by step (probing's sums): offers
// network_link to the senders of send/recv connections whose SendWait stands beyond their
// peers', and of collective connections whose quickest op's does and that set their
// communicator's pace (send_wait_peers.hpp).
void offer_slow_send_waits(const Observations& observations, const LazyPeerRoles& roles,
                           const std::vector<EdgeFacts>& facts, const AttributionConfig& cfg,
                           std::vector<Evidence>& evidence);

// Offers each late GPU's own delay as gpu_producer (it replaces a weaker consumer class).
void offer_kernel_lateness(const OwnDelay& own_delay, std::vector<Evidence>& evidence);

// Offers each slow wire's excess over the window as network_link at its sender.
void offer_slow_wires(const Observations& observations, const std::vector<EdgeFacts>& facts,
                      std::vector<Evidence>& evidence);

// Offers slow queue pairs (queue_pair_wires.hpp) as network_link towards the far end of their
// process's slowest outbound connection.
void offer_slow_queue_pairs(const Observations& observations, const std::vector<EdgeFacts>& facts,
                            std::vector<Evidence>& evidence);

// Notes, where connections send but neither steps (NCCL traces) nor queue pairs with idle sends
// (nccl.net_qp) time any wire, that links are judged by their SendWait sums alone, and what would
// time them: the table, or where it was read, its lengths (blank in probing's default export) or
// the ts of its rows.
void note_untimed_wires(const Observations& observations, const std::vector<EdgeFacts>& facts,
                        std::vector<std::string>& notes);

}  // namespace culprit
