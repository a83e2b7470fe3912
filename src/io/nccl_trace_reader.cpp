#include "io/nccl_trace_reader.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <tuple>
#include <vector>

#include "io/line_reader.hpp"
#include "io/slot_gates.hpp"
#include "io/trace_line.hpp"

namespace culprit {
namespace {

// Timestamps within this tolerance of their op's bounds still count as inside it: the
// plugin's clocks are read at slightly different moments.
constexpr int64_t kBoundsToleranceNs = 1000;
constexpr uint32_t kNoContext = UINT32_MAX;
// Bounds on what one file can make the parser hold (real files nest 7 deep and print at most
// 32 steps per op): a hostile or broken file costs memory in proportion to its records only.
constexpr size_t kMaxDepth = 64;
constexpr size_t kMaxStepsPerOp = 1024;

// Why something was not used. Counted in an array while reading (no string per event) and
// turned into InputReport::reject_reasons at the end. Texts stay under 96 characters (the
// exchange carries the top three of each file).
enum Reason : int {
  kMalformedLine,
  kUnknownPhase,
  kEndWithoutBegin,
  kUnterminatedOp,
  kUnterminatedAtEof,
  kCollWithoutIds,
  kP2pWithoutIds,
  kPxnOp,
  kOpOfUnidentified,
  kOpWithoutChannel,
  kOpWithoutEnd,
  kStaleStep,
  kDuplicateStep,
  kSendStepWithoutEnd,
  kRecvStepWithoutEnd,
  kOpWithoutValidStep,
  kTooDeep,
  kTooManySteps,
  kReasonCount,
};

constexpr std::array<const char*, kReasonCount> kReasonText = {
    "malformed line",
    "unknown event phase",
    "end without matching begin",
    "unterminated proxy op",
    "unterminated event at end of file (truncated?)",
    "COLL event without CommHash/Rank/SeqNum",
    "P2P event without CommHash/Rank",
    "proxy op outside any collective (PXN op of another process)",
    "proxy op of an unidentified collective",
    "proxy op without Channel/Peer",
    "proxy op without its end (in flight when the trace was written)",
    "step with stale or non-increasing timestamps",
    "duplicate step (retried receive)",
    "send step without its end (last phase not counted)",
    "receive step without its end (last phase not counted)",
    "proxy op without a valid step",
    "event nested more than 64 deep (unterminated events?)",
    "proxy op with more than 1024 steps (the rest ignored)",
};

int phase_of(std::string_view name) {
  // Hot: one call per NET line. Dispatch on length first.
  switch (name.size()) {
    case 8:
      if (name == "SendWait") return kSendWait;
      if (name == "RecvWait") return kRecvWait;
      break;
    case 11:
      if (name == "SendGpuWait") return kSendGpuWait;
      if (name == "RecvGpuWait") return kRecvGpuWait;
      break;
    case 12:
      if (name == "SendPeerWait") return kSendPeerWait;
      break;
    case 13:
      if (name == "RecvFlushWait") return kRecvFlushWait;
      break;
    default:
      break;
  }
  return -1;
}

enum class FrameKind : uint8_t { kColl, kP2p, kKernelCh, kSchedule, kProgress, kNet, kStepStart, kOther };

// One open "b" line. Its name and category are kept as a hash: an "e" line closes the
// innermost open event with the same name, category and id.
struct Frame {
  uint64_t key = 0;
  int64_t id = -1;
  uint32_t context = kNoContext;  // kColl / kP2p: index into contexts
  FrameKind kind = FrameKind::kOther;
  int8_t phase = -1;              // kNet
};

inline uint64_t frame_key(std::string_view name, std::string_view cat) {
  // FNV-1a over name, a separator and cat.
  uint64_t h = 1469598103934665603ull;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  h = (h ^ 0xFFu) * 1099511628211ull;
  for (char c : cat) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

// The COLL or P2P that encloses proxy ops.
struct Context {
  uint64_t comm_hash = 0;
  int32_t rank = -1;
  uint64_t seq = 0;
  bool is_p2p = false;
  bool is_tree = false;  // the collective's Algorithm is NCCL's tree
  bool valid = false;
  bool process_known = false;
  uint32_t process = 0;
  uint64_t min_start_clk = 0;
  int64_t min_start_host_ns = 0;  // the ts of the KernelCh event with min_start_clk
  uint64_t max_stop_clk = 0;
  // Per channel, when its kernel started on the host's clock (its KernelCh ts), where seen.
  std::vector<std::pair<int32_t, int64_t>> channel_start_host_ns;
  // Per channel, when its kernel stopped on the GPU's timer, where recorded.
  std::vector<std::pair<int32_t, uint64_t>> channel_stop_clk;
};

struct StepAcc {
  int64_t net_id = -1;
  int64_t step = -1;
  int64_t start = 0;     // 2.23-2.26: the step event's start (Send/RecvBufferWait begins)
  bool has_start = false;
  int64_t begin[kPhaseCount] = {0, 0, 0, 0, 0, 0};
  int64_t end[kPhaseCount] = {0, 0, 0, 0, 0, 0};
  uint8_t has_begin = 0, has_end = 0;
};

struct OpState {
  bool open = false;
  bool is_send = false;
  int32_t channel = -1, peer = -1, n_steps = 0;
  uint64_t chunk = 0, trans = 0;
  int64_t start_ts = 0;
  uint32_t context = kNoContext;
  bool too_many_steps = false;
  std::vector<StepAcc> steps;  // capacity reused from op to op

  void reset() {
    open = false;
    is_send = false;
    channel = peer = -1;
    n_steps = 0;
    chunk = trans = 0;
    start_ts = 0;
    context = kNoContext;
    too_many_steps = false;
    steps.clear();
  }
};

// What the lines said about the plugin version that wrote them (FORMATS.md §2).
struct LayoutSeen {
  bool old_proxy = false;    // proxy ops named Send/Recv in PROXY, nMaxChannels (2.23-2.26)
  bool v223 = false;         // integer Datatype, ncclAllReduce-style names (2.23)
  bool new_proxy = false;    // ScheduleSend/ProgressSend (2.27+)
  bool api = false;          // GROUP_API, COLL_API, P2P_API, KERNEL_LAUNCH (2.28+)
  bool invalid_json = false; // bare tokens, "key":value (2.28-2.29.2)
  bool ce = false;           // CE_COLL, CE_SYNC, CE_BATCH (2.29.3+)
  bool coll = false;

  const char* name() const {
    if (old_proxy) return v223 ? "2.23" : "2.24-2.26";
    if (ce) return "2.29.3+";
    if (api) return invalid_json ? "2.28-2.29.2" : "2.29.3+";
    if (invalid_json) return "2.28-2.29.2";
    if (new_proxy || coll) return "2.27+";
    return "unknown";
  }
};

inline bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && std::memcmp(s.data(), p.data(), p.size()) == 0;
}

class TraceParser {
 public:
  TraceParser(const std::string& host, LocalData& data, InputReport& report)
      : host_(host), data_(data), report_(report) {}

