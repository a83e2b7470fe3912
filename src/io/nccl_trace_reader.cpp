#include "io/nccl_trace_reader.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include "io/line_reader.hpp"
#include "io/trace_line.hpp"

namespace culprit {
namespace {

// Timestamps within this tolerance of their op's bounds still count as inside it: the
// plugin's clocks are read at slightly different moments.
constexpr int64_t kBoundsToleranceNs = 1000;

int phase_of(std::string_view name) {
  if (name == "SendGpuWait") return kSendGpuWait;
  if (name == "SendPeerWait") return kSendPeerWait;
  if (name == "SendWait") return kSendWait;
  if (name == "RecvWait") return kRecvWait;
  if (name == "RecvFlushWait") return kRecvFlushWait;
  if (name == "RecvGpuWait") return kRecvGpuWait;
  return -1;
}

enum class FrameKind { kColl, kP2p, kKernelCh, kSchedule, kProgress, kNet, kOther };

struct Frame {
  FrameKind kind = FrameKind::kOther;
  std::string name;
  int64_t id = -1;
  int64_t ts = 0;
  int phase = -1;           // kNet
  size_t context = 0;       // kColl / kP2p: index into contexts
};

// The COLL or P2P that encloses proxy ops.
struct Context {
  uint64_t comm_hash = 0;
  int32_t rank = -1;
  uint64_t seq = 0;
  bool is_p2p = false;
  uint64_t min_start_clk = 0;
  bool valid = false;
};

struct StepAcc {
  int64_t net_id = -1;
  int64_t step = -1;
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
  size_t context = SIZE_MAX;
  std::vector<StepAcc> steps;
};

class TraceParser {
 public:
  TraceParser(const std::string& host, LocalData& data, InputReport& report)
      : host_(host), data_(data), report_(report) {}

  void line(std::string_view text) {
    size_t a = 0, b = text.size();
    while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r')) ++a;
    while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\r')) --b;
    text = text.substr(a, b - a);
    if (text.empty() || text == "[" || text == "]" || text == "{}]" || text == "{}" ||
        text == "{}],")
      return;
    TraceLine ev;
    if (!parse_trace_line(text, ev, scratch_)) {
      report_.reject("malformed line");
      return;
    }
    ++events_;
    if (ev.pid >= 0 && !process_known_) {
      process_ = data_.process_index(host_, ev.pid);
      process_known_ = true;
    }
    if (ev.ph == 'b') begin(ev);
    else if (ev.ph == 'e') end(ev);
    else report_.reject("unknown event phase");
  }

  void finish() {
    // Frames still open at the end of the file: the file was cut short (or the job died).
    for (const Frame& f : stack_) {
      if (f.kind == FrameKind::kProgress || f.kind == FrameKind::kColl || f.kind == FrameKind::kP2p)
        report_.reject("unterminated event at end of file (truncated?)");
      // A trace cut inside a collective says nothing about how far that process got.
      if (f.kind == FrameKind::kColl && contexts_[f.context].valid)
        data_.mark_cut_short(contexts_[f.context].comm_hash, contexts_[f.context].rank);
    }
    stack_.clear();
    if (events_ == 0 && report_.error.empty()) {
      report_.error = report_.rejected > 0 ? "not an NCCL profiler trace (no readable event line)"
                                           : "empty trace (no event line)";
    }
  }

 private:
  void begin(const TraceLine& ev) {
    Frame f;
    f.name.assign(ev.name.data(), ev.name.size());
    f.id = ev.id;
    f.ts = ev.ts_ns;
    if (ev.cat == "COLL" || ev.cat == "P2P") {
      f.kind = ev.cat == "COLL" ? FrameKind::kColl : FrameKind::kP2p;
      f.context = contexts_.size();
      contexts_.push_back(context_of(ev, f.kind == FrameKind::kP2p));
    } else if (ev.cat == "GPU" && ev.name == "KernelCh") {
      f.kind = FrameKind::kKernelCh;
      uint64_t clk = 0;
      size_t ctx = innermost_context();
      if (ctx != SIZE_MAX && parse_u64(ev.arg("StartGpuClk"), &clk) && clk > 0) {
        Context& c = contexts_[ctx];
        c.min_start_clk = c.min_start_clk == 0 ? clk : std::min(c.min_start_clk, clk);
      }
    } else if (ev.cat == "PROXY" && (ev.name == "ScheduleSend" || ev.name == "ScheduleRecv")) {
      f.kind = FrameKind::kSchedule;
      schedule_ts_ = ev.ts_ns;
    } else if (ev.cat == "PROXY" && (ev.name == "ProgressSend" || ev.name == "ProgressRecv")) {
      f.kind = FrameKind::kProgress;
      open_op(ev);
    } else if (ev.cat == "NET" && phase_of(ev.name) >= 0) {
      f.kind = FrameKind::kNet;
      f.phase = phase_of(ev.name);
      step_begin(ev, f.phase);
    }
    stack_.push_back(std::move(f));
  }

