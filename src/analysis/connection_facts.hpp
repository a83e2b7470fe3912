// Pass 2 of the attribution, the per-connection facts: every connection's per-step phases
// judged against its communicator (edge_stats.hpp), its receiver against receivers of its
// kind (receiver_peers.hpp), its wire (slow_wire.hpp), how late its data arrived, and the
// verdict shown for it. Also the notes on connections recorded by one end only.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis/edge_stats.hpp"
#include "analysis/process_context.hpp"
#include "analysis/verdict_kinds.hpp"

namespace culprit {

// Everything judged about one connection.
struct EdgeFacts {
  EdgeView view;
  uint32_t src = 0, dst = 0;                          // processes of its two ends
  double anomaly[kPhaseCount] = {0, 0, 0, 0, 0, 0};  // significant excess per step vs peers
  double margin[kPhaseCount] = {0, 0, 0, 0, 0, 0};   // how many times its guard each anomaly is
  double late_data_ns = 0;    // per step: receiver waited for data beyond the comm's low reference
  double link_excess_ns = 0;  // per step: SendWait (or wire time) above the comm's reference
  double link_margin = 0;     // where slow_link: how far the wire clears the tightest of its guards
  bool p2p = false;           // a connection of a communicator that runs only send/recv
  bool slow_link = false, no_credit = false, slow_flush = false, slow_consume = false;
  // slow_consume from a backlog after it on its node (backlog_inside_node.hpp), not from holds
  // slow in every step: the node's slow consumption, not necessarily the receiver's own.
  bool behind_backlog = false;
  EdgeVerdict verdict = EdgeVerdict::kNormal;
};

struct ConnectionFacts {
  std::vector<EdgeFacts> edges;                // one per observed connection, in their order
  std::map<uint64_t, CommBaseline> baselines;  // per communicator
  std::vector<std::string> notes;
};

// May add placeholder processes to `context` for ranks known only as a peer.
ConnectionFacts judge_connections(const Observations& observations, ProcessContext& context,
                                  const AttributionConfig& config);

// The most specific cause first: a slow flush also withholds credit from the sender.
EdgeVerdict verdict_of(const EdgeFacts& facts);

// The communicators in which each process's network receives were slow to consume.
std::map<uint32_t, std::set<uint64_t>> slow_consuming_comms(const Observations& observations,
                                                           const std::vector<EdgeFacts>& facts);

}  // namespace culprit
