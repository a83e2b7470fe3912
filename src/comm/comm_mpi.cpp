// MPI implementation of the communicator. One of the few files that include <mpi.h>.
// Traffic goes over a duplicate of MPI_COMM_WORLD so that it never mixes with anyone else's.
#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <stdexcept>
#include <string>

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

  bool all_agree(bool ok) override {
    int mine = ok ? 1 : 0, all = 0;
    check(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, comm_), "MPI_Allreduce");
    return all != 0;
  }

  std::vector<uint64_t> all_max(const std::vector<uint64_t>& v) override {
    return reduce(v, MPI_MAX);
  }
  std::vector<uint64_t> all_sum(const std::vector<uint64_t>& v) override {
    return reduce(v, MPI_SUM);
  }

  std::vector<std::vector<char>> all_gather_bytes(const std::vector<char>& mine) override {
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