  void end(const TraceLine& ev) {
    // Lines nest strictly; find the matching begin from the top.
    size_t match = stack_.size();
    for (size_t k = stack_.size(); k-- > 0;) {
      if (stack_[k].id == ev.id && stack_[k].name == ev.name) {
        match = k;
        break;
      }
    }
    if (match == stack_.size()) {
      report_.reject("end without matching begin");
      return;
    }
    while (stack_.size() > match + 1) {
      if (stack_.back().kind == FrameKind::kProgress) report_.reject("unterminated proxy op");
      if (stack_.back().kind == FrameKind::kProgress) op_.open = false;
      stack_.pop_back();
    }
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    switch (f.kind) {
      case FrameKind::kNet:
        step_end(ev, f.phase);
        break;
      case FrameKind::kProgress:
        close_op(ev.ts_ns);
        break;
      case FrameKind::kColl:
        close_context(f.context);
        break;
      default:
        break;
    }
  }

  Context context_of(const TraceLine& ev, bool is_p2p) {
    Context c;
    c.is_p2p = is_p2p;
    int64_t rank = -1;
    c.valid = parse_u64(ev.arg("CommHash"), &c.comm_hash) && parse_i64(ev.arg("Rank"), &rank) &&
              rank >= 0;
    c.rank = static_cast<int32_t>(rank);
    if (!is_p2p) {
      c.valid = c.valid && parse_u64(ev.arg("SeqNum"), &c.seq);
    } else {
      int64_t peer = -1;
      parse_i64(ev.arg("Peer"), &peer);
      c.seq = p2p_ordinal_[{c.comm_hash, peer}]++;
    }
    if (!c.valid) {
      report_.reject(is_p2p ? "P2P event without CommHash/Rank" : "COLL event without CommHash/Rank/SeqNum");
    } else if (process_known_) {
      data_.note_comm_rank(c.comm_hash, c.rank, process_, !is_p2p, c.seq);
    }
    return c;
  }

  size_t innermost_context() const {
    for (size_t k = stack_.size(); k-- > 0;)
      if (stack_[k].kind == FrameKind::kColl || stack_[k].kind == FrameKind::kP2p)
        return stack_[k].context;
    return SIZE_MAX;
  }

  void close_context(size_t index) {
    const Context& c = contexts_[index];
    if (c.valid && !c.is_p2p && c.min_start_clk > 0 && process_known_) {
      KernelStartRecord k;
      k.comm_hash = c.comm_hash;
      k.seq = c.seq;
      k.start_gpu_clk_ns = c.min_start_clk;
      k.process = process_;
      k.rank = c.rank;
      data_.kernel_starts.push_back(k);
    }
  }

  void open_op(const TraceLine& ev) {
    op_ = OpState();
    op_.open = true;
    op_.is_send = ev.name == "ProgressSend";
    int64_t v = 0;
    if (parse_i64(ev.arg("Channel"), &v)) op_.channel = static_cast<int32_t>(v);
    if (parse_i64(ev.arg("Peer"), &v)) op_.peer = static_cast<int32_t>(v);
    if (parse_i64(ev.arg("Steps"), &v)) op_.n_steps = static_cast<int32_t>(v);
    parse_u64(ev.arg("ChunkSize"), &op_.chunk);
    parse_u64(ev.arg("transSize"), &op_.trans);
    op_.start_ts = schedule_ts_ > 0 && schedule_ts_ <= ev.ts_ns ? schedule_ts_ : ev.ts_ns;
    schedule_ts_ = 0;
    op_.context = innermost_context();
  }