  void line(std::string_view text) {
    size_t a = 0, b = text.size();
    while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r')) ++a;
    while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\r')) --b;
    text = text.substr(a, b - a);
    if (text.size() <= 4 && (text.empty() || text == "[" || text == "]" || text == "{}]" ||
                             text == "{}" || text == "{}],")) {
      if (text == "{}]" || text == "]") saw_closing_line_ = true;
      return;
    }
    saw_closing_line_ = false;  // events after a closing line: a later, unfinished part
    if (!parse_trace_line(text, ev_, scratch_)) {
      ++reasons_[kMalformedLine];
      return;
    }
    ++events_;
    if (ev_.bare_token || ev_.tight_colon) layout_.invalid_json = true;
    if (ev_.pid >= 0 && (!process_known_ || ev_.pid != process_pid_)) {
      process_ = data_.process_index(host_, ev_.pid);
      process_pid_ = ev_.pid;
      process_known_ = true;
    }
    if (ev_.ph == 'b') begin(ev_);
    else if (ev_.ph == 'e') end(ev_);
    else ++reasons_[kUnknownPhase];
  }

  void finish() {
    // Frames still open at the end of the file: the file was cut short (or the job died).
    for (const Frame& f : stack_) {
      if (f.kind == FrameKind::kProgress || f.kind == FrameKind::kColl || f.kind == FrameKind::kP2p)
        ++reasons_[kUnterminatedAtEof];
      // A trace cut inside a collective says nothing about how far that process got.
      if (f.kind == FrameKind::kColl && contexts_[f.context].valid)
        data_.mark_cut_short(contexts_[f.context].comm_hash, contexts_[f.context].rank);
    }
    stack_.clear();
    // The plugin always ends a file with "{}]": without it the file was cut short, and how
    // far its processes got is unknown (it must not look like a rank that stopped).
    if (events_ > 0 && !saw_closing_line_) {
      report_.truncated = true;
      report_.reject("file ends before its closing line (truncated)");
      for (const auto& [comm_hash, rank] : file_ranks_) data_.mark_cut_short(comm_hash, rank);
    }
    // The send/recv calls made, per communicator, rank, peer and direction; a truncated
    // file says nothing about how many calls its process made.
    if (process_known_ && !report_.truncated)
      for (const auto& [key, calls] : p2p_ordinal_) {
        const auto& [comm_hash, rank, peer, send] = key;
        if (peer < 0 || peer > INT32_MAX) continue;
        P2pCallCount c;
        c.comm_hash = comm_hash;
        c.calls = calls;
        c.process = process_;
        c.rank = rank;
        c.peer = static_cast<int32_t>(peer);
        c.is_send = send ? 1 : 0;
        data_.p2p_calls.push_back(c);
      }
    flush_reasons();
    report_.layout = events_ > 0 ? layout_.name() : "unknown";
    if (events_ == 0 && report_.error.empty()) {
      report_.error = report_.rejected > 0 ? "not an NCCL profiler trace (no readable event line)"
                                           : "empty trace (no event line)";
    }
  }

