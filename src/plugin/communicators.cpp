#include "plugin/communicators.hpp"

#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "plugin/plugin_state.hpp"

namespace culprit::plugin {

using namespace culprit::shard;

namespace {

// The plugin's one lock: held for init and finalize of communicators, never on the event path.
// A plain pthread mutex, statically initialised: it works before any constructor ran and
// whatever C++ runtime the host process has.
class InitLock {
 public:
  InitLock() { pthread_mutex_lock(&mutex_); }
  ~InitLock() { pthread_mutex_unlock(&mutex_); }
  InitLock(const InitLock&) = delete;
  InitLock& operator=(const InitLock&) = delete;

 private:
  static pthread_mutex_t mutex_;
};
pthread_mutex_t InitLock::mutex_ = PTHREAD_MUTEX_INITIALIZER;

void on_fork_child() {
  // The child of a recording process must not write into its parent's shard.
  int expected = kRecording;
  g.status.compare_exchange_strong(expected, kDisabled);
}

// The first init: configuration, pools and shard, in that order. False with the reason.
bool set_up(int nccl_interface, char* err, size_t err_cap) {
  g.pid = getpid();
  const PluginConfig config = read_plugin_config();
  g.remove_on_exit = config.remove_on_exit;
  g.event_mask = config.event_mask;
  if (!make_shard_folder(config, err, err_cap)) return false;
  if (!g.pools.make(config, err, err_cap)) return false;
  return g.shard.create(config, ShardIdentity{nccl_interface, g.pid, g.event_mask}, err, err_cap);
}

// Under the lock: sets the plugin up at the first init; true while it records.
bool set_up_once(int iface, ncp_logger_t log) {
  if (g.status.load() == kNotSetUp) {
    char err[1024] = {0};
    if (log) g.log = log;
    if (set_up(iface, err, sizeof err)) {
      pthread_atfork(nullptr, nullptr, on_fork_child);
      g.status.store(kRecording, std::memory_order_release);
      if (g.log) g.log(3 /*INFO*/, 1 /*NCCL_INIT*/, __FILE__, __LINE__,
                       "nccl-culprit profiler plugin (interface v%d): live capture in %s", iface, g.shard.path);
    } else {
      disable(err);
    }
  }
  return g.status.load() == kRecording;
}

// Under the lock: the next communicator slot, published in the shard; NULL when all are taken.
CommCtx* claim_communicator(const char* name, uint64_t comm_hash, int n_nodes, int n_ranks, int rank) {
  uint64_t slot = load_relaxed(&g.shard.hdr->comm_count);
  if (slot >= g.pools.comm_cap) {
    static bool said = false;
    if (!said) {
      said = true;
      fprintf(stderr, "nccl-culprit profiler plugin: more than %u communicators in pid %d; "
              "communicator %llx is not recorded (NCCL_CULPRIT_COMMS)\n", g.pools.comm_cap,
              static_cast<int>(g.pid), static_cast<unsigned long long>(comm_hash));
    }
    return nullptr;
  }
  CommCtx* c = &g.pools.ctxs[slot];
  c->comm_hash = comm_hash;
  c->rank = rank;
  c->n_ranks = n_ranks;
  g.pools.make_p2p_counters(c, n_ranks);
  CommEntry e{};
  e.comm_hash = comm_hash;
  e.rank = rank;
  e.n_ranks = n_ranks;
  e.n_nodes = n_nodes;
  e.flags = kCommValid;
  copy_str(e.name, sizeof e.name, name);
  ShardWriter::publish(&g.shard.comms[slot], e);
  store_release(&g.shard.hdr->comm_count, slot + 1);
  g.shard.clear_finalized();
  ++g.live_comms;
  return c;
}

}  // namespace

ncp_result_t init_communicator(int iface, void** context, int* mask, const char* name,
                               uint64_t comm_hash, int n_nodes, int n_ranks, int rank,
                               ncp_logger_t log) {
  if (context) *context = nullptr;
  if (disabled_by_environment()) {
    if (mask) *mask = 0;
    return NCP_SUCCESS;
  }
  CommCtx* c = nullptr;
  int granted_mask = 0;
  {
    InitLock lock;
    if (set_up_once(iface, log)) {
      c = claim_communicator(name, comm_hash, n_nodes, n_ranks, rank);
      granted_mask = g.event_mask;  // a communicator beyond the table: events, not recorded
    }
  }
  if (mask) *mask = granted_mask;
  if (context && c) *context = c;
  return NCP_SUCCESS;
}

ncp_result_t finalize_communicator(void* context) {
  InitLock lock;
  CommCtx* c = g.pools.ctx_of(context);
  if (c != nullptr && g.shard.hdr != nullptr) {
    CommEntry& e = g.shard.comms[c->slot];
    CommEntry copy{};
    if (seq_read(&e, &copy) && !(copy.flags & kCommFinalized)) {
      copy.flags |= kCommFinalized;
      copy.newest_seq_plus1 = load_relaxed(&e.newest_seq_plus1);
      copy.collectives = load_relaxed(&e.collectives);
      ShardWriter::publish(&e, copy);
      if (--g.live_comms == 0) g.shard.mark_finalized(g.remove_on_exit);
    }
  }
  return NCP_SUCCESS;
}

}  // namespace culprit::plugin