  void step_begin(const TraceLine& ev, int phase) {
    if (!op_.open) return;
    if (op_.steps.empty() || op_.steps.back().net_id != ev.id) {
      StepAcc acc;
      acc.net_id = ev.id;
      parse_i64(ev.arg("Step"), &acc.step);
      op_.steps.push_back(acc);
    }
    StepAcc& acc = op_.steps.back();
    // When a state is recorded again (retries), the first entry is the one that counts.
    if (!(acc.has_begin & (1u << phase))) {
      acc.begin[phase] = ev.ts_ns;
      acc.has_begin |= static_cast<uint8_t>(1u << phase);
    }
  }

  void step_end(const TraceLine& ev, int phase) {
    if (!op_.open || op_.steps.empty()) return;
    StepAcc& acc = op_.steps.back();
    if ((acc.has_begin & (1u << phase)) && !(acc.has_end & (1u << phase))) {
      acc.end[phase] = ev.ts_ns;
      acc.has_end |= static_cast<uint8_t>(1u << phase);
    }
  }

  // A step counts only when its phases have increasing times inside its op: step slots are
  // reused without clearing, so stale and zero timestamps are common (FORMATS.md §2, 4).
  bool step_valid(const StepAcc& s, int64_t op_begin, int64_t op_end) const {
    uint8_t complete = s.has_begin & s.has_end;
    if (complete == 0) return false;
    int64_t previous_end = 0;
    for (int p = 0; p < kPhaseCount; ++p) {
      if (!(complete & (1u << p))) continue;
      if (s.begin[p] <= 0 || s.end[p] < s.begin[p]) return false;
      if (s.begin[p] < op_begin - kBoundsToleranceNs || s.end[p] > op_end + kBoundsToleranceNs)
        return false;
      if (s.begin[p] + kBoundsToleranceNs < previous_end) return false;
      previous_end = s.end[p];
    }
    return true;
  }

  void close_op(int64_t end_ts) {
    if (!op_.open) return;
    op_.open = false;
    if (op_.context == SIZE_MAX) {
      report_.reject("proxy op outside any collective (PXN op of another process)");
      return;
    }
    const Context& ctx = contexts_[op_.context];
    if (!ctx.valid) {
      report_.reject("proxy op of an unidentified collective");
      return;
    }
    if (op_.channel < 0 || op_.peer < 0) {
      report_.reject("proxy op without Channel/Peer");
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
    r.process = process_;
    r.start_ns = static_cast<uint64_t>(std::max<int64_t>(op_.start_ts, 0));
    r.end_ns = static_cast<uint64_t>(std::max<int64_t>(end_ts, op_.start_ts));
    // transSize can be inflated by slot reuse; Steps x ChunkSize bounds it.
    r.bytes = op_.trans;
    if (op_.n_steps > 0 && op_.chunk > 0)
      r.bytes = std::min<uint64_t>(r.bytes, static_cast<uint64_t>(op_.n_steps) * op_.chunk);
    std::vector<int64_t> seen_steps;
    for (const StepAcc& s : op_.steps) {
      if (!step_valid(s, op_.start_ts, end_ts)) {
        report_.reject("step with stale or non-increasing timestamps");
        continue;
      }
      if (std::find(seen_steps.begin(), seen_steps.end(), s.step) != seen_steps.end()) {
        report_.reject("duplicate step (retried receive)");
        continue;
      }
      seen_steps.push_back(s.step);
      uint8_t complete = s.has_begin & s.has_end;
      for (int p = 0; p < kPhaseCount; ++p)
        if (complete & (1u << p)) r.phase_ns[p] += static_cast<uint64_t>(s.end[p] - s.begin[p]);
      ++r.steps;
    }
    if (r.steps == 0) {
      report_.reject("proxy op without a valid step");
      return;
    }
    data_.ops.push_back(r);
    ++report_.records;
  }

  const std::string& host_;
  LocalData& data_;
  InputReport& report_;
  std::string scratch_;
  std::vector<Frame> stack_;
  std::vector<Context> contexts_;
  std::map<std::pair<uint64_t, int64_t>, uint64_t> p2p_ordinal_;
  OpState op_;
  int64_t schedule_ts_ = 0;
  uint32_t process_ = 0;
  bool process_known_ = false;
  uint64_t events_ = 0;
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
