/* nccl-culprit's own description of NCCL's profiler plugin ABI (interface versions 4, 5, 6).
 *
 * Written for this project from the layouts NCCL expects; no NCCL header is included or
 * copied. Names are ours (prefix `ncp_`); only the binary layout, the numeric values and the
 * calling conventions must match NCCL's. docs/live-capture.md says how every structure was
 * checked against NCCL's own headers (2.27.3 for v4, 2.28.3 for v5, 2.29.2 and 2.30.7 for v6);
 * the static assertions at the end pin the LP64 layout (x86-64, aarch64) that was checked.
 *
 *   interface  NCCL     symbol the plugin exports   type of `type`  descriptor bytes
 *   v4         2.27     ncclProfiler_v4             uint8_t         104
 *   v5         2.28     ncclProfiler_v5             uint64_t        112
 *   v6         2.29+    ncclProfiler_v6             uint64_t        112 (v5 + CE members)
 *
 * NCCL looks the symbols up with dlsym, newest first (2.29+: v6, v5, v4; 2.28: v5, v4;
 * 2.27: v4), so a library exporting all three is loaded at its best version everywhere.
 */
#ifndef NCCL_CULPRIT_PLUGIN_NCCL_PROFILER_ABI_H_
#define NCCL_CULPRIT_PLUGIN_NCCL_PROFILER_ABI_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* C's _Bool and C++'s bool: one byte, the same ABI. */
#ifdef __cplusplus
typedef bool ncp_bool;
#else
typedef _Bool ncp_bool;
#endif

/* ncclResult_t: an int-sized enum; 0 is success. The plugin only ever returns success:
 * an error from init makes NCCL print a message and continue without the plugin, an error
 * from an event call is ignored by NCCL, so there is nothing to gain from failing. */
typedef int ncp_result_t;
#define NCP_SUCCESS 0
#define NCP_INTERNAL_ERROR 3

/* ncclDebugLogger_t: NCCL's printf-style logger handed to init (level is an int-sized enum). */
typedef void (*ncp_logger_t)(int level, unsigned long flags, const char* file, int line,
                             const char* fmt, ...);

/* Event type bits: the `type` of a descriptor and the bits of the activation mask. */
enum {
  NCP_EV_GROUP = 1 << 0,
  NCP_EV_COLL = 1 << 1,
  NCP_EV_P2P = 1 << 2,
  NCP_EV_PROXY_OP = 1 << 3,
  NCP_EV_PROXY_STEP = 1 << 4,
  NCP_EV_PROXY_CTRL = 1 << 5,
  NCP_EV_KERNEL_CH = 1 << 6,
  NCP_EV_NET_PLUGIN = 1 << 7,
  NCP_EV_GROUP_API = 1 << 8,      /* v5+ */
  NCP_EV_COLL_API = 1 << 9,       /* v5+ */
  NCP_EV_P2P_API = 1 << 10,       /* v5+ */
  NCP_EV_KERNEL_LAUNCH = 1 << 11, /* v5+ */
  NCP_EV_CE_COLL = 1 << 12,       /* v6 */
  NCP_EV_CE_SYNC = 1 << 13,       /* v6 */
  NCP_EV_CE_BATCH = 1 << 14       /* v6 */
};

/* Event states passed to recordEventState (an int-sized enum in NCCL). Values 0..7 are the
 * ProxyOp states that v4 deprecated; the others this plugin reads are listed here. */
enum {
  NCP_STATE_PROXY_OP_IN_PROGRESS = 19,  /* v4+: the proxy starts progressing the op */
  NCP_STATE_SEND_GPU_WAIT = 8,          /* slot handed to the GPU, waiting for its data */
  NCP_STATE_SEND_PEER_WAIT = 20,        /* v4+: data ready, waiting for the receiver's CTS */
  NCP_STATE_SEND_WAIT = 9,              /* isend accepted, waiting for completion */
  NCP_STATE_RECV_WAIT = 10,             /* irecv posted, waiting for the data */
  NCP_STATE_RECV_FLUSH_WAIT = 11,       /* data arrived, waiting for the GPU-direct flush */
  NCP_STATE_RECV_GPU_WAIT = 12,         /* data handed to the GPU, waiting for it to consume */
  NCP_STATE_PROXY_CTRL_IDLE = 13,
  NCP_STATE_PROXY_CTRL_APPEND_END = 18,
  NCP_STATE_NET_PLUGIN_UPDATE = 21,
  NCP_STATE_KERNEL_CH_STOP = 22,
  NCP_STATE_GROUP_START_API_STOP = 23,  /* v5+ */
  NCP_STATE_GROUP_END_API_START = 24    /* v5+ */
};
typedef int ncp_state_t;

