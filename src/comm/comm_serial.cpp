// One-process communicator: every collective is the identity. A real implementation, so
// that rank-0 logic runs (and is unit-tested) without MPI.
#include <cstdlib>

#include "comm/communicator.hpp"

namespace culprit {
namespace {

class SerialCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string kind() const override { return "serial"; }
  std::string transport() const override { return "none (one process, no MPI)"; }
  bool all_agree(bool ok) override { return ok; }
  std::vector<uint64_t> all_max(const std::vector<uint64_t>& v) override { return v; }
  std::vector<uint64_t> all_sum(const std::vector<uint64_t>& v) override { return v; }
  std::vector<std::vector<char>> all_gather_bytes(const std::vector<char>& mine) override {
    return {mine};
  }
  std::vector<std::vector<char>> gather_bytes(const std::vector<char>& mine) override { return {mine}; }
  std::vector<char> broadcast_bytes(const std::vector<char>& from_root) override {
    return from_root;
  }
  [[noreturn]] void abort(int exit_code) override { std::exit(exit_code); }
  [[noreturn]] void await_end_by_root(int exit_code) override { std::exit(exit_code); }
};

}  // namespace

std::unique_ptr<Communicator> make_serial_communicator() {
  return std::make_unique<SerialCommunicator>();
}

}  // namespace culprit
