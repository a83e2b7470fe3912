// Rendering of the simulated timeline as PyTorch Flight Recorder dumps (FORMATS.md §6): one
// file per process, `nccl_trace_rank_<global rank>`, taken at the dump time (a hang: when the
// watchdog fired; else the end of the run).
//
// What the rendering reproduces of real dumps:
// - each communicator is a process group named by a job-wide number in creation order, its
//   `ranks` a string of global ranks; the dump's pg_ids are local (the rank's own groups,
//   in creation order), so that only names join ranks;
// - pg_status counts a group's collectives, and in groups with sends and receives its
//   point-to-point operations (as PyTorch 2.9 does);
// - entries: collectives with collective_seq_id, sends/receives with p2p_seq_id and
//   `nccl:send a->b` / `nccl:recv a<-b` names in group ranks; state scheduled or completed;
// - the ring buffer keeps the newest `buffer` entries (ranks wrap at different points), and
//   only the unfinished ones by default (TORCH_INCLUDE_ONLY_ACTIVE=1);
// - the pickle form (protocol 2) or the JSON form (pg_status numbers as strings, an empty
//   entries key dropped), schema 1.x (a list of entries), 2.2-2.9 or 2.10
//   (comm_lib_version for nccl_version).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "mock/simulator.hpp"

namespace culprit::mock {

struct FlightRecorderExport {
  bool json = false;            // the JSON form instead of the pickle
  std::string version = "2.9";  // schema: 1.0 | 2.2 ... 2.10
  bool only_active = true;      // only unfinished entries (TORCH_INCLUDE_ONLY_ACTIVE=1)
  size_t buffer = 2000;         // ring-buffer entries (TORCH_NCCL_TRACE_BUFFER_SIZE)
  std::set<int> missing;        // ranks that write no dump
  std::set<int> empty;          // ranks whose dump is 0 bytes
  std::set<int> mismatch;       // ranks whose newest unfinished collective has other sizes
  bool traces = false;          // the profiler's traces beside the dumps (one job, both inputs)
};

// Parses `mock --format`: "flight-recorder", then options joined by '+': json, v<schema>
// (v1.0, v2.2 ... v2.10), all (every entry, not only unfinished ones), buffer=N,
// missing=R, empty=R, mismatch=R, traces (NCCL trace files too). Throws std::invalid_argument on anything else.
FlightRecorderExport parse_flight_recorder_format(const std::string& format);

// The dumps of one host's processes.
std::vector<RenderedFile> render_host_flight_recorder(const Simulation& sim, int node, const FlightRecorderExport& how);
// The same from that node's records (sim.node_timeline(node)).
std::vector<RenderedFile> render_host_flight_recorder(const Simulation& sim, const NodeTimeline& timeline,
                                                      const FlightRecorderExport& how);

}  // namespace culprit::mock