/* ---- descriptor members shared by v4, v5 and v6 ------------------------------------------ */

struct ncp_coll_v4 {            /* ncclProfileColl */
  uint64_t seq_number;          /* per communicator and collective function */
  const char* func;
  const void* send_buff;
  void* recv_buff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t n_channels;
  uint8_t n_warps;
  const char* algo;
  const char* proto;
};

struct ncp_p2p_v4 {             /* ncclProfileP2p */
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t n_channels;
};

struct ncp_proxy_op {           /* ncclProfileProxyOp */
  pid_t pid;                    /* process that created the op (PXN: not this one) */
  uint8_t channel_id;
  int peer;
  int n_steps;
  int chunk_size;
  int is_send;
};

struct ncp_proxy_step {         /* ncclProfileProxyStep */
  int step;
};

struct ncp_kernel_ch {          /* ncclProfileKernelCh */
  uint8_t channel_id;
  uint64_t p_timer;             /* GPU global timer at kernel start (ns) */
};

struct ncp_net_plugin {         /* ncclProfileNetPlugin */
  int64_t id;
  void* data;
};

/* ---- v4 (NCCL 2.27) ------------------------------------------------------------------------ */

struct ncp_descr_v4 {
  uint8_t type;                 /* one NCP_EV_* bit */
  void* parent_obj;             /* handle of the parent event (ProxyOp: its Coll/P2p) */
  int rank;                     /* communicator rank that produced the event */
  union {
    struct ncp_coll_v4 coll;
    struct ncp_p2p_v4 p2p;
    struct ncp_proxy_op proxy_op;
    struct ncp_proxy_step proxy_step;
    struct ncp_kernel_ch kernel_ch;
    struct ncp_net_plugin net_plugin;
  } u;
};

union ncp_state_args_v4 {
  struct { size_t trans_size; } proxy_step;
  struct { int appended_proxy_ops; } proxy_ctrl;
  struct { void* data; } net_plugin;
  struct { uint64_t p_timer; } kernel_ch;
};

struct ncp_profiler_v4 {
  const char* name;
  ncp_result_t (*init)(void** context, int* activation_mask, const char* comm_name,
                       uint64_t comm_hash, int n_nodes, int n_ranks, int rank, ncp_logger_t log);
  ncp_result_t (*start_event)(void* context, void** handle, struct ncp_descr_v4* descr);
  ncp_result_t (*stop_event)(void* handle);
  ncp_result_t (*record_event_state)(void* handle, ncp_state_t state,
                                     union ncp_state_args_v4* args);
  ncp_result_t (*finalize)(void* context);
};

/* ---- v5 (NCCL 2.28) ------------------------------------------------------------------------ */

struct ncp_coll_v5 {            /* v4's members plus the group handle (v4's parent) */
  uint64_t seq_number;
  const char* func;
  const void* send_buff;
  void* recv_buff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t n_channels;
  uint8_t n_warps;
  const char* algo;
  const char* proto;
  void* parent_group;
};

struct ncp_p2p_v5 {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t n_channels;
  void* parent_group;
};

struct ncp_group_api { ncp_bool graph_captured; int group_depth; };
struct ncp_coll_api {
  const char* func; size_t count; const char* datatype; int root; void* stream;
  ncp_bool graph_captured;
};
struct ncp_p2p_api {
  const char* func; size_t count; const char* datatype; void* stream; ncp_bool graph_captured;
};
struct ncp_kernel_launch { void* stream; };

struct ncp_descr_v5 {
  uint64_t type;                /* one NCP_EV_* bit (64-bit from v5 on) */
  void* parent_obj;
  int rank;
  union {
    struct ncp_group_api group_api;
    struct ncp_coll_api coll_api;
    struct ncp_p2p_api p2p_api;
    struct ncp_kernel_launch kernel_launch;
    struct ncp_coll_v5 coll;
    struct ncp_p2p_v5 p2p;
    struct ncp_proxy_op proxy_op;
    struct ncp_proxy_step proxy_step;
    struct ncp_kernel_ch kernel_ch;
    struct ncp_net_plugin net_plugin;
  } u;
};