  void flush_reasons() {
    for (int r = 0; r < kReasonCount; ++r) {
      if (reasons_[r]) report_.reject(kReasonText[r], reasons_[r]);
      reasons_[r] = 0;
    }
  }

 private:
  FrameKind classify(const TraceLine& ev, int* phase) {
    std::string_view cat = ev.cat, name = ev.name;
    switch (cat.size()) {
      case 3:
        if (cat == "NET") {
          *phase = phase_of(name);
          if (*phase >= 0) return FrameKind::kNet;
          // 2.23-2.26 SendBufferWait/RecvBufferWait: not a phase, but it begins at the step
          // event's start, which tells a retried step's stale copy from the real one.
          if (name == "SendBufferWait" || name == "RecvBufferWait") return FrameKind::kStepStart;
          return FrameKind::kOther;
        }
        if (cat == "P2P") return FrameKind::kP2p;
        if (cat == "GPU" && name == "KernelCh") return FrameKind::kKernelCh;
        break;
      case 4:
        if (cat == "COLL") return FrameKind::kColl;
        break;
      case 5:
        if (cat == "PROXY") {
          if (name == "ProgressSend" || name == "ProgressRecv") {
            layout_.new_proxy = true;
            return FrameKind::kProgress;
          }
          if (name == "ScheduleSend" || name == "ScheduleRecv") {
            layout_.new_proxy = true;
            return FrameKind::kSchedule;
          }
          if (name == "Send" || name == "Recv") {  // 2.23-2.26 proxy op
            layout_.old_proxy = true;
            return FrameKind::kProgress;
          }
        }
        break;
      default:
        if (cat == "GROUP_API" || cat == "COLL_API" || cat == "P2P_API" || cat == "KERNEL_LAUNCH")
          layout_.api = true;
        else if (starts_with(cat, "CE_"))
          layout_.ce = true;
        break;
    }
    return FrameKind::kOther;
  }

  void begin(const TraceLine& ev) {
    if (stack_.size() >= kMaxDepth) {
      ++reasons_[kTooDeep];
      return;
    }
    Frame f;
    f.key = frame_key(ev.name, ev.cat);
    f.id = ev.id;
    int phase = -1;
    f.kind = classify(ev, &phase);
    switch (f.kind) {
      case FrameKind::kColl:
      case FrameKind::kP2p:
        f.context = static_cast<uint32_t>(contexts_.size());
        contexts_.push_back(context_of(ev, f.kind == FrameKind::kP2p));
        if (f.context == gate_context_) drop_gate_ops();  // kept for a collective that never ended
        break;
      case FrameKind::kKernelCh: {
        uint64_t clk = 0;
        uint32_t ctx = innermost_context();
        if (ctx != kNoContext && parse_u64(ev.arg("StartGpuClk"), &clk) && clk > 0) {
          Context& c = contexts_[ctx];
          if (c.min_start_clk == 0 || clk < c.min_start_clk) {
            c.min_start_clk = clk;
            c.min_start_host_ns = ev.ts_ns;
          }
          int64_t channel = -1;
          const bool has_channel = parse_i64(ev.arg("Channel"), &channel) && channel >= 0 && channel <= INT32_MAX;
          if (has_channel && ev.ts_ns > 0)
            c.channel_start_host_ns.emplace_back(static_cast<int32_t>(channel), ev.ts_ns);
          // Only channel 0 carries StopGpuClk from 2.28 on (others print 0): take the max.
          uint64_t stop = 0;
          if (parse_u64(ev.arg("StopGpuClk"), &stop) && stop > clk) {
            c.max_stop_clk = std::max(c.max_stop_clk, stop);
            if (has_channel) c.channel_stop_clk.emplace_back(static_cast<int32_t>(channel), stop);
          }
        }
        break;
      }
      case FrameKind::kSchedule:
        schedule_ts_ = ev.ts_ns;
        schedule_id_ = ev.id;
        break;
      case FrameKind::kProgress:
        open_op(ev);
        break;
      case FrameKind::kNet:
        f.phase = static_cast<int8_t>(phase);
        step_begin(ev, phase);
        break;
      case FrameKind::kStepStart:
        step_start(ev);
        break;
      default:
        break;
    }
    stack_.push_back(f);
  }

