// How the states NCCL records for a ProxyStep become its op's record: the six phase sums,
// the fill's share, the wire of a send, the shortest step, and the in-flight view (oldest open
// step, its phase and since when). Pure arithmetic on an OpState: no shard, no clock.
// Header-only so that the event path (event_handlers.cpp) inlines it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "plugin/event_pools.hpp"
#include "plugin/nccl_profiler_abi.h"

namespace culprit::plugin {

// The phase (order of culprit::Phase) a step state starts, -1 for any other state.
inline int phase_of_state(ncp_state_t s) {
  switch (s) {
    case NCP_STATE_SEND_GPU_WAIT: return 0;
    case NCP_STATE_SEND_PEER_WAIT: return 1;
    case NCP_STATE_SEND_WAIT: return 2;
    case NCP_STATE_RECV_WAIT: return 3;
    case NCP_STATE_RECV_FLUSH_WAIT: return 4;
    case NCP_STATE_RECV_GPU_WAIT: return 5;
    default: return -1;
  }
}

// In-flight view of an op: its oldest open step's latest state and since when. States of
// younger steps wait for their stop.
inline void show_oldest_open_step(OpState* op) {
  shard::OpRecord& r = op->rec;
  const StepState* oldest = nullptr;
  for (const StepState& s : op->steps)
    if (s.active && (oldest == nullptr || s.step < oldest->step)) oldest = &s;
  op->view_slot = oldest ? static_cast<int32_t>(oldest - op->steps) : -1;
  r.open_steps = static_cast<uint8_t>(op->open > 255 ? 255 : op->open);
  if (oldest != nullptr) {
    r.cur_phase = -1;
    r.phase_since_ns = oldest->start_ns;
    for (int p = shard::kPhases - 1; p >= 0; --p) {
      if (oldest->mask & (1u << p)) {
        r.cur_phase = static_cast<int8_t>(p);
        r.phase_since_ns = oldest->ts[p];
        break;
      }
    }
  } else {
    r.cur_phase = -1;
  }
}

// An op's shortest step (OpRecord::shortest_step_ns): at least 1 ns, since 0 means unknown.
inline void note_shortest_step(shard::OpRecord& r, uint64_t duration_ns) {
  const uint32_t shown = duration_ns >= UINT32_MAX ? UINT32_MAX : std::max<uint32_t>(1, static_cast<uint32_t>(duration_ns));
  if (r.shortest_step_ns == 0 || shown < r.shortest_step_ns) r.shortest_step_ns = shown;
}

// The wire of a send: its shortest SendWait, and the time SendWait intervals cover after the
// first completion (queued sends overlap; the intervals of one connection begin and end in
// order, so each adds what lies beyond the latest end so far), and how many of those
// intervals began before that latest end (queued: the wire's time on them is one transfer).
inline void note_send_wait(OpState* op, uint64_t begin, uint64_t end) {
  shard::OpRecord& r = op->rec;
  if (end <= begin) return;
  note_shortest_step(r, end - begin);
  if (op->wire_covered_ns == 0) {
    op->wire_covered_ns = end;  // the first completion: what was queued before it is left out
    return;
  }
  const uint64_t from = std::max(begin, op->wire_covered_ns);
  if (begin < op->wire_covered_ns) ++r.wire_queued_steps;  // queued behind the previous send
  if (end > from) r.wire_busy_ns += end - from;
  op->wire_covered_ns = std::max(op->wire_covered_ns, end);
}

// Phases of a step that stopped at `stop`: each lasts from its state until the next recorded
// state of the step, or until the step stopped. A receive's RecvGpuWait, the GPU consuming the
// slot, begins no earlier than `kernel_start` (its channel's kernel, as the proxy saw it start;
// 0: unknown): where the host runs ahead, data lands before the kernel reaches the collective,
// and the wait until then is the GPU's way there, not its consumption (as the trace reader,
// docs/formats.md).
inline void add_step_phases(OpState* op, const StepState* s, uint64_t stop, uint64_t kernel_start) {
  shard::OpRecord& r = op->rec;
  const uint8_t m = s->mask;
  for (int p = 0; p < shard::kPhases; ++p) {
    if (!(m & (1u << p))) continue;
    uint64_t end = stop;
    for (int q = p + 1; q < shard::kPhases; ++q) {
      if (m & (1u << q)) {
        end = s->ts[q];
        break;
      }
    }
    const uint64_t begin = p == 5 ? std::max(s->ts[p], kernel_start) : s->ts[p];
    if (end > begin) {
      r.phase_ns[p] += end - begin;
      if (s->step < shard::kFillSteps) r.fill_phase_ns[p] += end - begin;
    }
    if (p == 2 && (r.flags & shard::kOpSend)) note_send_wait(op, begin, end);
    // A receive's shortest RecvGpuWait: a GPU slow to consume is slow in every step.
    if (p == 5 && !(r.flags & shard::kOpSend)) note_shortest_step(r, end > begin ? end - begin : 0);
  }
}

// A step that stopped at `stop`: its phases, steps and bytes join its op; its slot closes.
inline void finish_step(OpState* op, StepState* s, uint64_t stop, uint64_t kernel_start) {
  shard::OpRecord& r = op->rec;
  if (s->mask != 0) {
    add_step_phases(op, s, stop, kernel_start);
    ++r.steps;
    if (s->step < shard::kFillSteps) ++r.fill_steps;
    uint64_t b = s->trans;
    if (r.chunk_bytes > 0 && (b == 0 || b > r.chunk_bytes)) b = r.chunk_bytes;
    r.bytes += b;
  }
  s->active = 0;
  --op->open;
}

}  // namespace culprit::plugin