typedef union ncp_state_args_v4 ncp_state_args_v5; /* identical union in v5 and v6 */

struct ncp_profiler_v5 {        /* init takes the communicator id second from v5 on */
  const char* name;
  ncp_result_t (*init)(void** context, uint64_t comm_id, int* activation_mask,
                       const char* comm_name, int n_nodes, int n_ranks, int rank, ncp_logger_t log);
  ncp_result_t (*start_event)(void* context, void** handle, struct ncp_descr_v5* descr);
  ncp_result_t (*stop_event)(void* handle);
  ncp_result_t (*record_event_state)(void* handle, ncp_state_t state, ncp_state_args_v5* args);
  ncp_result_t (*finalize)(void* context);
};

/* ---- v6 (NCCL 2.29+): v5 plus copy-engine collective events ------------------------------ */

struct ncp_ce_coll {
  uint64_t seq_number; const char* func; const void* send_buff; void* recv_buff; size_t count;
  int root; const char* datatype; const char* sync_strategy; ncp_bool intra_batch_sync;
  uint32_t batch_size; uint32_t num_batches; uint32_t ce_seq_num; void* stream;
};
struct ncp_ce_sync { ncp_bool is_complete; int n_ranks; };
struct ncp_ce_batch { int num_ops; size_t total_bytes; ncp_bool use_intra_sync; };

struct ncp_descr_v6 {
  uint64_t type;
  void* parent_obj;
  int rank;
  union {
    struct ncp_group_api group_api;
    struct ncp_coll_api coll_api;
    struct ncp_p2p_api p2p_api;
    struct ncp_kernel_launch kernel_launch;
    struct ncp_coll_v5 coll;
    struct ncp_p2p_v5 p2p;
    struct ncp_proxy_op proxy_op;
    struct ncp_proxy_step proxy_step;
    struct ncp_kernel_ch kernel_ch;
    struct ncp_net_plugin net_plugin;
    struct ncp_ce_coll ce_coll;
    struct ncp_ce_sync ce_sync;
    struct ncp_ce_batch ce_batch;
  } u;
};

typedef union ncp_state_args_v4 ncp_state_args_v6;

struct ncp_profiler_v6 {
  const char* name;
  ncp_result_t (*init)(void** context, uint64_t comm_id, int* activation_mask,
                       const char* comm_name, int n_nodes, int n_ranks, int rank, ncp_logger_t log);
  ncp_result_t (*start_event)(void* context, void** handle, struct ncp_descr_v6* descr);
  ncp_result_t (*stop_event)(void* handle);
  ncp_result_t (*record_event_state)(void* handle, ncp_state_t state, ncp_state_args_v6* args);
  ncp_result_t (*finalize)(void* context);
};

/* Test hook exported by libnccl-profiler-culprit.so (not part of NCCL's interface): from the
 * first call on, the calling thread's events are stamped with the time last passed here
 * (nanoseconds) instead of CLOCK_MONOTONIC. Threads that never call it keep the real clock.
 * The shard header then says clock=test. Used by the tests to replay a simulated timeline. */
typedef void (*ncp_test_set_time_fn)(uint64_t ns);
#define NCP_TEST_SET_TIME_SYMBOL "ncclCulpritTestSetTime"