  void end(const TraceLine& ev) {
    // Lines nest strictly; find the matching begin from the top.
    const uint64_t key = frame_key(ev.name, ev.cat);
    size_t match = stack_.size();
    for (size_t k = stack_.size(); k-- > 0;) {
      if (stack_[k].id == ev.id && stack_[k].key == key) {
        match = k;
        break;
      }
    }
    if (match == stack_.size()) {
      ++reasons_[kEndWithoutBegin];
      return;
    }
    const bool popped_unterminated = stack_.size() > match + 1;
    while (stack_.size() > match + 1) {
      if (stack_.back().kind == FrameKind::kProgress) {
        ++reasons_[kUnterminatedOp];
        op_.open = false;
      }
      stack_.pop_back();
    }
    Frame f = stack_.back();
    stack_.pop_back();
    // Contexts live while their frame is open: those of f and of frames above it go now
    // (after f's own use below).
    const bool owns_context = f.kind == FrameKind::kColl || f.kind == FrameKind::kP2p;
    const bool trim_contexts = owns_context || popped_unterminated;
    switch (f.kind) {
      case FrameKind::kNet:
        step_end(ev, f.id, f.phase);
        break;
      case FrameKind::kProgress:
        close_op(ev.ts_ns);
        break;
      case FrameKind::kColl:
      case FrameKind::kP2p:
        close_context(f.context);
        break;
      default:
        break;
    }
    if (trim_contexts) {
      size_t keep = 0;
      for (const Frame& open : stack_)
        if (open.kind == FrameKind::kColl || open.kind == FrameKind::kP2p)
          keep = std::max<size_t>(keep, open.context + 1);
      if (keep < contexts_.size()) contexts_.resize(keep);
    }
  }

  Context context_of(const TraceLine& ev, bool is_p2p) {
    Context c;
    c.is_p2p = is_p2p;
    c.process = process_;
    c.process_known = process_known_;
    int64_t rank = -1;
    c.valid = parse_u64(ev.arg("CommHash"), &c.comm_hash) && parse_i64(ev.arg("Rank"), &rank) &&
              rank >= 0 && rank <= INT32_MAX;
    c.rank = static_cast<int32_t>(rank);
    if (!is_p2p) {
      layout_.coll = true;
      if (ev.has_arg("nMaxChannels")) layout_.old_proxy = true;  // 2.23-2.26 COLL args
      std::string_view dt = ev.arg("Datatype");
      if (starts_with(ev.name, "nccl") || (!dt.empty() && dt[0] >= '0' && dt[0] <= '9'))
        layout_.v223 = true;
      c.valid = c.valid && parse_u64(ev.arg("SeqNum"), &c.seq);
      c.is_tree = names_tree_algorithm(ev.arg("Algorithm"));
    } else {
      int64_t peer = -1;
      parse_i64(ev.arg("Peer"), &peer);
      // An ordinal per (communicator, rank, peer, direction): the k-th Send of a rank to a
      // peer meets the k-th Recv of that peer from it. 2.23 names them ncclSend/ncclRecv.
      bool send = ev.name.find("Send") != std::string_view::npos;
      if (c.valid) c.seq = p2p_ordinal_[std::make_tuple(c.comm_hash, c.rank, peer, send)]++;
    }
    if (!c.valid) {
      ++reasons_[is_p2p ? kP2pWithoutIds : kCollWithoutIds];
    } else {
      if (c.process_known) data_.note_comm_rank(c.comm_hash, c.rank, c.process, !is_p2p, c.seq);
      file_ranks_.emplace(c.comm_hash, c.rank);
    }
    return c;
  }

  uint32_t innermost_context() const {
    for (size_t k = stack_.size(); k-- > 0;)
      if (stack_[k].kind == FrameKind::kColl || stack_[k].kind == FrameKind::kP2p)
        return stack_[k].context;
    return kNoContext;
  }

