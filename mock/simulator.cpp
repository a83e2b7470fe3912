// The simulator's public side (simulator.hpp): a Simulation builds the cluster (cluster.cpp),
// runs one of the two engines (ring_engine.cpp, flow.cpp), keeps what Retention asks of the
// records they hand over, measures the faults' effect, and writes the files node by node.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "mock/sim_internal.hpp"

namespace culprit::mock {

void Simulation::Impl::simulate() {
  kept = std::make_unique<NodeStore>(sc.nodes, keep.memory_budget);
  if (general) simulate_flow();
  else simulate_ring();
}

// The general engine hands a pipeline's records over iteration by iteration, which is not
// their index order (a rank's operations of every iteration come before the next rank's):
// each goes to its place.
namespace {
template <typename T>
void put_at(std::vector<T>& v, size_t index, T&& x) {
  if (v.size() <= index) v.resize(index + 1);
  v[index] = std::move(x);
}
}  // namespace

void Simulation::Impl::record_operation(OperationRecord&& rec) {
  job_end_ns = std::max(job_end_ns, rec.col.end_ns);
  if (keep.timeline) put_at(colls, size_t(rec.index), SimCollective(rec.col));
  const int node = procs[size_t(rec.col.rank)].node;
  if (keeps_node(node)) kept->add(node, rec);
}

void Simulation::Impl::record_proxy_op(SimProxyOp&& op, int index, StepLog&& steps) {
  const int node = procs[size_t(op.rank)].node;
  std::vector<SimStep> all = steps.take_all();  // empty unless the timeline or every step is kept
  if (keeps_node(node)) {
    ProxyOpRecord rec;
    rec.op = op;
    rec.index = index;
    rec.steps = steps.summary();
    if (keep.every_step) rec.every_step = all;
    kept->add(node, rec);
  }
  if (keep.timeline) {
    op.steps = std::move(all);
    put_at(ops, size_t(index), std::move(op));
  }
}

// ---- public API ---------------------------------------------------------------------------

Simulation::Simulation(const Scenario& scenario, Retention keep) : impl_(new Impl) {
  try {
    impl_->keep = std::move(keep);
    impl_->build(scenario);
    impl_->simulate();
  } catch (...) {
    delete impl_;
    throw;
  }
}

Simulation::~Simulation() { delete impl_; }
Simulation::Simulation(Simulation&& o) noexcept : impl_(o.impl_) { o.impl_ = nullptr; }
Simulation& Simulation::operator=(Simulation&& o) noexcept {
  if (this != &o) {
    delete impl_;
    impl_ = o.impl_;
    o.impl_ = nullptr;
  }
  return *this;
}

const Scenario& Simulation::scenario() const { return impl_->sc; }
const std::vector<SimProcess>& Simulation::processes() const { return impl_->procs; }
std::vector<std::string> Simulation::hosts() const {
  std::vector<std::string> h;
  for (int node = 0; node < impl_->sc.nodes; ++node) h.push_back(host_name(node));
  return h;
}
const GroundTruth& Simulation::truth() const { return impl_->truth; }

namespace {

double slowdown_of(double job, double healthy) {
  return std::isfinite(job) && healthy > 0 ? job / healthy - 1.0 : 0.0;
}

// When the job of `scenario` ends: the last completion of any operation (+inf: never).
double job_end_ns(const Scenario& scenario) { return Simulation(scenario, Retention::nothing()).job_end_ns(); }

}  // namespace

double Simulation::job_end_ns() const { return impl_->job_end_ns; }

void Simulation::measure_effect() {
  GroundTruth& t = impl_->truth;
  Scenario healthy = impl_->sc;
  healthy.faults.clear();
  t.job_ns = impl_->job_end_ns;
  // A run without faults is its own healthy run: no second simulation.
  t.healthy_job_ns = impl_->sc.faults.empty() ? t.job_ns : mock::job_end_ns(healthy);
  t.slowdown = slowdown_of(t.job_ns, t.healthy_job_ns);
  // Roots follow the faults other than `none`, in order.
  size_t root = 0;
  for (const Fault& f : impl_->sc.faults) {
    if (f.kind == "none" || root >= t.roots.size()) continue;
    Scenario alone = healthy;
    alone.faults = {f};
    t.roots[root++].slowdown_alone =
        impl_->sc.faults.size() == 1 ? t.slowdown : slowdown_of(mock::job_end_ns(alone), t.healthy_job_ns);
  }
}
uint64_t Simulation::comm_hash() const { return impl_->comm_hash; }
int Simulation::n_ranks() const { return impl_->n; }
int Simulation::ring_next(int channel, int rank) const { return impl_->next.at(channel).at(rank); }
int Simulation::ring_prev(int channel, int rank) const { return impl_->prev.at(channel).at(rank); }
bool Simulation::is_network_hop(int src, int dst) const {
  return impl_->procs.at(src).node != impl_->procs.at(dst).node;
}
const std::vector<SimComm>& Simulation::communicators() const { return impl_->comm_list; }
std::vector<SimLink> Simulation::links() const {
  std::vector<SimLink> out;
  const Impl& m = *impl_;
  if (m.general) return m.flow.links;
  for (int c = 0; c < m.C; ++c)
    for (int r = 0; r < m.n; ++r)
      out.push_back(SimLink{m.comm_hash, c, r, m.next[c][r], m.net_hop(r, m.next[c][r]), "ring"});
  return out;
}
const std::vector<SimCollective>& Simulation::collectives() const {
  if (!impl_->keep.timeline) throw std::logic_error("Simulation::collectives: the timeline was not kept (Retention)");
  return impl_->colls;
}
const std::vector<SimProxyOp>& Simulation::proxy_ops() const {
  if (!impl_->keep.timeline) throw std::logic_error("Simulation::proxy_ops: the timeline was not kept (Retention)");
  return impl_->ops;
}

NodeTimeline Simulation::Impl::node_timeline(int node) const {
  if (!keeps_node(node)) throw std::logic_error("mock: the records of node " + std::to_string(node) + " were not kept");
  return kept->load(node);
}

NodeTimeline Simulation::node_timeline(int node) const {
  if (node < 0 || node >= impl_->sc.nodes) throw std::out_of_range("node_timeline: no node " + std::to_string(node));
  return impl_->node_timeline(node);
}

std::vector<RenderedFile> Simulation::render_host_nccl_json(int node) const {
  if (node < 0 || node >= impl_->sc.nodes) throw std::out_of_range("render_host_nccl_json: no node " + std::to_string(node));
  return render_host_nccl_json(impl_->node_timeline(node));
}

std::vector<RenderedFile> Simulation::render_host_nccl_json(const NodeTimeline& t) const {
  std::vector<RenderedFile> files;
  const int gpus = impl_->sc.gpus;
  if (impl_->general) {
    for (int local = 0; local < gpus; ++local)
      for (auto& f : impl_->render_rank_flow(t, t.node * gpus + local)) files.push_back(std::move(f));
    return files;
  }
  for (int local = 0; local < gpus; ++local) {
    const int r = t.node * gpus + local;
    RenderedFile f;
    f.name = "nccl_prof_" + std::to_string(impl_->comm_hash) + "_" + std::to_string(r) + ".json";
    f.content = impl_->render_rank_nccl_json(t, r);
    files.push_back(std::move(f));
  }
  return files;
}

namespace {

bool is_simulated_trace(const std::string& name) {
  return name.rfind("nccl_prof_", 0) == 0 && name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0;
}

bool is_simulated_export(const std::string& name) {
  if (name.rfind("nccl_trace_rank_", 0) == 0) return true;  // Flight Recorder dumps
  for (const char* table : {"proxy_ops", "inflight_ops", "coll_perf", "net_qp"})
    for (const char* ext : {".csv", ".json"})
      if (name == std::string(table) + ext) return true;
  return false;
}

}  // namespace

double Simulation::dump_time_ns() const { return impl_->kill_ns; }

void Simulation::write(const std::string& dir) const {
  write(dir, [this](int node) { return render_host_nccl_json(node); });
}

void Simulation::write(const std::string& dir,
                       const std::function<std::vector<RenderedFile>(int node)>& render) const {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  auto put = [](const fs::path& path, const std::string& content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + path.string());
    out.write(content.data(), std::streamsize(content.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
  };
  for (int node = 0; node < impl_->sc.nodes; ++node) {
    fs::path hd = fs::path(dir) / host_name(node);
    fs::create_directories(hd);
    // Files of an earlier simulation in the same place would mix with this one's.
    for (const auto& e : fs::directory_iterator(hd)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && (is_simulated_trace(name) || is_simulated_export(name))) fs::remove(e.path());
    }
    for (const auto& f : render(node)) put(hd / f.name, f.content);
  }
  put(fs::path(dir) / "ground_truth.json", ground_truth_json(impl_->truth, impl_->procs) + "\n");
}

}  // namespace culprit::mock
