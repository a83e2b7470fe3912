// MPI implementation of the communicator. One of the few files that include <mpi.h>.
// Traffic goes over a duplicate of MPI_COMM_WORLD so that it never mixes with anyone else's.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "comm/communicator.hpp"
#include "comm/mpi_transport.hpp"

namespace culprit {
namespace {

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw std::runtime_error(std::string("MPI ") + what + " failed: " + std::string(text, len));
  }
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(int* argc, char*** argv) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      request_ = request_tool_transport();
      check(MPI_Init(argc, argv), "MPI_Init");
      owns_init_ = true;
    }
    transport_ = describe_transport(request_);
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    MPI_Comm_free(&comm_);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_init_ && !finalized) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string kind() const override { return "mpi"; }
  std::string transport() const override { return transport_; }

  void set_deadline(double seconds) override { deadline_s_ = seconds; }
  std::vector<int> silent_ranks() const override { return silent_; }

  bool all_agree(bool ok) override {
    if (deadline_s_ > 0) {
      std::vector<uint64_t> all = star_reduce({ok ? 1u : 0u}, [](uint64_t a, uint64_t b) { return std::min(a, b); });
      return all[0] != 0;
    }
    int mine = ok ? 1 : 0, all = 0;
    check(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, comm_), "MPI_Allreduce");
    return all != 0;
  }

  std::vector<uint64_t> all_max(const std::vector<uint64_t>& v) override {
    if (deadline_s_ > 0) return star_reduce(v, [](uint64_t a, uint64_t b) { return std::max(a, b); });
    return reduce(v, MPI_MAX);
  }
  std::vector<uint64_t> all_sum(const std::vector<uint64_t>& v) override {
    if (deadline_s_ > 0) return star_reduce(v, [](uint64_t a, uint64_t b) { return a + b; });
    return reduce(v, MPI_SUM);
  }

  std::vector<std::vector<char>> all_gather_bytes(const std::vector<char>& mine) override {
    if (deadline_s_ > 0) return star_all_gather(mine);
    // Sizes first, then the data.
    long long my_size = static_cast<long long>(mine.size());
    std::vector<long long> sizes(size_);
    check(MPI_Allgather(&my_size, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, comm_),
          "MPI_Allgather");
    const Layout layout = layout_of(sizes);
    std::vector<char> all(layout.total);
    check(MPI_Allgatherv(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(),
                         layout.counts.data(), layout.displs.data(), MPI_BYTE, comm_),
          "MPI_Allgatherv");
    return split(all, layout);
  }

  std::vector<std::vector<char>> gather_bytes(const std::vector<char>& mine) override {
    if (deadline_s_ > 0) return star_collect(mine);
    long long my_size = static_cast<long long>(mine.size());
    std::vector<long long> sizes(rank_ == 0 ? size_ : 0);
    check(MPI_Gather(&my_size, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, 0, comm_), "MPI_Gather");
    if (rank_ != 0) {
      check(MPI_Gatherv(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, nullptr, nullptr, nullptr, MPI_BYTE,
                        0, comm_),
            "MPI_Gatherv");
      return {};
    }
    const Layout layout = layout_of(sizes);
    std::vector<char> all(layout.total);
    check(MPI_Gatherv(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(), layout.counts.data(),
                      layout.displs.data(), MPI_BYTE, 0, comm_),
          "MPI_Gatherv");
    return split(all, layout);
  }

  std::vector<char> broadcast_bytes(const std::vector<char>& from_root) override {
    if (deadline_s_ > 0) return star_reply(from_root);
    long long n = rank_ == 0 ? static_cast<long long>(from_root.size()) : 0;
    check(MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, comm_), "MPI_Bcast");
    if (n > INT_MAX) throw std::runtime_error("broadcast larger than 2 GiB");
    std::vector<char> out = rank_ == 0 ? from_root : std::vector<char>(static_cast<size_t>(n));
    check(MPI_Bcast(out.data(), static_cast<int>(n), MPI_BYTE, 0, comm_), "MPI_Bcast");
    return out;
  }

  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::exit(exit_code);
  }

  [[noreturn]] void await_end_by_root(int exit_code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    const Clock::time_point end = until(3.0);
    while (Clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::_Exit(exit_code);  // no MPI_Finalize, no destructors that could reach MPI
  }

 private:
  // Where each rank's bytes lie in one buffer (MPI counts are ints: at most 2 GiB in all).
  struct Layout {
    std::vector<int> counts, displs;
    size_t total = 0;
  };

  static Layout layout_of(const std::vector<long long>& sizes) {
    Layout l;
    long long total = 0;
    for (long long n : sizes) {
      if (n > INT_MAX || total + n > INT_MAX) throw std::runtime_error("exchange larger than 2 GiB; narrow --seq-window");
      l.counts.push_back(static_cast<int>(n));
      l.displs.push_back(static_cast<int>(total));
      total += n;
    }
    l.total = static_cast<size_t>(total);
    return l;
  }

  static std::vector<std::vector<char>> split(const std::vector<char>& all, const Layout& l) {
    std::vector<std::vector<char>> out(l.counts.size());
    for (size_t r = 0; r < out.size(); ++r) out[r].assign(all.begin() + l.displs[r], all.begin() + l.displs[r] + l.counts[r]);
    return out;
  }

  // ---- The star: collectives with a deadline ---------------------------------------------
  // A blocked MPI collective cannot be abandoned, so with a deadline every collective is
  // point-to-point through rank 0: each live rank sends its part to rank 0 (collect), and
  // rank 0 answers each live rank (reply). Rank 0 polls for the parts until the deadline and
  // then goes on without the ranks that stayed silent, for the rest of the run. The others
  // wait for rank 0 three times as long (it also analyses and writes between phases), then
  // give up with a DeadlineError. Every operation has its own tag: all live ranks make the
  // same calls in the same order.
  using Clock = std::chrono::steady_clock;

  int next_tag() { return 1 + static_cast<int>(op_++ % 30000); }
  bool is_silent(int r) const { return std::find(silent_.begin(), silent_.end(), r) != silent_.end(); }
  Clock::time_point until(double factor) const {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(deadline_s_ * factor));
  }
  static void pause() { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }

  // Completes `request` or throws once rank 0 has been silent too long.
  void wait_for_root(MPI_Request& request, const char* what) {
    const Clock::time_point end = until(3.0);
    for (int done = 0;;) {
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
      if (done) return;
      if (Clock::now() > end)
        throw DeadlineError("analyzer rank 0 silent for " + std::to_string(static_cast<int>(3 * deadline_s_)) +
                            " s (3 x --deadline): giving up");
      pause();
    }
  }

  // Rank 0: every live rank's bytes (a silent one's empty). Others: nothing.
  std::vector<std::vector<char>> star_collect(const std::vector<char>& mine) {
    const int tag = next_tag();
    if (rank_ != 0) {
      MPI_Request request;
      check(MPI_Isend(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, 0, tag, comm_, &request), "MPI_Isend");
      wait_for_root(request, "MPI_Test");
      return {};
    }
    std::vector<std::vector<char>> out(static_cast<size_t>(size_));
    out[0] = mine;
    std::vector<int> waiting;
    for (int r = 1; r < size_; ++r)
      if (!is_silent(r)) waiting.push_back(r);
    const Clock::time_point end = until(1.0);
    while (!waiting.empty()) {
      std::erase_if(waiting, [&](int r) { return receive_if_there(r, tag, out[static_cast<size_t>(r)]); });
      if (waiting.empty()) break;
      if (Clock::now() > end) {
        silent_.insert(silent_.end(), waiting.begin(), waiting.end());
        break;
      }
      pause();
    }
    return out;
  }

  bool receive_if_there(int from, int tag, std::vector<char>& into) {
    int there = 0;
    MPI_Status status;
    check(MPI_Iprobe(from, tag, comm_, &there, &status), "MPI_Iprobe");
    if (!there) return false;
    int n = 0;
    MPI_Get_count(&status, MPI_BYTE, &n);
    into.resize(static_cast<size_t>(n));
    check(MPI_Recv(into.data(), n, MPI_BYTE, from, tag, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
    return true;
  }

  // Rank 0 sends `bytes` to every live rank. A rank that stops taking them (stopped since
  // it last sent) is silent from then on: its send is left behind, as the job ends anyway.
  void send_to_live_ranks(const std::vector<char>& bytes, int tag) {
    std::vector<std::pair<int, MPI_Request>> sends;
    for (int r = 1; r < size_; ++r) {
      if (is_silent(r)) continue;
      sends.emplace_back(r, MPI_REQUEST_NULL);
      check(MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, r, tag, comm_, &sends.back().second),
            "MPI_Isend");
    }
    const Clock::time_point end = until(1.0);
    while (!sends.empty()) {
      std::erase_if(sends, [](std::pair<int, MPI_Request>& s) {
        int done = 0;
        check(MPI_Test(&s.second, &done, MPI_STATUS_IGNORE), "MPI_Test");
        return done != 0;
      });
      if (sends.empty()) break;
      if (Clock::now() > end) {
        for (const auto& [r, request] : sends) silent_.push_back(r);
        break;
      }
      pause();
    }
  }

  // Rank 0's bytes on every live rank.
  std::vector<char> star_reply(const std::vector<char>& from_root) {
    const int tag = next_tag();
    if (rank_ == 0) {
      send_to_live_ranks(from_root, tag);
      return from_root;
    }
    const Clock::time_point end = until(3.0);
    std::vector<char> out;
    while (!receive_if_there(0, tag, out)) {
      if (Clock::now() > end)
        throw DeadlineError("analyzer rank 0 silent for " + std::to_string(static_cast<int>(3 * deadline_s_)) +
                            " s (3 x --deadline): giving up");
      pause();
    }
    return out;
  }

  template <typename Combine>
  std::vector<uint64_t> star_reduce(const std::vector<uint64_t>& v, Combine combine) {
    std::vector<std::vector<char>> parts = star_collect(to_bytes(v));
    std::vector<uint64_t> result = v;
    for (size_t r = 1; r < parts.size(); ++r)
      if (!is_silent(static_cast<int>(r)))
        for (size_t i = 0; i < result.size() && i < parts[r].size() / sizeof(uint64_t); ++i)
          result[i] = combine(result[i], from_bytes<uint64_t>(parts[r])[i]);
    return from_bytes<uint64_t>(star_reply(to_bytes(result)));
  }

  // Every live rank's bytes on every live rank: collected, then sent back as sizes + data.
  std::vector<std::vector<char>> star_all_gather(const std::vector<char>& mine) {
    std::vector<std::vector<char>> parts = star_collect(mine);
    std::vector<char> packed;
    if (rank_ == 0) {
      std::vector<uint64_t> sizes;
      for (const std::vector<char>& p : parts) sizes.push_back(p.size());
      packed = to_bytes(sizes);
      for (const std::vector<char>& p : parts) packed.insert(packed.end(), p.begin(), p.end());
    }
    packed = star_reply(packed);
    std::vector<std::vector<char>> out(static_cast<size_t>(size_));
    size_t at = static_cast<size_t>(size_) * sizeof(uint64_t);
    if (packed.size() < at) throw std::runtime_error("all-gather reply is shorter than its sizes");
    const std::vector<uint64_t> sizes = from_bytes<uint64_t>(std::vector<char>(packed.begin(), packed.begin() + static_cast<std::ptrdiff_t>(at)));
    for (size_t r = 0; r < out.size(); ++r) {
      if (sizes[r] > packed.size() - at) throw std::runtime_error("all-gather reply is shorter than its parts");
      out[r].assign(packed.begin() + static_cast<std::ptrdiff_t>(at), packed.begin() + static_cast<std::ptrdiff_t>(at + sizes[r]));
      at += sizes[r];
    }
    return out;
  }

  std::vector<uint64_t> reduce(const std::vector<uint64_t>& v, MPI_Op op) {
    std::vector<uint64_t> out(v.size());
    check(MPI_Allreduce(v.data(), out.data(), static_cast<int>(v.size()), MPI_UINT64_T, op, comm_),
          "MPI_Allreduce");
    return out;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  bool owns_init_ = false;
  TransportRequest request_;  // empty when MPI was initialised by someone else (tests)
  std::string transport_;
  double deadline_s_ = 0;     // <= 0: plain MPI collectives, no deadline
  uint64_t op_ = 0;           // star operations so far: each has its own tag
  std::vector<int> silent_;   // rank 0: ranks that stayed silent past the deadline
};

// A launcher leaves its mark in the environment; without one we run serially and never
// touch MPI (no singleton init, no orted spawned for a one-process run).
bool started_by_launcher() {
  if (const char* force = std::getenv("NCCL_CULPRIT_MPI")) return std::string(force) != "0";
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
                          "MPI_LOCALNRANKS", "HYDRA_CONTROL_FD"}) {
    if (std::getenv(var)) return true;
  }
  // srun without an MPI plugin: several tasks of one step still need to cooperate.
  if (const char* n = std::getenv("SLURM_STEP_NUM_TASKS")) return std::atoi(n) > 1;
  return false;
}

}  // namespace

std::unique_ptr<Communicator> make_world_communicator(int* argc, char*** argv) {
  if (!started_by_launcher()) return make_serial_communicator();
  return std::make_unique<MpiCommunicator>(argc, argv);
}

}  // namespace culprit