  void close_context(uint32_t index) {
    const Context& c = contexts_[index];
    if (gate_context_ == index) emit_gated_holds();
    if (c.valid && c.min_start_clk > 0 && c.process_known) {
      KernelStartRecord k;
      k.comm_hash = c.comm_hash;
      k.seq = c.seq;
      k.start_gpu_clk_ns = c.min_start_clk;
      k.stop_gpu_clk_ns = c.max_stop_clk;
      k.start_host_ns = c.min_start_host_ns;
      k.process = c.process;
      k.rank = c.rank;
      k.is_p2p = c.is_p2p ? 1 : 0;
      k.tree = c.is_tree ? 1 : 0;
      data_.kernel_starts.push_back(k);
      for (const auto& [channel, stop] : c.channel_stop_clk) {
        ChannelStopRecord s;
        s.comm_hash = c.comm_hash;
        s.seq = c.seq;
        s.stop_gpu_clk_ns = stop;
        s.process = c.process;
        s.rank = c.rank;
        s.channel = channel;
        data_.channel_stops.push_back(s);
      }
    }
  }

  void open_op(const TraceLine& ev) {
    op_.reset();
    op_.open = true;
    op_.is_send = ev.name == "ProgressSend" || ev.name == "Send";
    int64_t v = 0;
    if (parse_i64(ev.arg("Channel"), &v) && v >= 0 && v <= INT32_MAX) op_.channel = static_cast<int32_t>(v);
    if (parse_i64(ev.arg("Peer"), &v) && v >= 0 && v <= INT32_MAX) op_.peer = static_cast<int32_t>(v);
    if (parse_i64(ev.arg("Steps"), &v) && v >= 0 && v <= INT32_MAX) op_.n_steps = static_cast<int32_t>(v);
    parse_u64(ev.arg("ChunkSize"), &op_.chunk);
    parse_u64(ev.arg("transSize"), &op_.trans);
    // 2.27+: the op starts when it is scheduled (ScheduleX carries the same id as ProgressX).
    bool scheduled = schedule_ts_ > 0 && schedule_id_ == ev.id && schedule_ts_ <= ev.ts_ns;
    op_.start_ts = scheduled ? schedule_ts_ : ev.ts_ns;
    schedule_ts_ = 0;
    op_.context = innermost_context();
  }

  // The step event with this line's id (the phases of one step share it), added when new.
  StepAcc* step_of(const TraceLine& ev) {
    if (!op_.steps.empty() && op_.steps.back().net_id == ev.id) return &op_.steps.back();
    if (op_.steps.size() >= kMaxStepsPerOp) {
      if (!op_.too_many_steps) ++reasons_[kTooManySteps];
      op_.too_many_steps = true;
      return nullptr;
    }
    StepAcc& acc = op_.steps.emplace_back();
    acc.net_id = ev.id;
    parse_i64(ev.arg("Step"), &acc.step);
    return &acc;
  }

  void step_start(const TraceLine& ev) {
    if (!op_.open) return;
    StepAcc* acc = step_of(ev);
    if (acc && !acc->has_start) {
      acc->start = ev.ts_ns;
      acc->has_start = true;
    }
  }

  void step_begin(const TraceLine& ev, int phase) {
    if (!op_.open) return;
    StepAcc* acc = step_of(ev);
    if (!acc) return;
    // When a state is recorded again (retries), the first entry is the one that counts.
    if (!(acc->has_begin & (1u << phase))) {
      acc->begin[phase] = ev.ts_ns;
      acc->has_begin |= static_cast<uint8_t>(1u << phase);
    }
  }

  void step_end(const TraceLine& ev, int64_t net_id, int phase) {
    if (!op_.open || op_.steps.empty() || phase < 0 || op_.too_many_steps) return;
    StepAcc& acc = op_.steps.back();
    if (acc.net_id != net_id) return;
    if ((acc.has_begin & (1u << phase)) && !(acc.has_end & (1u << phase))) {
      acc.end[phase] = ev.ts_ns;
      acc.has_end |= static_cast<uint8_t>(1u << phase);
    }
  }

  enum class StepVerdict { kStale, kComplete, kMissingEnd };

  // A step counts only when its phases have increasing times inside its op: step slots are
  // reused without clearing, so stale and zero timestamps are common (FORMATS.md §2, 4).
  // Phases are taken in order while they are consistent; a step whose last phases lack a
  // usable end (a receive in 2.24-2.26 that was never stopped, defect 7) keeps the phases
  // before them. `kept` gets the mask of the phases to sum.
  StepVerdict check_step(const StepAcc& s, int64_t op_begin, int64_t op_end, uint8_t* kept) const {
    *kept = 0;
    // No phase begins before its step event started (2.23-2.26 print that start): a retried
    // receive's abandoned copy carries the older times of its slot's previous occupant.
    int64_t previous_end = s.has_start ? s.start : 0;
    for (int p = 0; p < kPhaseCount; ++p) {
      if (!(s.has_begin & (1u << p))) continue;
      const int64_t b = s.begin[p], e = s.end[p];
      bool begin_ok = b > 0 && b >= op_begin - kBoundsToleranceNs &&
                      b <= op_end + kBoundsToleranceNs && b + kBoundsToleranceNs >= previous_end;
      if (!begin_ok) return *kept ? StepVerdict::kMissingEnd : StepVerdict::kStale;
      bool end_ok = (s.has_end & (1u << p)) && e >= b && e <= op_end + kBoundsToleranceNs;
      if (!end_ok) return *kept ? StepVerdict::kMissingEnd : StepVerdict::kStale;
      *kept |= static_cast<uint8_t>(1u << p);
      previous_end = e;
    }
    return *kept ? StepVerdict::kComplete : StepVerdict::kStale;
  }

