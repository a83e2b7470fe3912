#include "mock/node_store.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace culprit::mock {

namespace {

enum : char { kOperation = 'O', kProxyOp = 'P' };

// Records as bytes, in this process only (the file never outlives it): plain values copied as
// they are, strings and vectors with their length first.
class Encoder {
 public:
  explicit Encoder(std::string& out) : out_(out) {}
  template <typename T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put(const std::string& s) {
    put(uint32_t(s.size()));
    out_.append(s);
  }
  template <typename T>
  void put(const std::vector<T>& v) {
    put(uint32_t(v.size()));
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }

 private:
  std::string& out_;
};

class Decoder {
 public:
  Decoder(const char* p, const char* end) : p_(p), end_(end) {}
  bool done() const { return p_ >= end_; }
  template <typename T>
  void get(T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    take(&v, sizeof v);
  }
  void get(std::string& s) {
    uint32_t n = 0;
    get(n);
    s.resize(n);
    take(s.data(), n);
  }
  template <typename T>
  void get(std::vector<T>& v) {
    uint32_t n = 0;
    get(n);
    v.resize(n);
    take(v.data(), n * sizeof(T));
  }

 private:
  void take(void* dst, size_t n) {
    if (size_t(end_ - p_) < n) throw std::logic_error("mock: a kept record is cut short");
    if (n) std::memcpy(dst, p_, n);
    p_ += n;
  }
  const char* p_;
  const char* end_;
};

void encode(Encoder& e, const SimCollective& c) {
  e.put(c.seq), e.put(c.rank), e.put(c.enqueue_ns), e.put(c.kernel_start_ns), e.put(c.channel_end_ns);
  e.put(c.end_ns), e.put(c.comm_hash), e.put(c.comm_rank), e.put(c.name), e.put(c.algorithm);
  e.put(c.peer), e.put(c.iter), e.put(c.channels);
}

void decode(Decoder& d, SimCollective& c) {
  d.get(c.seq), d.get(c.rank), d.get(c.enqueue_ns), d.get(c.kernel_start_ns), d.get(c.channel_end_ns);
  d.get(c.end_ns), d.get(c.comm_hash), d.get(c.comm_rank), d.get(c.name), d.get(c.algorithm);
  d.get(c.peer), d.get(c.iter), d.get(c.channels);
}

void encode(Encoder& e, const OperationRecord& r) {
  encode(e, r.col);
  e.put(r.index), e.put(r.comm), e.put(r.started), e.put(r.channel_start_ns), e.put(r.ops);
}

void decode(Decoder& d, OperationRecord& r) {
  decode(d, r.col);
  d.get(r.index), d.get(r.comm), d.get(r.started), d.get(r.channel_start_ns), d.get(r.ops);
}

// A proxy op without its steps, of its step summary only the steps it kept, and every step
// where Retention::every_step asked for them.
void encode(Encoder& e, const ProxyOpRecord& r) {
  const SimProxyOp& o = r.op;
  e.put(o.seq), e.put(o.channel), e.put(o.rank), e.put(o.peer), e.put(o.is_send), e.put(o.n_steps);
  e.put(o.chunk_bytes), e.put(o.sched_ns), e.put(o.progress_ns), e.put(o.end_ns), e.put(o.comm_hash);
  e.put(o.comm_rank), e.put(o.comm_peer), e.put(o.is_p2p), e.put(o.task), e.put(r.index);
  const StepSummary& s = r.steps;
  e.put(s.n_steps), e.put(s.started), e.put(s.transferred), e.put(s.phase), e.put(s.last);
  for (int k = std::max(0, s.started - StepSummary::kKept); k < s.started; ++k) e.put(s.step(k));
  e.put(r.every_step);
}

void decode(Decoder& d, ProxyOpRecord& r) {
  SimProxyOp& o = r.op;
  d.get(o.seq), d.get(o.channel), d.get(o.rank), d.get(o.peer), d.get(o.is_send), d.get(o.n_steps);
  d.get(o.chunk_bytes), d.get(o.sched_ns), d.get(o.progress_ns), d.get(o.end_ns), d.get(o.comm_hash);
  d.get(o.comm_rank), d.get(o.comm_peer), d.get(o.is_p2p), d.get(o.task), d.get(r.index);
  StepSummary& s = r.steps;
  d.get(s.n_steps), d.get(s.started), d.get(s.transferred), d.get(s.phase), d.get(s.last);
  for (int k = std::max(0, s.started - StepSummary::kKept); k < s.started; ++k)
    d.get(s.recent[size_t(k % StepSummary::kKept)]);
  d.get(r.every_step);
}

}  // namespace

