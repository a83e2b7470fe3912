// The HTML page's model and map (src/output/html_model.*, html_map.*), on hand-built results:
// placement of GPUs in nodes, chains as next hops, wires and their verdicts, the cards'
// evidence sentences, the table's order, aggregation at scale, and the SVG's marks.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "output/html_map.hpp"
#include "output/html_model.hpp"

using namespace culprit;

namespace {

ProcessRow process(uint32_t id, const std::string& host, int64_t pid, const std::string& role = "healthy") {
  ProcessRow p;
  p.process_id = id;
  p.host = host;
  p.pid = pid;
  p.role = role;
  return p;
}

EdgeRow edge(uint32_t src, uint32_t dst, const std::string& verdict = "normal", uint64_t send_wait = 1000) {
  EdgeRow e;
  e.src_process = src;
  e.dst_process = dst;
  e.verdict = verdict;
  e.send_steps = e.recv_steps = 10;
  e.bytes = 1000000;
  e.send_wait_ns = send_wait;
  e.recv_wait_ns = 500;
  return e;
}

// Two nodes of two GPUs, listed out of order; b1 (id 3) -> a1 (id 0) is a slow link whose
// victims wait along 1 -> 2 -> 3 (root).
AnalysisResults two_nodes_with_a_slow_link() {
  AnalysisResults r;
  r.processes = {process(0, "node10", 300, "victim"), process(1, "node2", 200, "victim"),
                 process(2, "node2", 100, "victim"), process(3, "node10", 400, "culprit")};
  r.processes[3].culprit_class = "network_link";
  for (uint32_t v : {0u, 1u, 2u}) r.processes[v].attributed_root = 3;
  r.processes[0].chain_depth = 1;  // as the chains below: 0 -> 3, 1 -> 2 -> 3, 2 -> 3
  r.processes[1].chain_depth = 2;
  r.processes[2].chain_depth = 1;
  r.comm_ranks = {{7, 2, 4, 0}, {7, 1, 4, 1}, {7, 0, 4, 2}, {7, 3, 4, 3}};
  r.edges = {edge(3, 0, "slow_link", 40000), edge(2, 3, "late_data"), edge(1, 2), edge(0, 1, "normal", 1000)};
  CulpritRow c;
  c.process_id = 3;
  c.host = "node10";
  c.pid = 400;
  c.culprit_class = "network_link";
  c.peer_process_id = 0;
  c.blame_ns = 5000000;
  c.blame_share = 1;
  c.job_share = 0.25;
  c.victims = 3;
  c.score = 0.9;
  r.culprits = {c};
  r.chains = {{1, 0, 1}, {1, 1, 2}, {1, 2, 3}, {2, 0, 2}, {2, 1, 3}, {0, 0, 0}, {0, 1, 3}};
  return r;
}

}  // namespace

TEST(HtmlModel, NaturalOrderOfHosts) {
  EXPECT_TRUE(html::natural_less("node2", "node10"));
  EXPECT_FALSE(html::natural_less("node10", "node2"));
  EXPECT_TRUE(html::natural_less("a", "b"));
  EXPECT_TRUE(html::natural_less("node1", "node1a"));
  EXPECT_FALSE(html::natural_less("node01", "node01"));
  EXPECT_NE(html::natural_less("node01", "node1"), html::natural_less("node1", "node01"));  // a strict order
}

TEST(HtmlModel, GpusGroupedByHostInRankOrder) {
  const html::Model m = html::build_model(two_nodes_with_a_slow_link());
  ASSERT_EQ(m.nodes.size(), 2u);
  EXPECT_EQ(m.nodes[0].host, "node2");
  EXPECT_EQ(m.nodes[1].host, "node10");
  // node2 holds ids 1 (rank 1) and 2 (rank 0): rank order puts id 2 first.
  ASSERT_EQ(m.nodes[0].gpus.size(), 2u);
  EXPECT_EQ(m.gpus[m.nodes[0].gpus[0]].process_id, 2u);
  EXPECT_EQ(m.gpus[m.nodes[0].gpus[0]].short_label, "0");
  EXPECT_EQ(m.nodes[1].worst, html::Role::kRoot);
  EXPECT_EQ(m.nodes[0].worst, html::Role::kVictim);
  EXPECT_FALSE(m.aggregated);
}

