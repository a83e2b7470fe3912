// The HDF5 compound types of the results file (CONTRACT.md, "Results file"), one POD record
// and one field list per table, and the conversions between those records and the rows of
// core/results.hpp.
//
// Each table has a fixed field list {name, kind, offset in the POD record}. From it,
// make_compound() builds either
//   - the memory type: native types at the record's own offsets (offsetof), size sizeof(record);
//   - the file type: little-endian standard types (STD_U32LE, STD_I32LE, STD_I64LE, STD_U64LE,
//     IEEE_F64LE) and fixed-length strings, packed one after the other in CONTRACT order.
// HDF5 converts between the two by member name on write and on read.
//
// Strings: fixed length (str16/str24/str64/str256), NUL-padded (H5T_STR_NULLPAD), ASCII
// character set. A value longer than the field is truncated to field size - 1 bytes (so every
// stored string keeps a terminating NUL for C readers), cut back further so that a UTF-8
// multi-byte sequence is never split.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/results.hpp"
#include "output/h5_handle.hpp"

namespace culprit::h5 {

inline constexpr std::size_t kStr16 = 16;
inline constexpr std::size_t kStr24 = 24;
inline constexpr std::size_t kStr32 = 32;
inline constexpr std::size_t kStr64 = 64;
inline constexpr std::size_t kStr256 = 256;

enum class Kind { U32, I32, I64, U64, F64, Str };

struct Field {
  const char* name;
  Kind kind;
  std::size_t offset;    // offset in the POD record (memory layout)
  std::size_t str_size;  // fixed length for Kind::Str, else 0
  bool optional = false; // files of earlier versions lack it: read as the record's default
};

enum class Layout { Memory, File };

// ---- POD records (memory layout) ---------------------------------------------------------

struct ProcessRec {
  uint32_t process_id;
  char host[kStr64];
  int64_t pid;
  int64_t rank;
  char label[kStr32];
  char role[kStr16];
  char culprit_class[kStr24];
  int64_t attributed_root;
  int32_t chain_depth;
  uint64_t wait_ns;
  uint64_t blame_ns;
  double score;
};

struct CommRankRec {
  uint64_t comm_hash;
  int32_t comm_rank;
  int32_t n_ranks;
  uint32_t process_id;
};

struct EdgeRec {
  uint64_t comm_hash;
  int32_t channel;
  uint32_t src_process;
  uint32_t dst_process;
  int32_t src_rank;
  int32_t dst_rank;
  uint64_t send_gpu_wait_ns;
  uint64_t send_peer_wait_ns;
  uint64_t send_wait_ns;
  uint64_t recv_wait_ns;
  uint64_t recv_flush_wait_ns;
  uint64_t recv_gpu_wait_ns;
  uint64_t send_steps;
  uint64_t recv_steps;
  uint64_t bytes;
  char verdict[kStr16];
};

struct CulpritRec {
  uint32_t process_id;
  char host[kStr64];
  int64_t pid;
  char culprit_class[kStr24];
  int64_t peer_process_id;
  uint64_t blame_ns;
  double blame_share;
  double job_share;
  uint32_t victims;
  double score;
};

struct ChainRec {
  uint32_t victim;
  uint32_t hop;
  uint32_t process_id;
};

struct InputRec {
  char host[kStr64];
  char path[kStr256];
  char format[kStr16];
  uint64_t records;
  uint64_t rejected;
};

// ---- field lists (CONTRACT order) -----------------------------------------------------------

std::span<const Field> process_fields();
std::span<const Field> comm_rank_fields();
std::span<const Field> edge_fields();
std::span<const Field> culprit_fields();
std::span<const Field> chain_fields();
std::span<const Field> input_fields();

// ---- compound types -------------------------------------------------------------------------

Handle make_compound(std::span<const Field> fields, std::size_t record_size, Layout layout);

Handle process_type(Layout layout);
Handle comm_rank_type(Layout layout);
Handle edge_type(Layout layout);
Handle culprit_type(Layout layout);
Handle chain_type(Layout layout);
Handle input_type(Layout layout);

// Fixed-length NUL-padded ASCII string type of `size` bytes (size >= 1).
Handle string_type(std::size_t size);

// ---- strings ----------------------------------------------------------------------------------

// Copies `value` into the fixed field `dst[size]`: truncated as described above, NUL-padded.
void put_string(char* dst, std::size_t size, const std::string& value);
// Reads a fixed field back: up to the first NUL, at most `size` bytes.
std::string get_string(const char* src, std::size_t size);

// The number of bytes of `value` kept in a field of `size` bytes (see put_string).
std::size_t truncated_length(const std::string& value, std::size_t size);

// ---- rows <-> records -------------------------------------------------------------------------

ProcessRec to_record(const ProcessRow& row);
CommRankRec to_record(const CommRankRow& row);
EdgeRec to_record(const EdgeRow& row);
CulpritRec to_record(const CulpritRow& row);
ChainRec to_record(const ChainRow& row);
InputRec to_record(const InputRow& row);

ProcessRow from_record(const ProcessRec& rec);
CommRankRow from_record(const CommRankRec& rec);
EdgeRow from_record(const EdgeRec& rec);
CulpritRow from_record(const CulpritRec& rec);
ChainRow from_record(const ChainRec& rec);
InputRow from_record(const InputRec& rec);

}  // namespace culprit::h5