  // The handoff line of the op being closed (HandoffLine), for a collective's op with three
  // steps or more: times relative to the first, so that the sums stay exact in doubles.
  void fit_handoff_line(const ProxyOpRecord& r) {
    const size_t n = handoffs_.size();
    if (n >= 3 && !r.is_p2p && !r.seq_unknown) {
      const int64_t origin = handoffs_[0].second;
      double sk = 0, st = 0;
      for (const auto& [k, t] : handoffs_) {
        sk += static_cast<double>(k);
        st += static_cast<double>(t - origin);
      }
      const double mk = sk / static_cast<double>(n), mt = st / static_cast<double>(n);
      double skk = 0, skt = 0;
      for (const auto& [k, t] : handoffs_) {
        skk += (static_cast<double>(k) - mk) * (static_cast<double>(k) - mk);
        skt += (static_cast<double>(k) - mk) * (static_cast<double>(t - origin) - mt);
      }
      if (skk > 0) {
        HandoffLine h;
        h.comm_hash = r.comm_hash;
        h.seq = r.seq;
        h.mean_ns = origin + static_cast<int64_t>(std::llround(mt));
        h.step_mean = mk;
        h.ns_per_step = skt / skk;
        h.process = r.process;
        h.rank = r.rank;
        h.channel = r.channel;
        h.steps = static_cast<uint32_t>(n);
        h.is_send = r.is_send;
        data_.handoffs.push_back(h);
      }
    }
    handoffs_.clear();
  }

  // When the kernel of `ctx` started on `channel`, on the host's clock (0: unknown).
  static int64_t kernel_start_of(const Context& ctx, int32_t channel) {
    for (const auto& [ch, ts] : ctx.channel_start_host_ns)
      if (ch == channel) return ts;
    return 0;
  }

  // Where phase p of step s begins: RecvGpuWait, the GPU consuming a slot, begins no earlier
  // than the kernel that consumes it (a host that runs ahead has its proxy receive data before
  // its GPU reaches the collective; that wait is the GPU's way to the collective, not its
  // consumption).
  static int64_t phase_begin(const StepAcc& s, int p, int64_t kernel_start) {
    if (p != kRecvGpuWait || kernel_start <= 0) return s.begin[p];
    return std::min(std::max(kernel_start, s.begin[p]), s.end[p]);
  }