/* ---- layout checks (LP64), each value read from NCCL's headers as docs/live-capture.md says */
#if defined(__LP64__) || defined(_LP64)
#ifdef __cplusplus
#define NCP_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define NCP_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
NCP_ASSERT(sizeof(pid_t) == 4, "pid_t");
NCP_ASSERT(sizeof(struct ncp_coll_v4) == 80, "coll v4");
NCP_ASSERT(offsetof(struct ncp_coll_v4, root) == 40, "coll v4 root");
NCP_ASSERT(offsetof(struct ncp_coll_v4, n_channels) == 56, "coll v4 nChannels");
NCP_ASSERT(offsetof(struct ncp_coll_v4, algo) == 64, "coll v4 algo");
NCP_ASSERT(offsetof(struct ncp_coll_v4, proto) == 72, "coll v4 proto");
NCP_ASSERT(sizeof(struct ncp_p2p_v4) == 40, "p2p v4");
NCP_ASSERT(offsetof(struct ncp_p2p_v4, peer) == 32, "p2p v4 peer");
NCP_ASSERT(sizeof(struct ncp_proxy_op) == 24, "proxyOp");
NCP_ASSERT(offsetof(struct ncp_proxy_op, channel_id) == 4, "proxyOp channelId");
NCP_ASSERT(offsetof(struct ncp_proxy_op, peer) == 8, "proxyOp peer");
NCP_ASSERT(offsetof(struct ncp_proxy_op, n_steps) == 12, "proxyOp nSteps");
NCP_ASSERT(offsetof(struct ncp_proxy_op, chunk_size) == 16, "proxyOp chunkSize");
NCP_ASSERT(offsetof(struct ncp_proxy_op, is_send) == 20, "proxyOp isSend");
NCP_ASSERT(sizeof(struct ncp_kernel_ch) == 16, "kernelCh");
NCP_ASSERT(offsetof(struct ncp_kernel_ch, p_timer) == 8, "kernelCh pTimer");
NCP_ASSERT(offsetof(struct ncp_descr_v4, parent_obj) == 8, "descr v4 parentObj");
NCP_ASSERT(offsetof(struct ncp_descr_v4, rank) == 16, "descr v4 rank");
NCP_ASSERT(offsetof(struct ncp_descr_v4, u) == 24, "descr v4 union");
NCP_ASSERT(sizeof(struct ncp_descr_v4) == 104, "descr v4");
NCP_ASSERT(sizeof(union ncp_state_args_v4) == 8, "state args");
NCP_ASSERT(sizeof(struct ncp_coll_v5) == 88, "coll v5");
NCP_ASSERT(offsetof(struct ncp_coll_v5, parent_group) == 80, "coll v5 parentGroup");
NCP_ASSERT(sizeof(struct ncp_p2p_v5) == 48, "p2p v5");
NCP_ASSERT(offsetof(struct ncp_p2p_v5, parent_group) == 40, "p2p v5 parentGroup");
NCP_ASSERT(sizeof(struct ncp_coll_api) == 48, "collApi");
NCP_ASSERT(offsetof(struct ncp_coll_api, graph_captured) == 40, "collApi graphCaptured");
NCP_ASSERT(sizeof(struct ncp_p2p_api) == 40, "p2pApi");
NCP_ASSERT(offsetof(struct ncp_descr_v5, parent_obj) == 8, "descr v5 parentObj");
NCP_ASSERT(offsetof(struct ncp_descr_v5, rank) == 16, "descr v5 rank");
NCP_ASSERT(offsetof(struct ncp_descr_v5, u) == 24, "descr v5 union");
NCP_ASSERT(sizeof(struct ncp_descr_v5) == 112, "descr v5");
NCP_ASSERT(sizeof(struct ncp_ce_coll) == 88, "ceColl");
NCP_ASSERT(offsetof(struct ncp_ce_coll, intra_batch_sync) == 64, "ceColl intraBatchSync");
NCP_ASSERT(offsetof(struct ncp_ce_coll, stream) == 80, "ceColl stream");
NCP_ASSERT(sizeof(struct ncp_ce_batch) == 24, "ceCollBatch");
NCP_ASSERT(offsetof(struct ncp_descr_v6, u) == 24, "descr v6 union");
NCP_ASSERT(sizeof(struct ncp_descr_v6) == 112, "descr v6");
NCP_ASSERT(sizeof(struct ncp_profiler_v4) == 48, "profiler v4 table");
NCP_ASSERT(offsetof(struct ncp_profiler_v4, start_event) == 16, "v4 startEvent");
NCP_ASSERT(offsetof(struct ncp_profiler_v4, finalize) == 40, "v4 finalize");
NCP_ASSERT(sizeof(struct ncp_profiler_v5) == 48, "profiler v5 table");
NCP_ASSERT(sizeof(struct ncp_profiler_v6) == 48, "profiler v6 table");
#undef NCP_ASSERT
#endif

#ifdef __cplusplus
}
#endif

#endif /* NCCL_CULPRIT_PLUGIN_NCCL_PROFILER_ABI_H_ */
