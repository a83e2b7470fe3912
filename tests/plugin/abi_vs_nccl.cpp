// Compares nccl-culprit's own profiler ABI definitions (src/plugin/nccl_profiler_abi.h) with
// NCCL's headers, member by member: size, offset and every numeric constant the plugin uses.
// Not part of the normal build (NCCL's sources are not a dependency): run
//   tests/plugin/check_abi_vs_nccl.sh /path/to/nccl-checkout [tags...]
// which compiles this file once per NCCL release against that release's
// src/include/plugin/nccl_profiler.h (NCCL_V = newest interface of the release).
#include <cstdio>
#include <cstddef>
#include <cstdint>
#include <sys/types.h>

// What NCCL's headers expect from the rest of NCCL.
typedef enum { ncclSuccess = 0 } ncclResult_t;
typedef enum { NCCL_LOG_NONE = 0 } ncclDebugLogLevel;
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file,
                                  int line, const char* fmt, ...);
#include "nccl_profiler.h"  // NCCL's (found through -I)

#include "plugin/nccl_profiler_abi.h"  // ours

static int failures = 0;
static int checks = 0;

#define SAME(what, a, b)                                                                 \
  do {                                                                                   \
    ++checks;                                                                            \
    if ((long)(a) != (long)(b)) {                                                        \
      std::printf("MISMATCH %s: NCCL %ld, ours %ld\n", what, (long)(a), (long)(b));      \
      ++failures;                                                                        \
    }                                                                                    \
  } while (0)