  void close_op(int64_t end_ts) {
    if (!op_.open) return;
    op_.open = false;
    if (op_.context == kNoContext) {
      ++reasons_[kPxnOp];
      return;
    }
    const Context& ctx = contexts_[op_.context];
    if (!ctx.valid) {
      ++reasons_[kOpOfUnidentified];
      return;
    }
    if (op_.channel < 0 || op_.peer < 0) {
      ++reasons_[kOpWithoutChannel];
      return;
    }
    // An op still in flight when the plugin wrote the file keeps the stale stop time of its
    // pool slot's previous occupant (or 0): nothing in it can be bounded.
    if (end_ts <= 0 || end_ts < op_.start_ts) {
      ++reasons_[kOpWithoutEnd];
      return;
    }
    ProxyOpRecord r;
    r.comm_hash = ctx.comm_hash;
    r.seq = ctx.seq;
    r.rank = ctx.rank;
    r.peer = op_.peer;
    r.channel = op_.channel;
    r.is_send = op_.is_send ? 1 : 0;
    r.is_p2p = ctx.is_p2p ? 1 : 0;
    r.process = ctx.process_known ? ctx.process : process_;
    r.start_ns = static_cast<uint64_t>(std::max<int64_t>(op_.start_ts, 0));
    r.end_ns = static_cast<uint64_t>(std::max<int64_t>(end_ts, op_.start_ts));
    // transSize can be inflated by slot reuse; Steps x ChunkSize bounds it.
    r.bytes = op_.trans;
    if (op_.n_steps > 0 && op_.chunk > 0)
      r.bytes = std::min<uint64_t>(r.bytes, static_cast<uint64_t>(op_.n_steps) * op_.chunk);
    // Of several valid copies of one Step (a retried receive starts a new step event per
    // attempt; the abandoned ones keep their slot's older, stale times), the copy that
    // begins last is the real one, whatever the order the slots are printed in.
    chosen_.clear();
    for (const StepAcc& s : op_.steps) {
      uint8_t kept = 0;
      StepVerdict v = check_step(s, op_.start_ts, end_ts, &kept);
      if (v == StepVerdict::kStale) {
        ++reasons_[kStaleStep];
        continue;
      }
      int64_t first_begin = s.begin[std::countr_zero(static_cast<unsigned>(kept))];
      Chosen c{&s, first_begin, kept, v == StepVerdict::kMissingEnd};
      auto same = std::find_if(chosen_.begin(), chosen_.end(), [&](const Chosen& o) { return o.step->step == s.step; });
      if (same == chosen_.end()) {
        chosen_.push_back(c);
        continue;
      }
      ++reasons_[kDuplicateStep];
      if (first_begin > same->first_begin) *same = c;
    }
    handoffs_.clear();
    const int64_t kernel_start = r.is_send ? 0 : kernel_start_of(ctx, op_.channel);
    for (const Chosen& c : chosen_) {
      if (c.missing_end) ++reasons_[op_.is_send ? kSendStepWithoutEnd : kRecvStepWithoutEnd];
      for (int p = 0; p < kPhaseCount; ++p)
        if (c.kept & (1u << p))
          r.phase_ns[p] += static_cast<uint64_t>(c.step->end[p] - phase_begin(*c.step, p, kernel_start));
      if (!r.is_send && (c.kept & (1u << kRecvGpuWait))) {
        const int64_t begin = phase_begin(*c.step, kRecvGpuWait, kernel_start);
        auto consume = static_cast<uint64_t>(c.step->end[kRecvGpuWait] - begin);
        if (!r.has_recv_gpu_wait_min || consume < r.recv_gpu_wait_min_ns) r.recv_gpu_wait_min_ns = consume;
        r.has_recv_gpu_wait_min = 1;
      }
      if (r.is_send && (c.kept & (1u << kSendWait)))
        wire_.emplace_back(c.step->begin[kSendWait], c.step->end[kSendWait]);
      const int handoff = r.is_send ? kSendGpuWait : kRecvGpuWait;
      if (c.kept & (1u << handoff)) handoffs_.emplace_back(c.step->step, c.step->end[handoff]);
      ++r.steps;
    }
    for (const auto& [b, e] : wire_)
      if (e > b && (r.send_wait_min_ns == 0 || static_cast<uint64_t>(e - b) < r.send_wait_min_ns))
        r.send_wait_min_ns = static_cast<uint64_t>(e - b);
    if (wire_.size() >= 2) {
      // The wire's busy time for all but the first completion: the union of the SendWait
      // intervals after the first send completed. Sends queued behind each other overlap and
      // then complete one transfer apart; a backlog already queued when the op's first
      // recorded step started (only the last steps of a long op are recorded) is left out.
      int64_t clip = wire_[0].second;
      for (const auto& iv : wire_) clip = std::min(clip, iv.second);
      std::sort(wire_.begin(), wire_.end());
      int64_t busy = 0, from = clip, to = clip;
      uint32_t queued = 0;
      bool first = true;  // the first completion carries no wire time of its own
      for (auto [b, e] : wire_) {
        if (!first && b < to) ++queued;  // began before the previous send had completed
        first = false;
        b = std::max(b, clip);
        if (e <= b) continue;
        if (b > to) {
          busy += to - from;
          from = b;
        }
        to = std::max(to, e);
      }
      busy += to - from;
      r.send_wire_busy_ns = static_cast<uint64_t>(busy);
      r.wire_steps = static_cast<uint32_t>(wire_.size() - 1);
      r.wire_queued_steps = queued;
    }
    wire_.clear();
    if (r.steps == 0) {
      handoffs_.clear();
      ++reasons_[kOpWithoutValidStep];
      return;
    }
    fit_handoff_line(r);
    if (!r.is_p2p && !r.seq_unknown) keep_gate_op(r, kernel_start);
    data_.ops.push_back(r);
    ++report_.records;
  }

