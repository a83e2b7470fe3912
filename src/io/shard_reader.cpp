#include "io/shard_reader.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_set>

namespace culprit {
namespace {

using namespace culprit::shard;

// A writer holds an entry for a few dozen nanoseconds; a reader that finds it busy spins a
// little, then yields, then sleeps a little (2 ms in all), then calls it torn (its writer was
// descheduled for that long, or killed inside it).
constexpr int kSpinTries = 200;
constexpr int kYieldTries = 20;
constexpr int kSleepTries = 20;  // x 100 us

enum class Read { kOk, kBusy, kTorn };

// kBusy: the entry kept changing (a live writer rewrote it while we read: no loss of
// consistency, only of that entry this time); kTorn: it stayed odd or unwritten (its writer
// is stuck inside it, or died there).
template <class T, class Accept>
Read read_stable(const T* src, T* out, Accept accept) {
  const auto* lock = reinterpret_cast<const uint64_t*>(src);
  const uint64_t first = load_relaxed(lock);
  bool changed = false;
  for (int i = 0; i < kSpinTries + kYieldTries + kSleepTries; ++i) {
    if (seq_read(src, out) && accept(*out)) return Read::kOk;
    changed = changed || load_relaxed(lock) != first;
    if (changed && i >= kSpinTries) break;  // a live writer keeps rewriting it: move on
    if (i >= kSpinTries + kYieldTries) usleep(100);
    else if (i >= kSpinTries) sched_yield();
#if defined(__x86_64__) || defined(__i386__)
    else __builtin_ia32_pause();
#endif
  }
  return changed ? Read::kBusy : Read::kTorn;
}

std::string bounded(const char* s, size_t cap) { return std::string(s, strnlen(s, cap)); }

class Mapping {
 public:
  ~Mapping() {
    if (base_ != nullptr) munmap(base_, bytes_);
  }
  bool open(const std::string& path, std::string& error) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      error = "cannot open: " + std::string(strerror(errno));
      return false;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
      error = "cannot stat: " + std::string(strerror(errno));
      ::close(fd);
      return false;
    }
    if (static_cast<uint64_t>(st.st_size) < kHeaderBytes) {
      ::close(fd);
      error = "not a live-capture shard (" + std::to_string(st.st_size) + " bytes, no header)";
      return false;
    }
    bytes_ = static_cast<size_t>(st.st_size);
    void* m = mmap(nullptr, bytes_, PROT_READ, MAP_SHARED, fd, 0);
    int e = errno;
    ::close(fd);
    if (m == MAP_FAILED) {
      error = "cannot map: " + std::string(strerror(e));
      return false;
    }
    base_ = static_cast<uint8_t*>(m);
    return true;
  }
  const uint8_t* base() const { return base_; }
  size_t bytes() const { return bytes_; }

 private:
  uint8_t* base_ = nullptr;
  size_t bytes_ = 0;
};

bool region_ok(uint64_t offset, uint64_t count, uint64_t size, uint64_t file) {
  if (offset % 8 != 0 || offset < kHeaderBytes) return false;
  if (count != 0 && size > (UINT64_MAX - offset) / count) return false;
  return offset + count * size <= file;
}

std::string check_header(const Header& h, size_t file_bytes) {
  if (memcmp(h.magic, kMagic, sizeof kMagic) != 0) return "not a live-capture shard (bad magic)";
  if (h.endian_check != kEndianCheck) return "shard written with another byte order";
  if (h.version != kVersion)
    return "shard format version " + std::to_string(h.version) + " is not supported (this build reads " +
           std::to_string(kVersion) + ")";
  if (h.header_bytes != kHeaderBytes || h.comm_bytes != sizeof(CommEntry) ||
      h.coll_bytes != sizeof(CollEntry) || h.op_bytes != sizeof(OpRecord))
    return "shard entry sizes do not match this build";
  if (h.ring_capacity == 0 || (h.ring_capacity & (h.ring_capacity - 1)) != 0)
    return "corrupt shard header (ring capacity " + std::to_string(h.ring_capacity) + ")";
  if (h.file_bytes > file_bytes)
    return "shard truncated (" + std::to_string(file_bytes) + " of " + std::to_string(h.file_bytes) +
           " bytes)";
  if (!region_ok(h.comm_offset, h.comm_capacity, sizeof(CommEntry), h.file_bytes) ||
      !region_ok(h.coll_offset, h.coll_capacity, sizeof(CollEntry), h.file_bytes) ||
      !region_ok(h.inflight_offset, h.inflight_capacity, sizeof(OpRecord), h.file_bytes) ||
      !region_ok(h.ring_offset, h.ring_capacity, sizeof(OpRecord), h.file_bytes))
    return "corrupt shard header (tables outside the file)";
  return "";
}

}  // namespace

