// The verdict of one analysis, shaped like the HDF5 results file of CONTRACT.md.
// Rank 0 fills it; the HDF5 writer, the JSON writer and the text report all read it, and
// the HDF5 reader (for `nccl-culprit report`) fills it back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace culprit {

struct ProcessRow {
  uint32_t process_id = 0;          // row index
  std::string host;                 // <= 63 chars in the file
  int64_t pid = -1;                 // -1 when no input names it
  int64_t rank = -1;                // global rank when an input names it, else -1
  std::string label;                // what names it when pid and rank are unknown (<= 31 chars)
  std::string role = "healthy";     // culprit | victim | healthy
  std::string culprit_class = "none";  // gpu_producer | gpu_consumer | network_link | flush | hang | none
  int64_t attributed_root = -1;     // process_id of its root, -1 if none
  int32_t chain_depth = 0;          // hops from this victim to its root (0 for roots/healthy)
  uint64_t wait_ns = 0;             // time it spent waiting on others (excess)
  uint64_t blame_ns = 0;            // others' wait attributed to it as a root
  double score = 0.0;               // in [0,1]
};

struct CommRankRow {
  uint64_t comm_hash = 0;
  int32_t comm_rank = -1;
  int32_t n_ranks = 0;
  uint32_t process_id = 0;
};

struct EdgeRow {
  uint64_t comm_hash = 0;
  int32_t channel = -1;
  uint32_t src_process = 0;
  uint32_t dst_process = 0;
  int32_t src_rank = -1;
  int32_t dst_rank = -1;
  uint64_t send_gpu_wait_ns = 0;
  uint64_t send_peer_wait_ns = 0;
  uint64_t send_wait_ns = 0;
  uint64_t recv_wait_ns = 0;
  uint64_t recv_flush_wait_ns = 0;
  uint64_t recv_gpu_wait_ns = 0;
  uint64_t send_steps = 0;
  uint64_t recv_steps = 0;
  uint64_t bytes = 0;
  std::string verdict = "normal";   // normal | late_data | no_credit | slow_link | slow_flush
};

struct CulpritRow {
  uint32_t process_id = 0;
  std::string host;
  int64_t pid = 0;
  std::string culprit_class;
  int64_t peer_process_id = -1;     // other end of a network_link, else -1
  uint64_t blame_ns = 0;
  double blame_share = 0.0;         // blame_ns / total blame of all culprits
  double job_share = 0.0;           // its cost / all processes' time inside NCCL (NaN: not measurable)
  uint32_t victims = 0;
  double score = 0.0;
  double margin = 0.0;  // how many times its test's tightest guard the evidence clears (inf: hang); JSON only
  std::string evidence;  // which input named it: profiler | flight recorder | flight recorder + profiler; JSON only
};

struct ChainRow {
  uint32_t victim = 0;
  uint32_t hop = 0;                 // 0 = the victim itself, last = the root
  uint32_t process_id = 0;
};

struct InputRow {
  std::string host;
  std::string path;                 // <= 255 chars in the file
  std::string format;               // nccl-json | probing-csv | probing-json | shard | mock
  uint64_t records = 0;
  uint64_t rejected = 0;
};

struct RunInfo {
  std::string tool_version;
  int32_t format_version = 1;
  int32_t seq_window = 20;
  int32_t analyzer_ranks = 1;
  int32_t processes = 0;
  std::string created_utc;          // ISO 8601
  std::string input;                // what was analysed (directory or mock spec)
  std::string status = "ok";        // ok | partial
  std::string reduce_path = "cpu";  // cpu | cuda (extra attribute)
  std::string mpi_transport;        // what carried the tool's own MPI traffic (extra attribute)
  std::string command;              // the command line that reproduces this verdict (extra attribute)
  std::vector<std::string> notes;   // human-readable remarks for the report (not in HDF5)
};

struct AnalysisResults {
  RunInfo info;
  std::vector<ProcessRow> processes;
  std::vector<CommRankRow> comm_ranks;
  std::vector<EdgeRow> edges;
  std::vector<CulpritRow> culprits;  // most blame first
  std::vector<ChainRow> chains;
  std::vector<InputRow> inputs;
};

}  // namespace culprit
