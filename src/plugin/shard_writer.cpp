#include "plugin/shard_writer.hpp"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "plugin/plugin_clock.hpp"
#include "plugin/plugin_config.hpp"

namespace culprit::plugin {

using namespace culprit::shard;

namespace {

// mkdir -p; a directory created directly below /dev/shm/nccl-culprit is shared by users.
bool make_dirs(const char* path, char* err, size_t err_cap) {
  char buf[4096];
  copy_str(buf, sizeof buf, path);
  size_t n = strlen(buf);
  if (n == 0) {
    snprintf(err, err_cap, "empty directory name");
    return false;
  }
  for (size_t i = 1; i <= n; ++i) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char saved = buf[i];
    buf[i] = '\0';
    struct stat st;
    if (stat(buf, &st) != 0) {
      bool shared_top = strcmp(buf, "/dev/shm/nccl-culprit") == 0;
      if (mkdir(buf, shared_top ? 01777 : 0700) != 0 && errno != EEXIST) {
        snprintf(err, err_cap, "cannot create directory %.400s: %s", buf, strerror(errno));
        return false;
      }
      if (shared_top) chmod(buf, 01777);  // every user's jobs make their folders here
    } else if (!S_ISDIR(st.st_mode)) {
      snprintf(err, err_cap, "%s is not a directory", buf);
      return false;
    }
    buf[i] = saved;
  }
  return true;
}

// Where each table lies in the file.
struct Geometry {
  uint64_t comm_off, coll_off, inflight_off, ring_off, bytes;
};

Geometry geometry_of(const PluginConfig& c) {
  Geometry g;
  g.comm_off = kHeaderBytes;
  g.coll_off = g.comm_off + c.comms * sizeof(CommEntry);
  g.inflight_off = g.coll_off + c.collectives * sizeof(CollEntry);
  g.ring_off = g.inflight_off + c.inflight_ops * sizeof(OpRecord);
  g.bytes = g.ring_off + c.ring_records * sizeof(OpRecord);
  return g;
}

// A new file of `bytes` bytes, every one backed now, mapped shared; nullptr with the reason.
uint8_t* create_backed_file(const char* tmp, uint64_t bytes, char* err, size_t err_cap) {
  unlink(tmp);
  int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    snprintf(err, err_cap, "cannot create %.400s: %s", tmp, strerror(errno));
    return nullptr;
  }
  int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc != 0) {
    snprintf(err, err_cap, "cannot reserve %llu bytes for %.400s: %s",
             static_cast<unsigned long long>(bytes), tmp, strerror(rc));
    close(fd);
    unlink(tmp);
    return nullptr;
  }
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int map_errno = errno;
  close(fd);
  if (m == MAP_FAILED) {
    snprintf(err, err_cap, "cannot map %.400s: %s", tmp, strerror(map_errno));
    unlink(tmp);
    return nullptr;
  }
  return static_cast<uint8_t*>(m);
}

// Everything but the magic, which is written last (after a release fence) by the caller.
void write_header(Header& h, const PluginConfig& c, const Geometry& geo, const ShardIdentity& id) {
  h.version = kVersion;
  h.endian_check = kEndianCheck;
  h.header_bytes = kHeaderBytes;
  h.clock = test_clock_on() ? kClockTest : kClockMonotonic;
  h.comm_capacity = static_cast<uint32_t>(c.comms);
  h.comm_bytes = sizeof(CommEntry);
  h.coll_capacity = static_cast<uint32_t>(c.collectives);
  h.coll_bytes = sizeof(CollEntry);
  h.inflight_capacity = static_cast<uint32_t>(c.inflight_ops);
  h.ring_capacity = static_cast<uint32_t>(c.ring_records);
  h.op_bytes = sizeof(OpRecord);
  h.nccl_interface = static_cast<uint32_t>(id.nccl_interface);
  h.comm_offset = geo.comm_off;
  h.coll_offset = geo.coll_off;
  h.inflight_offset = geo.inflight_off;
  h.ring_offset = geo.ring_off;
  h.file_bytes = geo.bytes;
  h.pid = id.pid;
  timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  h.created_realtime_ns = static_cast<uint64_t>(rt.tv_sec) * 1000000000ull + rt.tv_nsec;
  h.created_clock_ns = now_ns();
  h.event_mask = static_cast<uint32_t>(id.event_mask);
  copy_str(h.host, sizeof h.host, c.host);
}

}  // namespace

bool make_shard_folder(const PluginConfig& config, char* err, size_t err_cap) {
  return make_dirs(config.dir, err, err_cap);
}

bool ShardWriter::create(const PluginConfig& config, const ShardIdentity& id, char* err,
                         size_t err_cap) {
  const Geometry geo = geometry_of(config);
  char tmp[4096];
  snprintf(path, sizeof path, "%s/%s-%d.shard", config.dir, config.host, static_cast<int>(id.pid));
  snprintf(tmp, sizeof tmp, "%s/.%s-%d.shard.tmp", config.dir, config.host, static_cast<int>(id.pid));
  map = create_backed_file(tmp, geo.bytes, err, err_cap);
  if (map == nullptr) return false;
  map_bytes = geo.bytes;
  hdr = reinterpret_cast<Header*>(map);
  comms = reinterpret_cast<CommEntry*>(map + geo.comm_off);
  colls = reinterpret_cast<CollEntry*>(map + geo.coll_off);
  inflight = reinterpret_cast<OpRecord*>(map + geo.inflight_off);
  ring = reinterpret_cast<OpRecord*>(map + geo.ring_off);
  ring_mask = config.ring_records - 1;
  write_header(*hdr, config, geo, id);
  std::atomic_thread_fence(std::memory_order_release);
  memcpy(hdr->magic, kMagic, sizeof kMagic);
  if (rename(tmp, path) != 0) {
    snprintf(err, err_cap, "cannot rename %.400s to %.400s: %s", tmp, path, strerror(errno));
    unlink(tmp);
    munmap(map, map_bytes);
    map = nullptr;
    hdr = nullptr;
    return false;
  }
  return true;
}

void ShardWriter::append_completed(const OpRecord& rec) {
  uint64_t idx = std::atomic_ref<uint64_t>(hdr->ring_head).fetch_add(1, std::memory_order_acq_rel);
  OpRecord* slot = &ring[idx & ring_mask];
  uint64_t old = seq_try_lock(&slot->lock);
  if (old == UINT64_MAX) {  // another writer lapped the ring onto this slot: drop, count
    count(&Header::dropped_records);
    return;
  }
  OpRecord out = rec;
  out.index = idx;
  seq_store_payload(slot, out);
  seq_unlock(&slot->lock, old);
}

void ShardWriter::mark_disabled(const char* why) {
  if (hdr == nullptr) return;
  copy_str(hdr->disabled_reason, sizeof hdr->disabled_reason, why);
  std::atomic_ref<uint64_t>(hdr->state).fetch_or(kStateDisabled, std::memory_order_release);
}

void ShardWriter::mark_finalized(bool remove_file) {
  std::atomic_ref<uint64_t>(hdr->state).fetch_or(kStateFinalized, std::memory_order_release);
  msync(map, map_bytes, MS_ASYNC);
  if (remove_file) unlink(path);
}

}  // namespace culprit::plugin