bool is_shard_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char head[sizeof kMagic];
  ssize_t n = ::read(fd, head, sizeof head);
  ::close(fd);
  return n == static_cast<ssize_t>(sizeof head) && memcmp(head, kMagic, sizeof kMagic) == 0;
}

bool read_shard_snapshot(const std::string& path, ShardSnapshot& out) {
  out = ShardSnapshot();
  out.path = path;
  Mapping map;
  if (!map.open(path, out.error)) return false;
  const auto* h = reinterpret_cast<const Header*>(map.base());
  // The fixed part of the header is written before the magic and never changes afterwards.
  out.error = check_header(*h, map.bytes());
  if (!out.error.empty()) return false;
  const uint8_t* base = map.base();
  out.host = bounded(h->host, sizeof h->host);
  out.pid = h->pid;
  out.clock = std::atomic_ref<uint32_t>(const_cast<uint32_t&>(h->clock)).load(std::memory_order_relaxed);
  out.nccl_interface = h->nccl_interface;
  out.created_realtime_ns = h->created_realtime_ns;
  out.created_clock_ns = h->created_clock_ns;
  out.ring_capacity = h->ring_capacity;
  out.state = load_acquire(&h->state);
  if (out.state & kStateDisabled) out.disabled_reason = bounded(h->disabled_reason, sizeof h->disabled_reason);
  out.last_event_ns = load_relaxed(&h->last_event_ns);
  out.dropped_ops = load_relaxed(&h->dropped_ops);
  out.dropped_steps = load_relaxed(&h->dropped_steps);
  out.dropped_records = load_relaxed(&h->dropped_records);
  out.dropped_tasks = load_relaxed(&h->dropped_tasks);
  out.pxn_ops = load_relaxed(&h->pxn_ops);
  out.orphan_ops = load_relaxed(&h->orphan_ops);
  out.ops_started = load_relaxed(&h->ops_started);
  out.colls_started = load_relaxed(&h->colls_started);

  auto counted = [&](Read r) {
    if (r == Read::kBusy) ++out.busy;
    if (r == Read::kTorn) ++out.torn;
    return r == Read::kOk;
  };

  // Communicators.
  const auto* comms = reinterpret_cast<const CommEntry*>(base + h->comm_offset);
  uint64_t n_comms = std::min<uint64_t>(load_acquire(&h->comm_count), h->comm_capacity);
  for (uint64_t i = 0; i < n_comms; ++i) {
    CommEntry e;
    if (!counted(read_stable(&comms[i], &e, [](const CommEntry& c) { return c.lock != 0; })))
      continue;
    if (!(e.flags & kCommValid)) continue;
    ShardSnapshot::Comm c;
    c.comm_hash = e.comm_hash;
    c.rank = e.rank;
    c.n_ranks = e.n_ranks;
    c.n_nodes = e.n_nodes;
    c.finalized = (e.flags & kCommFinalized) != 0;
    c.has_collective = e.newest_seq_plus1 > 0;
    c.newest_seq = e.newest_seq_plus1 > 0 ? e.newest_seq_plus1 - 1 : 0;
    c.collectives = e.collectives;
    c.name = bounded(e.name, sizeof e.name);
    out.comms.push_back(std::move(c));
  }

  // Collectives (slots never used have lock 0).
  const auto* colls = reinterpret_cast<const CollEntry*>(base + h->coll_offset);
  for (uint64_t i = 0; i < h->coll_capacity; ++i) {
    if (load_acquire(&colls[i].lock) == 0) continue;
    CollEntry e;
    if (!counted(read_stable(&colls[i], &e, [](const CollEntry&) { return true; }))) continue;
    if (e.flags & kCollValid) out.collectives.push_back(e);
  }
  std::sort(out.collectives.begin(), out.collectives.end(),
            [](const CollEntry& a, const CollEntry& b) { return a.start_ns < b.start_ns; });

  // In flight first, then the ring: an op that completes in between shows in both and the
  // ring's copy wins; one that completes after its ring slot was read stays in flight.
  const auto* inflight = reinterpret_cast<const OpRecord*>(base + h->inflight_offset);
  std::vector<OpRecord> flying;
  for (uint64_t i = 0; i < h->inflight_capacity; ++i) {
    if (load_acquire(&inflight[i].lock) == 0) continue;
    OpRecord r;
    if (!counted(read_stable(&inflight[i], &r, [](const OpRecord&) { return true; }))) continue;
    if (r.flags & kOpInFlight) flying.push_back(r);
  }

  const auto* ring = reinterpret_cast<const OpRecord*>(base + h->ring_offset);
  const uint64_t cap = h->ring_capacity;
  const uint64_t head = load_acquire(&h->ring_head);
  out.ring_head = head;
  const uint64_t filled = std::min(head, cap);
  std::unordered_set<uint64_t> done_ids;
  out.completed.reserve(filled);
  for (uint64_t slot = 0; slot < filled; ++slot) {
    OpRecord r;
    // A slot holds index slot + k*cap for some k; before its first write (its writer claimed
    // it but is not inside yet, or died there) it holds nothing or an older lap.
    auto accept = [&](const OpRecord& x) {
      return x.lock != 0 && (x.index & (cap - 1)) == slot && x.index < load_acquire(&h->ring_head);
    };
    if (!counted(read_stable(&ring[slot], &r, accept))) continue;
    done_ids.insert(r.op_id);
    out.completed.push_back(r);
  }
  std::sort(out.completed.begin(), out.completed.end(),
            [](const OpRecord& a, const OpRecord& b) { return a.index < b.index; });
  for (const OpRecord& r : flying)
    if (!done_ids.count(r.op_id)) out.in_flight.push_back(r);
  std::sort(out.in_flight.begin(), out.in_flight.end(),
            [](const OpRecord& a, const OpRecord& b) { return a.op_id < b.op_id; });
  return true;
}

