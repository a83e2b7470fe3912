#include "output/h5_types.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace culprit::h5 {
namespace {

static_assert(std::is_standard_layout_v<ProcessRec> && std::is_trivially_copyable_v<ProcessRec>);
static_assert(std::is_standard_layout_v<CommRankRec> && std::is_trivially_copyable_v<CommRankRec>);
static_assert(std::is_standard_layout_v<EdgeRec> && std::is_trivially_copyable_v<EdgeRec>);
static_assert(std::is_standard_layout_v<CulpritRec> && std::is_trivially_copyable_v<CulpritRec>);
static_assert(std::is_standard_layout_v<ChainRec> && std::is_trivially_copyable_v<ChainRec>);
static_assert(std::is_standard_layout_v<InputRec> && std::is_trivially_copyable_v<InputRec>);

#define CULPRIT_FIELD(Rec, member, kind) \
  Field { #member, Kind::kind, offsetof(Rec, member), 0 }
#define CULPRIT_STR_FIELD(Rec, member) \
  Field { #member, Kind::Str, offsetof(Rec, member), sizeof(Rec::member) }
#define CULPRIT_OPTIONAL_FIELD(Rec, member, kind) \
  Field { #member, Kind::kind, offsetof(Rec, member), 0, true }
#define CULPRIT_OPTIONAL_STR_FIELD(Rec, member) \
  Field { #member, Kind::Str, offsetof(Rec, member), sizeof(Rec::member), true }

constexpr std::array kProcessFields{
    CULPRIT_FIELD(ProcessRec, process_id, U32),
    CULPRIT_STR_FIELD(ProcessRec, host),
    CULPRIT_FIELD(ProcessRec, pid, I64),
    CULPRIT_OPTIONAL_FIELD(ProcessRec, rank, I64),
    CULPRIT_OPTIONAL_STR_FIELD(ProcessRec, label),
    CULPRIT_STR_FIELD(ProcessRec, role),
    CULPRIT_STR_FIELD(ProcessRec, culprit_class),
    CULPRIT_FIELD(ProcessRec, attributed_root, I64),
    CULPRIT_FIELD(ProcessRec, chain_depth, I32),
    CULPRIT_FIELD(ProcessRec, wait_ns, U64),
    CULPRIT_FIELD(ProcessRec, blame_ns, U64),
    CULPRIT_FIELD(ProcessRec, score, F64),  // one field per line, in CONTRACT order
};

constexpr std::array kCommRankFields{
    CULPRIT_FIELD(CommRankRec, comm_hash, U64),
    CULPRIT_FIELD(CommRankRec, comm_rank, I32),
    CULPRIT_FIELD(CommRankRec, n_ranks, I32),
    CULPRIT_FIELD(CommRankRec, process_id, U32),
};

constexpr std::array kEdgeFields{
    CULPRIT_FIELD(EdgeRec, comm_hash, U64),
    CULPRIT_FIELD(EdgeRec, channel, I32),
    CULPRIT_FIELD(EdgeRec, src_process, U32),
    CULPRIT_FIELD(EdgeRec, dst_process, U32),
    CULPRIT_FIELD(EdgeRec, src_rank, I32),
    CULPRIT_FIELD(EdgeRec, dst_rank, I32),
    CULPRIT_FIELD(EdgeRec, send_gpu_wait_ns, U64),
    CULPRIT_FIELD(EdgeRec, send_peer_wait_ns, U64),
    CULPRIT_FIELD(EdgeRec, send_wait_ns, U64),
    CULPRIT_FIELD(EdgeRec, recv_wait_ns, U64),
    CULPRIT_FIELD(EdgeRec, recv_flush_wait_ns, U64),
    CULPRIT_FIELD(EdgeRec, recv_gpu_wait_ns, U64),
    CULPRIT_FIELD(EdgeRec, send_steps, U64),
    CULPRIT_FIELD(EdgeRec, recv_steps, U64),
    CULPRIT_FIELD(EdgeRec, bytes, U64),
    CULPRIT_STR_FIELD(EdgeRec, verdict),
};

constexpr std::array kCulpritFields{
    CULPRIT_FIELD(CulpritRec, process_id, U32),
    CULPRIT_STR_FIELD(CulpritRec, host),
    CULPRIT_FIELD(CulpritRec, pid, I64),
    CULPRIT_STR_FIELD(CulpritRec, culprit_class),
    CULPRIT_FIELD(CulpritRec, peer_process_id, I64),
    CULPRIT_FIELD(CulpritRec, blame_ns, U64),
    CULPRIT_FIELD(CulpritRec, blame_share, F64),
    CULPRIT_OPTIONAL_FIELD(CulpritRec, job_share, F64),
    CULPRIT_FIELD(CulpritRec, victims, U32),
    CULPRIT_FIELD(CulpritRec, score, F64),
};

constexpr std::array kChainFields{
    CULPRIT_FIELD(ChainRec, victim, U32),
    CULPRIT_FIELD(ChainRec, hop, U32),
    CULPRIT_FIELD(ChainRec, process_id, U32),
};

constexpr std::array kInputFields{
    CULPRIT_STR_FIELD(InputRec, host),
    CULPRIT_STR_FIELD(InputRec, path),
    CULPRIT_STR_FIELD(InputRec, format),
    CULPRIT_FIELD(InputRec, records, U64),
    CULPRIT_FIELD(InputRec, rejected, U64),  // one field per line
};

#undef CULPRIT_FIELD
#undef CULPRIT_STR_FIELD

// The predefined type of a numeric field (not owned: predefined types are never closed).
hid_t numeric_type(Kind kind, Layout layout) {
  const bool mem = layout == Layout::Memory;
  switch (kind) {
    case Kind::U32:
      return mem ? H5T_NATIVE_UINT32 : H5T_STD_U32LE;
    case Kind::I32:
      return mem ? H5T_NATIVE_INT32 : H5T_STD_I32LE;
    case Kind::I64:
      return mem ? H5T_NATIVE_INT64 : H5T_STD_I64LE;
    case Kind::U64:
      return mem ? H5T_NATIVE_UINT64 : H5T_STD_U64LE;
    case Kind::F64:
      return mem ? H5T_NATIVE_DOUBLE : H5T_IEEE_F64LE;
    case Kind::Str:
      break;
  }
  throw std::logic_error("numeric_type: not a numeric field kind");
}

std::size_t field_size(const Field& f) {
  switch (f.kind) {
    case Kind::U32:
    case Kind::I32:
      return 4;
    case Kind::I64:
    case Kind::U64:
    case Kind::F64:
      return 8;
    case Kind::Str:
      return f.str_size;
  }
  return 0;
}

}  // namespace

std::span<const Field> process_fields() { return kProcessFields; }
std::span<const Field> comm_rank_fields() { return kCommRankFields; }
std::span<const Field> edge_fields() { return kEdgeFields; }
std::span<const Field> culprit_fields() { return kCulpritFields; }
std::span<const Field> chain_fields() { return kChainFields; }
std::span<const Field> input_fields() { return kInputFields; }

Handle string_type(std::size_t size) {
  Handle t(H5Tcopy(H5T_C_S1), "copying the string type");
  check(H5Tset_size(t.get(), std::max<std::size_t>(size, 1)), "setting a string size");
  check(H5Tset_strpad(t.get(), H5T_STR_NULLPAD), "setting string padding");
  check(H5Tset_cset(t.get(), H5T_CSET_ASCII), "setting string character set");
  return t;
}

Handle make_compound(std::span<const Field> fields, std::size_t record_size, Layout layout) {
  std::size_t total = 0;
  if (layout == Layout::Memory) {
    total = record_size;
  } else {
    for (const Field& f : fields) total += field_size(f);
  }
  Handle t(H5Tcreate(H5T_COMPOUND, total), "creating a compound type");
  std::size_t packed_offset = 0;
  for (const Field& f : fields) {
    const std::size_t offset = layout == Layout::Memory ? f.offset : packed_offset;
    const std::string what = std::string("adding field '") + f.name + "'";
    if (f.kind == Kind::Str) {
      Handle s = string_type(f.str_size);
      check(H5Tinsert(t.get(), f.name, offset, s.get()), what);
    } else {
      check(H5Tinsert(t.get(), f.name, offset, numeric_type(f.kind, layout)), what);
    }
    packed_offset += field_size(f);
  }
  return t;
}

Handle process_type(Layout l) { return make_compound(kProcessFields, sizeof(ProcessRec), l); }
Handle comm_rank_type(Layout l) { return make_compound(kCommRankFields, sizeof(CommRankRec), l); }
Handle edge_type(Layout l) { return make_compound(kEdgeFields, sizeof(EdgeRec), l); }
Handle culprit_type(Layout l) { return make_compound(kCulpritFields, sizeof(CulpritRec), l); }
Handle chain_type(Layout l) { return make_compound(kChainFields, sizeof(ChainRec), l); }
Handle input_type(Layout l) { return make_compound(kInputFields, sizeof(InputRec), l); }

// ---- strings ----------------------------------------------------------------------------------

std::size_t truncated_length(const std::string& value, std::size_t size) {
  if (size == 0) return 0;
  // Stop at an embedded NUL: the reader could not see past it anyway.
  std::size_t n = std::min(value.size(), std::strlen(value.c_str()));
  if (n <= size - 1) return n;
  n = size - 1;
  // Do not cut a UTF-8 sequence: back off over continuation bytes (10xxxxxx) and the lead byte.
  std::size_t cut = n;
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

void put_string(char* dst, std::size_t size, const std::string& value) {
  std::memset(dst, 0, size);
  std::memcpy(dst, value.data(), truncated_length(value, size));
}

std::string get_string(const char* src, std::size_t size) {
  const void* nul = std::memchr(src, '\0', size);
  const std::size_t n = nul ? static_cast<std::size_t>(static_cast<const char*>(nul) - src) : size;
  return std::string(src, n);
}

// ---- rows <-> records -------------------------------------------------------------------------

#define CULPRIT_PUT(rec, row, member) put_string(rec.member, sizeof(rec.member), row.member)
#define CULPRIT_GET(rec, member) get_string(rec.member, sizeof(rec.member))

ProcessRec to_record(const ProcessRow& row) {
  ProcessRec rec{};
  rec.process_id = row.process_id;
  CULPRIT_PUT(rec, row, host);
  rec.pid = row.pid;
  rec.rank = row.rank;
  CULPRIT_PUT(rec, row, label);
  CULPRIT_PUT(rec, row, role);
  CULPRIT_PUT(rec, row, culprit_class);
  rec.attributed_root = row.attributed_root;
  rec.chain_depth = row.chain_depth;
  rec.wait_ns = row.wait_ns;
  rec.blame_ns = row.blame_ns;
  rec.score = row.score;
  return rec;
}

ProcessRow from_record(const ProcessRec& rec) {
  ProcessRow row;
  row.process_id = rec.process_id;
  row.host = CULPRIT_GET(rec, host);
  row.pid = rec.pid;
  row.rank = rec.rank;
  row.label = CULPRIT_GET(rec, label);
  row.role = CULPRIT_GET(rec, role);
  row.culprit_class = CULPRIT_GET(rec, culprit_class);
  row.attributed_root = rec.attributed_root;
  row.chain_depth = rec.chain_depth;
  row.wait_ns = rec.wait_ns;
  row.blame_ns = rec.blame_ns;
  row.score = rec.score;
  return row;
}

CommRankRec to_record(const CommRankRow& row) {
  CommRankRec rec{};
  rec.comm_hash = row.comm_hash;
  rec.comm_rank = row.comm_rank;
  rec.n_ranks = row.n_ranks;
  rec.process_id = row.process_id;
  return rec;
}

CommRankRow from_record(const CommRankRec& rec) {
  CommRankRow row;
  row.comm_hash = rec.comm_hash;
  row.comm_rank = rec.comm_rank;
  row.n_ranks = rec.n_ranks;
  row.process_id = rec.process_id;
  return row;
}

EdgeRec to_record(const EdgeRow& row) {
  EdgeRec rec{};
  rec.comm_hash = row.comm_hash;
  rec.channel = row.channel;
  rec.src_process = row.src_process;
  rec.dst_process = row.dst_process;
  rec.src_rank = row.src_rank;
  rec.dst_rank = row.dst_rank;
  rec.send_gpu_wait_ns = row.send_gpu_wait_ns;
  rec.send_peer_wait_ns = row.send_peer_wait_ns;
  rec.send_wait_ns = row.send_wait_ns;
  rec.recv_wait_ns = row.recv_wait_ns;
  rec.recv_flush_wait_ns = row.recv_flush_wait_ns;
  rec.recv_gpu_wait_ns = row.recv_gpu_wait_ns;
  rec.send_steps = row.send_steps;
  rec.recv_steps = row.recv_steps;
  rec.bytes = row.bytes;
  CULPRIT_PUT(rec, row, verdict);
  return rec;
}

EdgeRow from_record(const EdgeRec& rec) {
  EdgeRow row;
  row.comm_hash = rec.comm_hash;
  row.channel = rec.channel;
  row.src_process = rec.src_process;
  row.dst_process = rec.dst_process;
  row.src_rank = rec.src_rank;
  row.dst_rank = rec.dst_rank;
  row.send_gpu_wait_ns = rec.send_gpu_wait_ns;
  row.send_peer_wait_ns = rec.send_peer_wait_ns;
  row.send_wait_ns = rec.send_wait_ns;
  row.recv_wait_ns = rec.recv_wait_ns;
  row.recv_flush_wait_ns = rec.recv_flush_wait_ns;
  row.recv_gpu_wait_ns = rec.recv_gpu_wait_ns;
  row.send_steps = rec.send_steps;
  row.recv_steps = rec.recv_steps;
  row.bytes = rec.bytes;
  row.verdict = CULPRIT_GET(rec, verdict);
  return row;
}

CulpritRec to_record(const CulpritRow& row) {
  CulpritRec rec{};
  rec.process_id = row.process_id;
  CULPRIT_PUT(rec, row, host);
  rec.pid = row.pid;
  CULPRIT_PUT(rec, row, culprit_class);
  rec.peer_process_id = row.peer_process_id;
  rec.blame_ns = row.blame_ns;
  rec.blame_share = row.blame_share;
  rec.job_share = row.job_share;
  rec.victims = row.victims;
  rec.score = row.score;
  return rec;
}

CulpritRow from_record(const CulpritRec& rec) {
  CulpritRow row;
  row.process_id = rec.process_id;
  row.host = CULPRIT_GET(rec, host);
  row.pid = rec.pid;
  row.culprit_class = CULPRIT_GET(rec, culprit_class);
  row.peer_process_id = rec.peer_process_id;
  row.blame_ns = rec.blame_ns;
  row.blame_share = rec.blame_share;
  row.job_share = rec.job_share;
  row.victims = rec.victims;
  row.score = rec.score;
  return row;
}

ChainRec to_record(const ChainRow& row) {
  ChainRec rec{};
  rec.victim = row.victim;
  rec.hop = row.hop;
  rec.process_id = row.process_id;
  return rec;
}

ChainRow from_record(const ChainRec& rec) {
  ChainRow row;
  row.victim = rec.victim;
  row.hop = rec.hop;
  row.process_id = rec.process_id;
  return row;
}

InputRec to_record(const InputRow& row) {
  InputRec rec{};
  CULPRIT_PUT(rec, row, host);
  CULPRIT_PUT(rec, row, path);
  CULPRIT_PUT(rec, row, format);
  rec.records = row.records;
  rec.rejected = row.rejected;
  return rec;
}

InputRow from_record(const InputRec& rec) {
  InputRow row;
  row.host = CULPRIT_GET(rec, host);
  row.path = CULPRIT_GET(rec, path);
  row.format = CULPRIT_GET(rec, format);
  row.records = rec.records;
  row.rejected = rec.rejected;
  return row;
}

#undef CULPRIT_PUT
#undef CULPRIT_GET

}  // namespace culprit::h5
