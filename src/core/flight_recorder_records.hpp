// What PyTorch Flight Recorder dumps (FORMATS.md §6) contribute, as plain records that the
// reader produces, the exchange carries to rank 0 unchanged, and the hang diagnosis reads.
//
// Process groups are joined across ranks by their name (hashed into `group`), never by the
// dump's local pg_id. Text fields are fixed-size so that every record stays trivially
// copyable; they only serve the report's explanations.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace culprit {

// Stable 64-bit FNV-1a hash of a process group's name: the same on every node.
inline uint64_t fr_group_hash(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

template <size_t N>
void fr_copy_text(char (&dst)[N], std::string_view src) {
  std::memset(dst, 0, N);
  std::memcpy(dst, src.data(), src.size() < N - 1 ? src.size() : N - 1);
}

template <size_t N>
std::string fr_text(const char (&src)[N]) {
  return std::string(src, strnlen(src, N));
}

// How far one rank got in one process group (its dump's pg_status, mapped to the group).
struct FrGroupState {
  uint64_t group = 0;             // fr_group_hash(name)
  uint32_t process = 0;           // index into the node's (after the exchange: rank 0's) processes
  int32_t global_rank = -1;       // the dumping rank
  int64_t last_enqueued = -1;     // -1: unknown
  int64_t last_started = -1;      // -1: unknown (needs TORCH_NCCL_ENABLE_TIMING)
  int64_t last_completed = -1;    // -1: unknown
  int32_t group_size = 0;         // members named by pg_config (0: unknown)
  uint8_t has_status = 0;         // pg_status named this group (else only entries or config)
  // Some entry of this group on this rank is a send or receive: PyTorch's pg_status then
  // counts the group's point-to-point operations too, so its numbers are not comparable
  // with other members' (a middle pipeline stage sends and receives twice as often).
  uint8_t has_p2p = 0;
  uint8_t pad_[2] = {0, 0};
  char name[40] = {};
  char desc[48] = {};
};
static_assert(std::is_trivially_copyable_v<FrGroupState>);

// Members of a process group (pg_config's `ranks`) as runs of evenly spaced global ranks:
// group ranks first_group_rank, first_group_rank + 1, ... hold global ranks first_rank,
// first_rank + stride, ... Parallel groups are such progressions, so a world of 16k ranks
// travels as one record, not 16k.
struct FrMemberRun {
  uint64_t group = 0;
  int32_t first_rank = -1;
  int32_t stride = 1;
  int32_t count = 0;
  int32_t first_group_rank = 0;
};
static_assert(std::is_trivially_copyable_v<FrMemberRun>);

// The runs of a member list, in group-rank order.
inline std::vector<FrMemberRun> fr_member_runs(uint64_t group, const std::vector<int64_t>& ranks) {
  std::vector<FrMemberRun> runs;
  for (size_t i = 0; i < ranks.size();) {
    FrMemberRun run{group, static_cast<int32_t>(ranks[i]), 1, 1, static_cast<int32_t>(i)};
    if (i + 1 < ranks.size()) {
      run.stride = static_cast<int32_t>(ranks[i + 1] - ranks[i]);
      while (i + static_cast<size_t>(run.count) < ranks.size() &&
             ranks[i + static_cast<size_t>(run.count)] - ranks[i + static_cast<size_t>(run.count) - 1] == run.stride)
        ++run.count;
    }
    runs.push_back(run);
    i += static_cast<size_t>(run.count);
  }
  return runs;
}

enum class FrOpState : uint8_t { kScheduled = 0, kStarted = 1, kCompleted = 2 };

// One entry of a dump's ring buffer: a collective or a send/receive of one group.
struct FrOpRecord {
  uint64_t group = 0;
  uint32_t process = 0;
  int32_t global_rank = -1;        // the dumping rank
  int64_t collective_seq = -1;     // collective_seq_id (-1 unknown)
  int64_t p2p_seq = -1;            // p2p_seq_id (-1 unknown)
  uint64_t time_created_ns = 0;    // enqueue time on the rank's clock (0 unknown)
  int32_t peer_global_rank = -1;   // send/receive: the other end, -1 unknown
  FrOpState state = FrOpState::kScheduled;
  uint8_t is_p2p = 0;
  uint8_t is_send = 0;
  uint8_t pad_ = 0;
  char op[32] = {};                // profiling_name without its peer part: "nccl:all_reduce"
  char sizes[40] = {};             // input_sizes as text, "[[4096, 5120]]"
  char dtypes[24] = {};            // input_dtypes as text
};
static_assert(std::is_trivially_copyable_v<FrOpRecord>);

}  // namespace culprit
