// The only way analyzer processes talk to each other. Two implementations: MPI
// (comm_mpi.cpp, a duplicate of MPI_COMM_WORLD) and serial (comm_serial.cpp, a real
// one-process communicator used without a launcher and in unit tests). Every method is
// collective: all ranks call it in the same order.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace culprit {

// A rank waited past the deadline for rank 0.
class DeadlineError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string kind() const = 0;  // "mpi" or "serial"
  // What carries this communicator's traffic, in one line for the run info (MPI: the PML
  // and BTLs in force and any RDMA library loaded; mpi_transport.hpp).
  virtual std::string transport() const = 0;

  // Collective: true on every rank only when `ok` is true on every rank. Every phase of the
  // pipeline ends with one, so that a failure on one node becomes a clean error everywhere.
  virtual bool all_agree(bool ok) = 0;

  // Collective: element-wise max of equal-length vectors.
  virtual std::vector<uint64_t> all_max(const std::vector<uint64_t>& values) = 0;
  // Collective: element-wise sum of equal-length vectors.
  virtual std::vector<uint64_t> all_sum(const std::vector<uint64_t>& values) = 0;

  // Collective: every rank's bytes, concatenated in rank order, on every rank (sizes are
  // exchanged first, then the data).
  virtual std::vector<std::vector<char>> all_gather_bytes(const std::vector<char>& mine) = 0;

  // Collective: every rank's bytes in rank order on rank 0 (sizes first, then MPI_Gatherv),
  // nothing elsewhere. What only rank 0 uses travels only to it.
  virtual std::vector<std::vector<char>> gather_bytes(const std::vector<char>& mine) = 0;

  // Collective: rank 0's bytes on every rank.
  virtual std::vector<char> broadcast_bytes(const std::vector<char>& from_root) = 0;

  // Ends the whole job after a fatal error on this rank alone (no collective possible).
  [[noreturn]] virtual void abort(int exit_code) = 0;

  // A live rank of a job that rank 0 is about to end with abort() because some rank stayed
  // silent: waits, outside MPI, until that abort ends this process. It must not reach
  // MPI_Finalize, whose closing fence waits for the silent rank too and which Open MPI's
  // launcher can crash tearing down when the abort arrives mid-fence. Should rank 0's abort
  // never come, exits with `exit_code` after 3 x the deadline. Serial: exits at once.
  [[noreturn]] virtual void await_end_by_root(int exit_code) = 0;

  // How long any collective waits for a rank that does not answer (a node stuck in a hung
  // file system read). Past it, rank 0 goes on without that rank: it gets no bytes from it
  // and it is listed by silent_ranks(); the others go on as usual. A rank that waits that
  // long for rank 0 ends the job (DeadlineError). <= 0: wait forever. Serial: no effect.
  virtual void set_deadline(double /*seconds*/) {}
  // On rank 0: the ranks that stayed silent past the deadline, in the order found.
  virtual std::vector<int> silent_ranks() const { return {}; }
};

// Serial communicator: rank 0 of 1.
std::unique_ptr<Communicator> make_serial_communicator();

// Chooses MPI when the process was started by a launcher (mpirun, srun) and serial otherwise.
// Defined in comm_mpi.cpp (the executable and MPI tests link it).
std::unique_ptr<Communicator> make_world_communicator(int* argc, char*** argv);

// Sends a vector of trivially copyable values as bytes.
template <typename T>
std::vector<char> to_bytes(const std::vector<T>& v) {
  std::vector<char> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

template <typename T>
std::vector<T> from_bytes(const std::vector<char>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace culprit
