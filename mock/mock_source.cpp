#include "mock/mock_source.hpp"

#include "io/nccl_trace_reader.hpp"
#include "mock/simulator.hpp"

namespace culprit::mock {

void MockSource::read(int rank, int size, LocalData& data) {
  Simulation sim(Scenario::parse(spec_));
  const std::vector<std::string> hosts = sim.hosts();
  for (size_t node = 0; node < hosts.size(); ++node) {
    if (static_cast<int>(node % static_cast<size_t>(size)) != rank) continue;
    for (const RenderedFile& f : sim.render_host_nccl_json(static_cast<int>(node)))
      read_nccl_trace_buffer(f.content, "mock:" + hosts[node] + "/" + f.name, hosts[node], data);
  }
}

}  // namespace culprit::mock
