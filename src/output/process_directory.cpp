#include "output/process_directory.hpp"

#include <cinttypes>

#include "output/text_format.hpp"

namespace culprit {

ProcessDirectory::ProcessDirectory(const AnalysisResults& r) : results_(r) {
  for (std::size_t i = 0; i < r.processes.size(); ++i) by_id_[r.processes[i].process_id] = i;
  for (const CommRankRow& c : r.comm_ranks) {
    auto [it, inserted] = widest_rank_.try_emplace(c.process_id, &c);
    const CommRankRow* best = it->second;
    if (!inserted && (c.n_ranks > best->n_ranks || (c.n_ranks == best->n_ranks && c.comm_hash < best->comm_hash)))
      it->second = &c;
  }
}

const ProcessRow* ProcessDirectory::find(int64_t id) const {
  if (id < 0 || id > UINT32_MAX) return nullptr;
  auto it = by_id_.find(static_cast<uint32_t>(id));
  return it == by_id_.end() ? nullptr : &results_.processes[it->second];
}

std::string ProcessDirectory::name(int64_t id) const {
  if (const ProcessRow* p = find(id)) {
    if (p->pid >= 0) return format("%s:pid %" PRId64, host(p->host).c_str(), p->pid);
    if (p->rank >= 0) {  // Flight Recorder dumps collected into one folder name no host
      std::string r = format("rank %" PRId64, p->rank) + (p->label.empty() ? "" : " (" + p->label + ")");
      return p->host.empty() ? r : p->host + " " + r;
    }
    if (!p->label.empty()) return host(p->host) + " " + p->label;
    return format("%s process %" PRId64, host(p->host).c_str(), id);
  }
  return format("process %" PRId64, id);
}

std::string ProcessDirectory::rank(uint32_t id) const {
  auto it = widest_rank_.find(id);
  if (it == widest_rank_.end()) return {};
  return format("rank %d/%d", it->second->comm_rank, it->second->n_ranks);
}

int32_t ProcessDirectory::widest_rank(uint32_t id) const {
  auto it = widest_rank_.find(id);
  return it == widest_rank_.end() ? -1 : it->second->comm_rank;
}

}  // namespace culprit