TEST(HtmlModel, NextHopsFollowTheChainsTable) {
  const html::Model m = html::build_model(two_nodes_with_a_slow_link());
  EXPECT_EQ(m.gpus[1].next_hop, 2);
  EXPECT_EQ(m.gpus[2].next_hop, 3);
  EXPECT_EQ(m.gpus[0].next_hop, 3);
  EXPECT_EQ(m.gpus[3].next_hop, -1);  // the root
  ASSERT_EQ(m.default_chain_victims.size(), 1u);
  EXPECT_EQ(m.default_chain_victims[0], 1u);  // the longest chain: 1 -> 2 -> 3
}

TEST(HtmlModel, WiresJoinNetworkConnectionsAndShowTheWorstVerdict) {
  const html::Model m = html::build_model(two_nodes_with_a_slow_link());
  // Crossing: 2->3 (node2 -> node10) and 0->1 (node10 -> node2); 3->0 and 1->2 stay inside.
  ASSERT_EQ(m.wires.size(), 1u);
  EXPECT_EQ(m.wires[0].connections, 2u);
  EXPECT_EQ(m.wires[0].flagged, 1u);
  EXPECT_EQ(m.wires[0].verdict, "late_data");
}

TEST(HtmlModel, LinkCardQuotesTheWireAgainstTheMedian) {
  const html::Model m = html::build_model(two_nodes_with_a_slow_link());
  ASSERT_EQ(m.cards.size(), 1u);
  const html::Card& c = m.cards[0];
  EXPECT_EQ(c.name, "node10:pid 400");
  EXPECT_EQ(c.peer_name, "node10:pid 300");
  ASSERT_EQ(c.evidence.size(), 3u);
  EXPECT_EQ(c.evidence[0], "The wire between two healthy ends was slow.");
  // 40 us per MB on the link; the median connection 1 us per MB.
  EXPECT_NE(c.evidence[1].find("40.0 us per MB"), std::string::npos) << c.evidence[1];
  EXPECT_NE(c.evidence[1].find("40.00x the median"), std::string::npos) << c.evidence[1];
  EXPECT_NE(c.evidence[2].find("25.0 % of all processes' time"), std::string::npos) << c.evidence[2];
}

TEST(HtmlModel, ProducerCardComparesItsWaitWithItsVictims) {
  AnalysisResults r = two_nodes_with_a_slow_link();
  r.culprits[0].culprit_class = "gpu_producer";
  r.culprits[0].peer_process_id = -1;
  r.processes[3].wait_ns = 1000;
  for (uint32_t v : {0u, 1u, 2u}) r.processes[v].wait_ns = 2000000 * (v + 1);
  r.edges[0].send_gpu_wait_ns = 9000;  // its one send: 900 ns per step
  const html::Model m = html::build_model(r);
  const std::vector<std::string>& e = m.cards[0].evidence;
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[1], "It waited 1.0 us itself, while the 3 processes it holds back waited 4.0 ms at the median.");
  EXPECT_NE(e[2].find("SendGpuWait): 900 ns per step on average over 1 connection"), std::string::npos) << e[2];
}

TEST(HtmlModel, TableListsTheCulpritsConnectionsFirst) {
  AnalysisResults r = two_nodes_with_a_slow_link();
  r.edges.push_back(edge(1, 2, "no_credit"));
  const html::Model m = html::build_model(r);
  ASSERT_EQ(m.table_edges.size(), r.edges.size());
  // Edges touching process 3 or its peer 0: 0 (3->0), 1 (2->3), 3 (0->1); then the flagged 4.
  std::vector<std::size_t> first(m.table_edges.begin(), m.table_edges.begin() + 3);
  std::sort(first.begin(), first.end());
  EXPECT_EQ(first, (std::vector<std::size_t>{0, 1, 3}));
  EXPECT_EQ(m.table_edges[3], 4u);
  EXPECT_EQ(m.table_edges[4], 2u);
}