#define SIZE(nccl_t, ours_t) SAME("sizeof " #nccl_t, sizeof(nccl_t), sizeof(ours_t))
#define OFF(nccl_t, nm, ours_t, om) \
  SAME("offsetof " #nccl_t "." #nm, offsetof(nccl_t, nm), offsetof(ours_t, om))
#define MSIZE(nccl_t, nm, ours_t, om) \
  SAME("sizeof " #nccl_t "." #nm, sizeof(((nccl_t*)0)->nm), sizeof(((ours_t*)0)->om))
#define FIELD(nccl_t, nm, ours_t, om) \
  OFF(nccl_t, nm, ours_t, om);        \
  MSIZE(nccl_t, nm, ours_t, om)

// Members common to the v4, v5 and v6 descriptors.
#define COMMON_DESCR(D, O, COLL)                                                   \
  FIELD(D, type, O, type);                                                         \
  FIELD(D, parentObj, O, parent_obj);                                              \
  FIELD(D, rank, O, rank);                                                         \
  FIELD(D, coll.seqNumber, O, u.coll.seq_number);                                  \
  FIELD(D, coll.func, O, u.coll.func);                                             \
  FIELD(D, coll.sendBuff, O, u.coll.send_buff);                                    \
  FIELD(D, coll.recvBuff, O, u.coll.recv_buff);                                    \
  FIELD(D, coll.count, O, u.coll.count);                                           \
  FIELD(D, coll.root, O, u.coll.root);                                             \
  FIELD(D, coll.datatype, O, u.coll.datatype);                                     \
  FIELD(D, coll.nChannels, O, u.coll.n_channels);                                  \
  FIELD(D, coll.nWarps, O, u.coll.n_warps);                                        \
  FIELD(D, coll.algo, O, u.coll.algo);                                             \
  FIELD(D, coll.proto, O, u.coll.proto);                                           \
  FIELD(D, p2p.func, O, u.p2p.func);                                               \
  FIELD(D, p2p.buff, O, u.p2p.buff);                                               \
  FIELD(D, p2p.datatype, O, u.p2p.datatype);                                       \
  FIELD(D, p2p.count, O, u.p2p.count);                                             \
  FIELD(D, p2p.peer, O, u.p2p.peer);                                               \
  FIELD(D, p2p.nChannels, O, u.p2p.n_channels);                                    \
  FIELD(D, proxyOp.pid, O, u.proxy_op.pid);                                        \
  FIELD(D, proxyOp.channelId, O, u.proxy_op.channel_id);                           \
  FIELD(D, proxyOp.peer, O, u.proxy_op.peer);                                      \
  FIELD(D, proxyOp.nSteps, O, u.proxy_op.n_steps);                                 \
  FIELD(D, proxyOp.chunkSize, O, u.proxy_op.chunk_size);                           \
  FIELD(D, proxyOp.isSend, O, u.proxy_op.is_send);                                 \
  FIELD(D, proxyStep.step, O, u.proxy_step.step);                                  \
  FIELD(D, kernelCh.channelId, O, u.kernel_ch.channel_id);                         \
  FIELD(D, kernelCh.pTimer, O, u.kernel_ch.p_timer);                               \
  FIELD(D, netPlugin.id, O, u.net_plugin.id);                                      \
  FIELD(D, netPlugin.data, O, u.net_plugin.data);                                  \
  SIZE(D, O)

#define V5_DESCR(D, O)                                                             \
  FIELD(D, groupApi.graphCaptured, O, u.group_api.graph_captured);                 \
  FIELD(D, groupApi.groupDepth, O, u.group_api.group_depth);                       \
  FIELD(D, collApi.func, O, u.coll_api.func);                                      \
  FIELD(D, collApi.count, O, u.coll_api.count);                                    \
  FIELD(D, collApi.datatype, O, u.coll_api.datatype);                              \
  FIELD(D, collApi.root, O, u.coll_api.root);                                      \
  FIELD(D, collApi.stream, O, u.coll_api.stream);                                  \
  FIELD(D, collApi.graphCaptured, O, u.coll_api.graph_captured);                   \
  FIELD(D, p2pApi.func, O, u.p2p_api.func);                                        \
  FIELD(D, p2pApi.count, O, u.p2p_api.count);                                      \
  FIELD(D, p2pApi.datatype, O, u.p2p_api.datatype);                                \
  FIELD(D, p2pApi.stream, O, u.p2p_api.stream);                                    \
  FIELD(D, p2pApi.graphCaptured, O, u.p2p_api.graph_captured);                     \
  FIELD(D, kernelLaunch.stream, O, u.kernel_launch.stream);                        \
  FIELD(D, coll.parentGroup, O, u.coll.parent_group);                              \
  FIELD(D, p2p.parentGroup, O, u.p2p.parent_group)

#define TABLE(T, O)                                                                \
  FIELD(T, name, O, name);                                                         \
  FIELD(T, init, O, init);                                                         \
  FIELD(T, startEvent, O, start_event);                                            \
  FIELD(T, stopEvent, O, stop_event);                                              \
  FIELD(T, recordEventState, O, record_event_state);                               \
  FIELD(T, finalize, O, finalize);                                                 \
  SIZE(T, O)

#define ARGS(A, O)                                                                 \
  FIELD(A, proxyStep.transSize, O, proxy_step.trans_size);                         \
  FIELD(A, proxyCtrl.appendedProxyOps, O, proxy_ctrl.appended_proxy_ops);          \
  FIELD(A, netPlugin.data, O, net_plugin.data);                                    \
  FIELD(A, kernelCh.pTimer, O, kernel_ch.p_timer);                                 \
  SIZE(A, O)

int main() {
  // Event type bits and states.
  SAME("ncclProfileGroup", ncclProfileGroup, NCP_EV_GROUP);
  SAME("ncclProfileColl", ncclProfileColl, NCP_EV_COLL);
  SAME("ncclProfileP2p", ncclProfileP2p, NCP_EV_P2P);
  SAME("ncclProfileProxyOp", ncclProfileProxyOp, NCP_EV_PROXY_OP);
  SAME("ncclProfileProxyStep", ncclProfileProxyStep, NCP_EV_PROXY_STEP);
  SAME("ncclProfileProxyCtrl", ncclProfileProxyCtrl, NCP_EV_PROXY_CTRL);
  SAME("ncclProfileKernelCh", ncclProfileKernelCh, NCP_EV_KERNEL_CH);
  SAME("ncclProfileNetPlugin", ncclProfileNetPlugin, NCP_EV_NET_PLUGIN);
  SAME("ncclProfilerProxyOpInProgress_v4", ncclProfilerProxyOpInProgress_v4, NCP_STATE_PROXY_OP_IN_PROGRESS);
  SAME("ncclProfilerProxyStepSendGPUWait", ncclProfilerProxyStepSendGPUWait, NCP_STATE_SEND_GPU_WAIT);
  SAME("ncclProfilerProxyStepSendPeerWait_v4", ncclProfilerProxyStepSendPeerWait_v4, NCP_STATE_SEND_PEER_WAIT);
  SAME("ncclProfilerProxyStepSendWait", ncclProfilerProxyStepSendWait, NCP_STATE_SEND_WAIT);
  SAME("ncclProfilerProxyStepRecvWait", ncclProfilerProxyStepRecvWait, NCP_STATE_RECV_WAIT);
  SAME("ncclProfilerProxyStepRecvFlushWait", ncclProfilerProxyStepRecvFlushWait, NCP_STATE_RECV_FLUSH_WAIT);
  SAME("ncclProfilerProxyStepRecvGPUWait", ncclProfilerProxyStepRecvGPUWait, NCP_STATE_RECV_GPU_WAIT);
  SAME("ncclProfilerProxyCtrlIdle", ncclProfilerProxyCtrlIdle, NCP_STATE_PROXY_CTRL_IDLE);
  SAME("ncclProfilerProxyCtrlAppendEnd", ncclProfilerProxyCtrlAppendEnd, NCP_STATE_PROXY_CTRL_APPEND_END);
  SAME("ncclProfilerNetPluginUpdate", ncclProfilerNetPluginUpdate, NCP_STATE_NET_PLUGIN_UPDATE);
  SAME("ncclProfilerKernelChStop", ncclProfilerKernelChStop, NCP_STATE_KERNEL_CH_STOP);
  SAME("sizeof(ncclProfilerEventState_t)", sizeof(ncclProfilerEventState_t), sizeof(ncp_state_t));
  SAME("sizeof(ncclResult_t)", sizeof(ncclResult_t), sizeof(ncp_result_t));

  COMMON_DESCR(ncclProfilerEventDescr_v4_t, ncp_descr_v4, coll);
  ARGS(ncclProfilerEventStateArgs_v4_t, ncp_state_args_v4);
  TABLE(ncclProfiler_v4_t, ncp_profiler_v4);
#if NCCL_V >= 5
  SAME("ncclProfileGroupApi", ncclProfileGroupApi, NCP_EV_GROUP_API);
  SAME("ncclProfileCollApi", ncclProfileCollApi, NCP_EV_COLL_API);
  SAME("ncclProfileP2pApi", ncclProfileP2pApi, NCP_EV_P2P_API);
  SAME("ncclProfileKernelLaunch", ncclProfileKernelLaunch, NCP_EV_KERNEL_LAUNCH);
  SAME("ncclProfilerGroupStartApiStop", ncclProfilerGroupStartApiStop, NCP_STATE_GROUP_START_API_STOP);
  SAME("ncclProfilerGroupEndApiStart", ncclProfilerGroupEndApiStart, NCP_STATE_GROUP_END_API_START);
  COMMON_DESCR(ncclProfilerEventDescr_v5_t, ncp_descr_v5, coll);
  V5_DESCR(ncclProfilerEventDescr_v5_t, ncp_descr_v5);
  ARGS(ncclProfilerEventStateArgs_v5_t, ncp_state_args_v5);
  TABLE(ncclProfiler_v5_t, ncp_profiler_v5);
#endif
#if NCCL_V >= 6
  SAME("ncclProfileCeColl", ncclProfileCeColl, NCP_EV_CE_COLL);
  SAME("ncclProfileCeSync", ncclProfileCeSync, NCP_EV_CE_SYNC);
  SAME("ncclProfileCeBatch", ncclProfileCeBatch, NCP_EV_CE_BATCH);
  COMMON_DESCR(ncclProfilerEventDescr_v6_t, ncp_descr_v6, coll);
  V5_DESCR(ncclProfilerEventDescr_v6_t, ncp_descr_v6);
  FIELD(ncclProfilerEventDescr_v6_t, ceColl.seqNumber, ncp_descr_v6, u.ce_coll.seq_number);
  FIELD(ncclProfilerEventDescr_v6_t, ceColl.root, ncp_descr_v6, u.ce_coll.root);
  FIELD(ncclProfilerEventDescr_v6_t, ceColl.syncStrategy, ncp_descr_v6, u.ce_coll.sync_strategy);
  FIELD(ncclProfilerEventDescr_v6_t, ceColl.intraBatchSync, ncp_descr_v6, u.ce_coll.intra_batch_sync);
  FIELD(ncclProfilerEventDescr_v6_t, ceColl.batchSize, ncp_descr_v6, u.ce_coll.batch_size);
  FIELD(ncclProfilerEventDescr_v6_t, ceColl.numBatches, ncp_descr_v6, u.ce_coll.num_batches);
  FIELD(ncclProfilerEventDescr_v6_t, ceColl.ceSeqNum, ncp_descr_v6, u.ce_coll.ce_seq_num);
  FIELD(ncclProfilerEventDescr_v6_t, ceColl.stream, ncp_descr_v6, u.ce_coll.stream);
  FIELD(ncclProfilerEventDescr_v6_t, ceCollSync.isComplete, ncp_descr_v6, u.ce_sync.is_complete);
  FIELD(ncclProfilerEventDescr_v6_t, ceCollSync.nRanks, ncp_descr_v6, u.ce_sync.n_ranks);
  FIELD(ncclProfilerEventDescr_v6_t, ceCollBatch.numOps, ncp_descr_v6, u.ce_batch.num_ops);
  FIELD(ncclProfilerEventDescr_v6_t, ceCollBatch.totalBytes, ncp_descr_v6, u.ce_batch.total_bytes);
  FIELD(ncclProfilerEventDescr_v6_t, ceCollBatch.useIntraSync, ncp_descr_v6, u.ce_batch.use_intra_sync);
  ARGS(ncclProfilerEventStateArgs_v6_t, ncp_state_args_v6);
  TABLE(ncclProfiler_v6_t, ncp_profiler_v6);
#endif
  std::printf("%d checks, %d mismatches\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
