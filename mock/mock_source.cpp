#include "mock/mock_source.hpp"

#include "io/nccl_trace_reader.hpp"
#include "mock/simulator.hpp"

namespace culprit::mock {

void MockSource::read(int rank, int size, LocalData& data) {
  // Every analyzer rank simulates the whole cluster (a ring's timing couples all nodes) but
  // keeps the records of its own nodes only, and renders them one node at a time.
  auto mine = [rank, size](int node) { return node % size == rank; };
  Simulation sim(Scenario::parse(spec_), Retention::nodes_only(mine));
  const std::vector<std::string> hosts = sim.hosts();
  for (int node = 0; node < static_cast<int>(hosts.size()); ++node) {
    if (!mine(node)) continue;
    const std::string& host = hosts[static_cast<size_t>(node)];
    for (const RenderedFile& f : sim.render_host_nccl_json(node))
      read_nccl_trace_buffer(f.content, "mock:" + host + "/" + f.name, host, data);
  }
}

}  // namespace culprit::mock
