// The row model of probing's exports (FORMATS.md §3), shared by the CSV and the JSON reader:
// a row is a set of named cells, whatever the file's syntax. ProbingRows turns the rows of
// one file into records (nccl.proxy_ops -> ProxyOpRecord, nccl.net_qp -> QpStat,
// nccl.inflight_ops -> InflightRecord, nccl.coll_perf -> KernelStartRecord), names their
// processes once the whole file is known, and says in InputReport::notes what it assumed.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/local_data.hpp"
#include "io/profiler_counters.hpp"

namespace culprit {

// Every column the readers use, of all four tables and the federation tags.
enum ProbingColumn : int {
  kColTs, kColRank, kColTpRank, kColPpRank, kColDpRank, kColCommHash, kColCollFunc, kColSeq,
  kColChannel, kColPeer, kColIsSend, kColSteps, kColBytes,
  kColSendGpuWait, kColSendPeerWait, kColSendWait, kColRecvWait, kColRecvFlushWait,
  kColRecvGpuWait,  // not in probing; read if a site adds it
  kColHost, kColGlobalRank, kColPid,
  kColDevice, kColQpNum, kColLength, kColDuration,
  kColKind, kColAge,
  kColIsP2p, kColExecTime, kColTimingSource, kColPoolDropped, kColAlgo,
  kColPoolExhausted, kColWriteErrors, kColRowsOverwritten,
  kProbingColumnCount,
};

// The column a header name or JSON key stands for, -1 for one the readers do not use.
int probing_column(std::string_view name);

// Where each column is in a row's cells; -1: the file has no such column.
using ProbingColumns = std::array<int, kProbingColumnCount>;

enum class ProbingTable : uint8_t { kUnknown, kProxyOps, kNetQp, kInflightOps, kCollPerf, kProfilerCounters };

// The table whose columns these are (kUnknown when none).
ProbingTable probing_table_of(const ProbingColumns& columns);

// An empty cell or a null written as text: what probing's converter leaves in the
// unsigned columns (comm_hash, seq, trans_bytes; wr_id, length).
bool probing_blank(std::string_view cell);

// A comm_hash cell: unsigned decimal, or the negative value of a CAST(... AS BIGINT) export
// of a hash >= 2^63, taken back as the same 64 bits. False on anything else.
bool parse_comm_hash(std::string_view cell, uint64_t* out, bool* negative);

class ProbingRows {
 public:
  // The rows of file `path` of node `host`, in `format` "probing-csv" or "probing-json".
  ProbingRows(const std::string& path, const std::string& host, const char* format, LocalData& data);

  // The file's report, appended to data.inputs by finish().
  InputReport& report() { return report_; }

  // The columns of the rows that follow. The first call decides the table (false, with the
  // file's error set, when they are no probing table's); later calls only move columns.
  bool set_columns(const ProbingColumns& columns);
  ProbingTable table() const { return table_; }
  void add_note(std::string note) { extra_notes_.push_back(std::move(note)); }

  // One row: cells[columns[c]] is column c (cells beyond n are absent).
  void row(const std::string_view* cells, size_t n);

  // Names the processes of the file's rows, drops the rows that cannot be placed, records
  // the (communicator, rank) memberships, writes reasons, notes, layout and error, and
  // appends the report to the data. Once, at the end of the file.
  void finish();

 private:
  // What names the process of a row, as far as the row knows it.
  struct Identity {
    uint32_t host = 0;  // index into hosts_
    int32_t rank = -1;  // the row's `rank` column
    int32_t tp = -1, pp = -1, dp = -1;
    int64_t pid = -1;   // > 0 when known
    int64_t global_rank = -1;
    friend bool operator==(const Identity& a, const Identity& b) {
      return a.host == b.host && a.rank == b.rank && a.tp == b.tp && a.pp == b.pp &&
             a.dp == b.dp && a.pid == b.pid && a.global_rank == b.global_rank;
    }
  };
  struct IdentityHash {
    size_t operator()(const Identity& k) const;
  };

