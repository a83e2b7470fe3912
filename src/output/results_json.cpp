// write_results_json: the verdict as JSON, with the same content as the HDF5 file.
//
// {
//   "tool_version", "format_version", "seq_window", "analyzer_ranks", "process_count",
//   "created_utc", "input", "status", "reduce_path", "mpi_transport", "command", "notes": [..],
//   "culprits": [{..}], "processes": [{..}], "comm_ranks": [{..}], "edges": [{..}],
//   "chains": [{..}], "inputs": [{..}]
// }
// Table rows are objects with the CONTRACT field names. The number of processes is
// "process_count" (the HDF5 attribute `processes`), since "processes" is the table.
// The header is completed as in the HDF5 file (run_info_defaults.hpp).
// comm_hash is an unsigned integer; strings are not truncated; invalid UTF-8 is replaced
// by U+FFFD; non-finite numbers become null.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "output/atomic_file.hpp"
#include "output/results_io.hpp"
#include "output/run_info_defaults.hpp"

namespace culprit {
namespace {

using json = nlohmann::ordered_json;

json to_json(const ProcessRow& p) {
  return json{{"process_id", p.process_id},
              {"host", p.host},
              {"pid", p.pid},
              {"rank", p.rank},
              {"label", p.label},
              {"role", p.role},
              {"culprit_class", p.culprit_class},
              {"attributed_root", p.attributed_root},
              {"chain_depth", p.chain_depth},
              {"wait_ns", p.wait_ns},
              {"blame_ns", p.blame_ns},
              {"score", p.score}};
}

json to_json(const CommRankRow& c) {
  return json{{"comm_hash", c.comm_hash},
              {"comm_rank", c.comm_rank},
              {"n_ranks", c.n_ranks},
              {"process_id", c.process_id}};
}

json to_json(const EdgeRow& e) {
  return json{{"comm_hash", e.comm_hash},
              {"channel", e.channel},
              {"src_process", e.src_process},
              {"dst_process", e.dst_process},
              {"src_rank", e.src_rank},
              {"dst_rank", e.dst_rank},
              {"send_gpu_wait_ns", e.send_gpu_wait_ns},
              {"send_peer_wait_ns", e.send_peer_wait_ns},
              {"send_wait_ns", e.send_wait_ns},
              {"recv_wait_ns", e.recv_wait_ns},
              {"recv_flush_wait_ns", e.recv_flush_wait_ns},
              {"recv_gpu_wait_ns", e.recv_gpu_wait_ns},
              {"send_steps", e.send_steps},
              {"recv_steps", e.recv_steps},
              {"bytes", e.bytes},
              {"verdict", e.verdict}};
}

json to_json(const CulpritRow& c) {
  return json{{"process_id", c.process_id},
              {"host", c.host},
              {"pid", c.pid},
              {"culprit_class", c.culprit_class},
              {"peer_process_id", c.peer_process_id},
              {"blame_ns", c.blame_ns},
              {"blame_share", c.blame_share},
              {"job_share", c.job_share},
              {"victims", c.victims},
              {"margin", c.margin},
              {"evidence", c.evidence},
              {"score", c.score}};
}

json to_json(const ChainRow& c) {
  return json{{"victim", c.victim}, {"hop", c.hop}, {"process_id", c.process_id}};
}

json to_json(const InputRow& i) {
  return json{{"host", i.host},
              {"path", i.path},
              {"format", i.format},
              {"records", i.records},
              {"rejected", i.rejected}};
}

template <class Row>
json table(const std::vector<Row>& rows) {
  json out = json::array();
  for (const Row& row : rows) out.push_back(to_json(row));
  return out;
}

json to_json(const AnalysisResults& r) {
  const RunInfo info = completed_run_info(r.info);
  json j;
  j["tool_version"] = info.tool_version;
  j["format_version"] = info.format_version;
  j["seq_window"] = info.seq_window;
  j["analyzer_ranks"] = info.analyzer_ranks;
  j["process_count"] = info.processes;
  j["created_utc"] = info.created_utc;
  j["input"] = info.input;
  j["status"] = info.status;
  j["reduce_path"] = info.reduce_path;
  j["mpi_transport"] = info.mpi_transport;
  j["command"] = info.command;
  j["notes"] = info.notes;
  j["culprits"] = table(r.culprits);
  j["processes"] = table(r.processes);
  j["comm_ranks"] = table(r.comm_ranks);
  j["edges"] = table(r.edges);
  j["chains"] = table(r.chains);
  j["inputs"] = table(r.inputs);
  return j;
}

void write_text(const std::string& file_path, const std::string& text) {
  std::ofstream out(file_path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot create '" + file_path + "': " + std::strerror(errno));
  out << text << '\n';
  out.flush();
  if (!out) throw std::runtime_error("cannot write '" + file_path + "'");
  out.close();
  if (!out) throw std::runtime_error("cannot close '" + file_path + "'");
}

}  // namespace

void write_results_json(const AnalysisResults& results, const std::string& path) {
  if (path.empty()) throw std::runtime_error("cannot write JSON results: empty file name");
  const std::string temp = temporary_name_for(path);
  try {
    const std::string text =
        to_json(results).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    write_text(temp, text);
    commit_temporary(temp, path);
  } catch (const std::exception& e) {
    remove_quietly(temp);
    throw std::runtime_error("cannot write JSON results '" + path + "': " + e.what());
  }
}

}  // namespace culprit
