// Rendering of the simulated timeline as probing's SQL exports (FORMATS.md §3): the
// nccl.proxy_ops, nccl.inflight_ops, nccl.coll_perf and nccl.net_qp tables of one host, as
// `probing ... query "SELECT * FROM [global.]nccl.<table>" -f csv|json` writes them.
//
// What the rendering reproduces of real exports:
// - a header row (CSV) or an array of row objects (JSON), columns in the table's order;
// - `rank` and `peer` are communicator ranks; p2p rows have seq 0; there is no pid column;
// - the global fan-out tags (_host, _addr, _rank, _node_rank, _local_rank, _role), or none;
// - probing's converter leaves unsigned 64-bit columns (comm_hash, seq, trans_bytes) empty
//   (CSV) or null (JSON); or the user cast them to BIGINT (hashes >= 2^63 negative);
// - an operation that never stopped (hang) has no proxy_ops or coll_perf row: the watchdog
//   snapshots it into inflight_ops at the dump time, with its age.
// Timestamps are nanoseconds since the UNIX epoch (the simulation clock plus a fixed base).
#pragma once

#include <string>
#include <vector>

#include "mock/simulator.hpp"

namespace culprit::mock {

enum class UnsignedCells { kAsIs, kBlank, kCastSigned };

struct ProbingExport {
  bool json = false;                 // -f json instead of -f csv
  bool tags = true;                  // global.* tables: the federation columns
  UnsignedCells unsigned_cells = UnsignedCells::kAsIs;
  bool proxy_ops = true;
  bool inflight_ops = true;          // written only when some operation is alive at the dump
  bool coll_perf = false;
  bool coll_perf_proxy = false;      // coll_perf timed as without kernel events: proxy ops, else enqueue
  bool net_qp = false;               // IB work requests (NCCL's net plugin events, probing's mask bit 128)
};

// Parses `mock --format`: "probing-csv" or "probing-json", then options joined by '+':
// untagged, blank (unsigned cells empty/null), cast (CAST AS BIGINT), coll_perf and net_qp (add
// the table), coll_perf_proxy (coll_perf timed as probing does without kernel events: by the
// rank's proxy ops, else the host's enqueue call), no_proxy_ops, no_inflight. Throws
// std::invalid_argument on anything else.
ProbingExport parse_probing_format(const std::string& format);

// The export files of one host: proxy_ops.{csv,json}, inflight_ops.*, coll_perf.*, net_qp.*.
std::vector<RenderedFile> render_host_probing(const Simulation& sim, int node, const ProbingExport& how);
// The same from that node's records (sim.node_timeline(node)).
std::vector<RenderedFile> render_host_probing(const Simulation& sim, const NodeTimeline& timeline,
                                              const ProbingExport& how);

}  // namespace culprit::mock