  std::string_view cell(int column) const {
    int at = columns_[column];
    return at >= 0 && static_cast<size_t>(at) < n_cells_ ? cells_[at] : std::string_view();
  }
  bool read_rank(int32_t* rank);
  bool read_comm(uint64_t* comm);
  int read_seq(uint64_t* seq);  // 1 known, 0 blank, -1 bad
  bool read_i32(int column, int64_t lo, int32_t* out);
  uint32_t identity(int32_t rank);
  void note_comm(uint64_t comm);
  void member(uint64_t comm, int32_t rank, uint32_t id, bool collective, uint64_t seq, bool seq_known);
  void note_members();

  void proxy_op_row();
  void net_qp_row();
  void inflight_row();
  void coll_perf_row();
  void profiler_counters_row();

  int64_t place(uint32_t id, uint64_t comm);
  template <class Record> void place_all(std::vector<Record>& records, size_t begin);
  void choose_kept_communicator();
  void merge_inflight();
  void write_notes();

  const std::string& host_;
  const char* syntax_;  // "CSV" or "JSON", in the file's errors
  LocalData& data_;
  InputReport report_;
  ProbingTable table_ = ProbingTable::kUnknown;
  ProbingColumns columns_{};
  int min_cells_ = 0;
  const std::string_view* cells_ = nullptr;
  size_t n_cells_ = 0;

  // Identities of the file's rows; records carry their index as `process` until finish().
  std::vector<std::string> hosts_;  // [0] the reading node's host
  uint32_t last_host_ = 0;
  std::vector<Identity> ids_;
  std::unordered_map<Identity, uint32_t, IdentityHash> id_lookup_;
  uint32_t last_id_ = UINT32_MAX;
  std::vector<int64_t> id_process_;  // final process per identity, -1 not yet named
  // Communicators of the file (non-zero hashes), and the one kept when several cannot be
  // told apart.
  std::vector<uint64_t> comms_;
  uint64_t last_comm_ = 0;
  uint64_t kept_comm_ = 0;
  int kept_ranks_ = 0;
  bool labelled_ = false;         // some process named by tp/pp/dp

  // (communicator, rank, identity) of the rows, told to LocalData in finish().
  struct MemberKey {
    uint64_t comm;
    int32_t rank;
    uint32_t id;
    friend bool operator==(const MemberKey& a, const MemberKey& b) {
      return a.comm == b.comm && a.rank == b.rank && a.id == b.id;
    }
  };
  struct MemberKeyHash {
    size_t operator()(const MemberKey& k) const {
      return static_cast<size_t>((k.comm ^ (uint64_t{static_cast<uint32_t>(k.rank)} << 32 | k.id)) * 1099511628211ull);
    }
  };
  struct Member {
    uint64_t comm = 0;
    int32_t rank = -1;
    uint32_t id = 0;
    uint64_t newest_seq = 0;
    bool collective = false, has_seq = false;
  };
  std::vector<Member> members_;
  std::unordered_map<MemberKey, size_t, MemberKeyHash> member_lookup_;
  size_t last_member_ = SIZE_MAX;

  size_t ops_begin_ = 0, kernels_begin_ = 0;
  std::vector<InflightRecord> inflight_;  // this file's rows, merged in finish()
  uint64_t kept_rows_ = 0;

  uint64_t file_comm_ = 0;  // the unnamed communicator of a file whose comm_hash is blank
  bool blank_comm_ = false, negative_comm_ = false, blank_seq_ = false, blank_bytes_ = false;
  std::vector<std::string> timing_sources_;
  uint64_t windows_unknown_ = 0;  // coll_perf rows whose window is not the kernel's
  ProfilerCounterTally counters_;  // nccl.profiler_counters: what each rank's profiler lost
  std::vector<std::string> extra_notes_;
  std::array<uint64_t, 16> reasons_{};
};

}  // namespace culprit