TEST(HtmlModel, LargeJobsAggregateAndKeepTheRootsNodeHot) {
  AnalysisResults r;
  for (uint32_t n = 0; n < 100; ++n)
    for (uint32_t g = 0; g < 2; ++g) r.processes.push_back(process(n * 2 + g, "n" + std::to_string(n), 1000 + g));
  r.processes[150].role = "culprit";
  CulpritRow c;
  c.process_id = 150;
  c.culprit_class = "gpu_producer";
  r.culprits = {c};
  const html::Model m = html::build_model(r);
  EXPECT_TRUE(m.aggregated);
  ASSERT_EQ(m.hot_nodes.size(), 1u);
  EXPECT_EQ(m.nodes[m.hot_nodes[0]].host, "n75");
  const std::string svg = html::render_map(r, m);
  EXPECT_NE(svg.find("id=\"overview\""), std::string::npos);
  EXPECT_NE(svg.find("id=\"node-99\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"gpu role-root\" id=\"gpu-150\""), std::string::npos);  // drawn in full as a hot spot
  EXPECT_EQ(svg.find("id=\"gpu-0\""), std::string::npos);                            // a cold node is one cell, no GPUs
}

TEST(HtmlMap, MarksTheRootAndTheCulpritLink) {
  const AnalysisResults r = two_nodes_with_a_slow_link();
  const std::string svg = html::render_map(r, html::build_model(r));
  EXPECT_NE(svg.find("class=\"gpu role-root\" id=\"gpu-3\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"gpu role-victim\" id=\"gpu-1\""), std::string::npos);
  EXPECT_NE(svg.find("v-late_data"), std::string::npos);
  EXPECT_NE(svg.find("class=\"chain-layer\""), std::string::npos);
  EXPECT_EQ(svg.find("culprit-wire"), std::string::npos);  // 3 -> 0 stays inside node10: no wire
}

TEST(HtmlModel, EscapesMarkup) {
  EXPECT_EQ(html::escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}

TEST(HtmlModel, OddResultsGiveASmallerModel) {
  AnalysisResults r;
  r.culprits.push_back({});
  r.chains = {{5, 0, 5}, {5, 1, 9}};
  r.edges = {edge(4, 8)};
  const html::Model m = html::build_model(r);
  EXPECT_TRUE(m.nodes.empty());
  EXPECT_TRUE(m.wires.empty());
  EXPECT_EQ(m.cards.size(), 1u);
  EXPECT_EQ(html::render_map(r, m), "<p class=\"empty\">No process to draw.</p>\n");
}

TEST(HtmlModel, HangCardQuotesTheNoteThatNamesIt) {
  AnalysisResults r;
  for (uint32_t p = 0; p < 3; ++p) {
    r.processes.push_back(process(p, "", -1, p == 2 ? "culprit" : "victim"));
    r.processes[p].rank = p == 2 ? 12 : p;
    r.processes[p].attributed_root = 2;
  }
  CulpritRow c;
  c.process_id = 2;
  c.culprit_class = "hang";
  r.culprits = {c};
  r.info.notes = {"flight recorder: rank 1 stopped issuing work",
                  "flight recorder: rank 12 stopped completing work: x"};
  const html::Model m = html::build_model(r);
  const std::vector<std::string>& e = m.cards[0].evidence;
  ASSERT_EQ(e.size(), 3u);  // class, the note, cost: no wait (nothing measured), no connection
  EXPECT_EQ(e[1], "Note: flight recorder: rank 12 stopped completing work: x");
}