void read_shard_file(const std::string& path, const std::string& host, LocalData& data) {
  InputReport report;
  report.host = host;
  report.path = path;
  report.format = "shard";
  ShardSnapshot snap;
  if (!read_shard_snapshot(path, snap)) {
    report.error = snap.error;
    data.inputs.push_back(std::move(report));
    return;
  }
  report.layout = "v" + std::to_string(snap.nccl_interface);  // profiler interface NCCL loaded
  const std::string& proc_host = snap.host.empty() ? host : snap.host;
  const uint32_t process = data.process_index(proc_host, snap.pid);

  for (const ShardSnapshot::Comm& c : snap.comms) {
    data.note_comm_rank(c.comm_hash, c.rank, process, false, 0);
    if (c.has_collective) data.note_comm_rank(c.comm_hash, c.rank, process, true, c.newest_seq);
  }

  auto take = [&](const OpRecord& r, bool in_flight) {
    if (r.flags & kOpPxn) {
      report.reject("proxy op of another process (PXN)");
      return;
    }
    if (!(r.flags & kOpSeqKnown)) {
      report.reject("proxy op of an unidentified collective");
      return;
    }
    if (r.channel < 0 || r.peer < 0 || r.rank < 0) {
      report.reject("proxy op without channel/peer/rank");
      return;
    }
    const bool p2p = (r.flags & kOpP2p) != 0;
    if (!p2p) data.note_comm_rank(r.comm_hash, r.rank, process, true, r.seq);
    // The steady pipeline: an op longer than the fill contributes its steps after the first
    // kFillSteps (whose waits are the two ends' arrival skew); a short op all of its steps.
    const bool steady_only = r.n_steps > static_cast<uint32_t>(kFillSteps) && r.fill_steps <= r.steps;
    const uint32_t steps = steady_only ? r.steps - r.fill_steps : r.steps;
    if (steps == 0) {
      // In flight with nothing (beyond the fill) finished yet is normal; finished is not.
      if (!in_flight) report.reject("proxy op without a finished step");
      return;
    }
    ProxyOpRecord o;
    o.comm_hash = r.comm_hash;
    o.seq = r.seq;
    o.bytes = r.bytes;  // of every finished step, as the trace readers count an op's bytes
    o.start_ns = r.start_ns;
    o.end_ns = in_flight ? 0 : std::max(r.end_ns, r.start_ns);
    for (int p = 0; p < kPhaseCount; ++p)
      o.phase_ns[p] = steady_only && r.fill_phase_ns[p] <= r.phase_ns[p] ? r.phase_ns[p] - r.fill_phase_ns[p]
                                                                       : r.phase_ns[p];
    o.process = process;
    o.rank = r.rank;
    o.peer = r.peer;
    o.channel = r.channel;
    if (!(r.flags & kOpSend) && r.shortest_step_ns > 0) {
      o.recv_gpu_wait_min_ns = r.shortest_step_ns;
      o.has_recv_gpu_wait_min = 1;
    }
    if ((r.flags & kOpSend) && r.shortest_step_ns > 0) {
      o.send_wait_min_ns = r.shortest_step_ns;
      o.send_wire_busy_ns = r.wire_busy_ns;
      o.wire_steps = r.steps >= 2 ? r.steps - 1 : 0;  // every step after the first
      o.wire_queued_steps = std::min(r.wire_queued_steps, o.wire_steps);
    }
    o.steps = steps;
    o.is_send = (r.flags & kOpSend) ? 1 : 0;
    o.is_p2p = p2p ? 1 : 0;
    data.ops.push_back(o);
    ++report.records;
  };
  for (const OpRecord& r : snap.completed) take(r, false);
  for (const OpRecord& r : snap.in_flight) take(r, true);

  for (const CollEntry& c : snap.collectives) {
    const bool p2p = (c.flags & kCollP2p) != 0;
    if (!p2p) data.note_comm_rank(c.comm_hash, c.rank, process, true, c.seq);
    if (c.kernel_start_clk == 0) continue;
    KernelStartRecord k;
    k.comm_hash = c.comm_hash;
    k.seq = c.seq;
    k.start_gpu_clk_ns = c.kernel_start_clk;
    k.stop_gpu_clk_ns = c.kernel_stop_clk >= c.kernel_start_clk ? c.kernel_stop_clk : 0;
    k.process = process;
    k.rank = c.rank;
    k.is_p2p = p2p ? 1 : 0;
    k.tree = (c.flags & kCollTree) != 0 ? 1 : 0;
    data.kernel_starts.push_back(k);
  }

  if (snap.torn) report.reject("torn record (writer inside it for too long, or killed mid-write)", snap.torn);
  if (snap.busy) report.reject("record rewritten by the live writer during every read attempt", snap.busy);
  if (snap.dropped_ops) report.reject("proxy ops the writer could not record (op slots full)", snap.dropped_ops);
  if (snap.dropped_records)
    report.reject("completed ops the writer could not append (ring slot busy)", snap.dropped_records);
  if (snap.dropped_steps) report.reject("steps the writer could not measure", snap.dropped_steps);
  if (snap.dropped_tasks)
    report.reject("collectives the writer could not record (task slots full)", snap.dropped_tasks);
  if (snap.state & kStateDisabled)
    report.reject("writer disabled itself: " + snap.disabled_reason);
  data.inputs.push_back(std::move(report));
}

}  // namespace culprit