NodeStore::NodeStore(int nodes, size_t memory_budget)
    : pending_(size_t(nodes)), chunks_(size_t(nodes)), budget_(memory_budget) {}

NodeStore::~NodeStore() {
  if (file_) std::fclose(file_);
}

template <typename Record>
void NodeStore::append(int node, char tag, const Record& rec) {
  std::string& out = pending_[size_t(node)];
  const size_t before = out.capacity();
  Encoder e(out);
  e.put(tag);
  encode(e, rec);
  // What the strings hold, not what they use: a string grows by doubling, so its bytes could be
  // half its memory.
  pending_bytes_ += out.capacity() - before;
  if (pending_bytes_ > budget_) spill();
}

void NodeStore::add(int node, const OperationRecord& rec) { append(node, kOperation, rec); }
void NodeStore::add(int node, const ProxyOpRecord& rec) { append(node, kProxyOp, rec); }

// Every node's pending bytes go to the end of the file, one chunk per node.
void NodeStore::spill() {
  if (!file_) {
    file_ = std::tmpfile();
    if (!file_) throw std::runtime_error("cannot create a temporary file for the simulator's records");
  }
  for (size_t node = 0; node < pending_.size(); ++node) {
    std::string& bytes = pending_[node];
    if (bytes.empty()) continue;
    if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
      throw std::runtime_error("cannot write the simulator's records to a temporary file");
    chunks_[node].push_back(Chunk{file_size_, bytes.size()});
    file_size_ += bytes.size();
    std::string().swap(bytes);  // give the memory back
  }
  if (std::fflush(file_) != 0) throw std::runtime_error("cannot write the simulator's records to a temporary file");
  pending_bytes_ = 0;
}

NodeTimeline NodeStore::load(int node) const {
  std::string bytes;
  for (const Chunk& c : chunks_[size_t(node)]) {
    size_t at = bytes.size();
    bytes.resize(at + c.size);
    for (uint64_t done = 0; done < c.size;) {
      const ssize_t got = ::pread(fileno(file_), bytes.data() + at, c.size - done, off_t(c.offset + done));
      if (got <= 0) throw std::runtime_error("cannot read the simulator's records back from their temporary file");
      done += uint64_t(got);
      at += size_t(got);
    }
  }
  bytes += pending_[size_t(node)];
  NodeTimeline t;
  t.node = node;
  Decoder d(bytes.data(), bytes.data() + bytes.size());
  while (!d.done()) {
    char tag = 0;
    d.get(tag);
    if (tag == kOperation) {
      decode(d, t.operations.emplace_back());
    } else {
      decode(d, t.proxy_ops.emplace_back());
    }
  }
  // Records come in the order the engine finished them; the renderers read them in index
  // order (a pipeline's are finished iteration by iteration, not rank by rank).
  auto by_index = [](const auto& a, const auto& b) { return a.index < b.index; };
  if (!std::is_sorted(t.operations.begin(), t.operations.end(), by_index))
    std::stable_sort(t.operations.begin(), t.operations.end(), by_index);
  if (!std::is_sorted(t.proxy_ops.begin(), t.proxy_ops.end(), by_index))
    std::stable_sort(t.proxy_ops.begin(), t.proxy_ops.end(), by_index);
  return t;
}

}  // namespace culprit::mock