  // Keeps the per-step times of a collective's op closed with `r` until its collective ends
  // (io/slot_gates.hpp): a receive's steps that the GPU freed, a send's that it handed over.
  void keep_gate_op(const ProxyOpRecord& r, int64_t kernel_start) {
    if (gate_context_ != op_.context) {
      drop_gate_ops();
      gate_context_ = op_.context;
    }
    // The ops' storage is kept from collective to collective: most files hold thousands.
    if (gate_used_ == gate_ops_.size()) gate_ops_.emplace_back();
    GateOp& op = gate_ops_[gate_used_++];
    op.is_send = r.is_send;
    op.channel = r.channel;
    op.steps.clear();
    const int handoff = r.is_send ? kSendGpuWait : kRecvGpuWait;
    for (const Chosen& c : chosen_) {
      // Step numbers past int32 are garbage, and shifting them could overflow.
      if (!(c.kept & (1u << handoff)) || c.step->step < 0 || c.step->step > INT32_MAX) continue;
      StepSpan s;
      s.step = c.step->step;
      s.to = c.step->end[handoff];
      if (!r.is_send) s.from = phase_begin(*c.step, kRecvGpuWait, kernel_start);
      if (r.is_send && (c.kept & (1u << kSendWait))) s.done = c.step->end[kSendWait];
      op.steps.push_back(s);
    }
    std::sort(op.steps.begin(), op.steps.end(), [](const StepSpan& a, const StepSpan& b) { return a.step < b.step; });
    GatedHoldRecord whose;
    whose.comm_hash = r.comm_hash;
    whose.seq = r.seq;
    whose.process = r.process;
    whose.rank = r.rank;
    gate_records_.push_back(whose);
  }

  // The gated holds of the collective whose ops were kept, one record per receive op.
  void emit_gated_holds() {
    const std::vector<std::optional<GatedHold>> holds =
        gated_holds(std::span<const GateOp>(gate_ops_.data(), gate_used_));
    for (size_t i = 0; i < holds.size(); ++i) {
      if (!holds[i]) continue;
      GatedHoldRecord g = gate_records_[i];
      g.steps = holds[i]->steps;
      g.own_ns = holds[i]->own_ns;
      g.work_ns = holds[i]->work_ns;
      data_.gated_holds.push_back(g);
    }
    drop_gate_ops();
  }

  void drop_gate_ops() {
    gate_used_ = 0;
    gate_records_.clear();
    gate_context_ = kNoContext;
  }

  const std::string& host_;
  LocalData& data_;
  InputReport& report_;
  TraceLine ev_;
  std::string scratch_;
  std::vector<Frame> stack_;
  std::vector<Context> contexts_;
  std::vector<std::pair<int64_t, int64_t>> wire_;  // SendWait intervals of the op being closed
  std::vector<std::pair<int64_t, int64_t>> handoffs_;  // (step, handoff time) of the op being closed
  struct Chosen {
    const StepAcc* step;
    int64_t first_begin;
    uint8_t kept;
    bool missing_end;
  };
  std::vector<Chosen> chosen_;  // the steps of the op being closed that count
  // The ops of the collective being read, for its gated holds (keep_gate_op), and whose.
  std::vector<GateOp> gate_ops_;  // the first gate_used_ are the collective's
  size_t gate_used_ = 0;
  std::vector<GatedHoldRecord> gate_records_;  // whose each op is
  uint32_t gate_context_ = kNoContext;
  std::set<std::pair<uint64_t, int32_t>> file_ranks_;  // every (comm, rank) of the file
  std::map<std::tuple<uint64_t, int32_t, int64_t, bool>, uint64_t> p2p_ordinal_;
  OpState op_;
  LayoutSeen layout_;
  int64_t schedule_ts_ = 0;
  int64_t schedule_id_ = -1;
  int64_t process_pid_ = -1;
  uint32_t process_ = 0;
  bool process_known_ = false;
  uint64_t events_ = 0;
  bool saw_closing_line_ = false;
  uint64_t reasons_[kReasonCount] = {};
};

void finish_report(const LineReadResult& lines, InputReport& report) {
  if (lines.overlong_lines > 0) report.reject("line longer than 1 MiB", lines.overlong_lines);
  if (!lines.opened || !lines.error.empty())
    report.error = "cannot read: " + (lines.error.empty() ? std::string("unknown error") : lines.error);
}

}  // namespace

void read_nccl_trace_file(const std::string& path, const std::string& host, LocalData& data) {
  InputReport report;
  report.host = host;
  report.path = path;
  report.format = "nccl-json";
  TraceParser parser(host, data, report);
  LineReadResult lines = for_each_line(path, [&](std::string_view l) { parser.line(l); });
  finish_report(lines, report);
  if (report.error.empty()) parser.finish();
  else parser.flush_reasons();
  data.inputs.push_back(std::move(report));
}

void read_nccl_trace_buffer(std::string_view content, const std::string& name,
                            const std::string& host, LocalData& data) {
  InputReport report;
  report.host = host;
  report.path = name;
  report.format = "nccl-json";
  TraceParser parser(host, data, report);
  LineReadResult lines = for_each_line_in(content, [&](std::string_view l) { parser.line(l); });
  finish_report(lines, report);
  parser.finish();
  data.inputs.push_back(std::move(report));
}

}  // namespace culprit
