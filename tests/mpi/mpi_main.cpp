// Main of the MPI tests: every rank runs every test, then an all-reduce of the verdict
// decides the exit code, so a failure on any rank fails the CTest entry.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "mpi_world.hpp"

namespace {
culprit::Communicator* g_world = nullptr;
}

culprit::Communicator& test_world() { return *g_world; }

int main(int argc, char** argv) {
  // Always go through MPI here, even for -np 1 launched by hand.
  setenv("NCCL_CULPRIT_MPI", "1", 0);
  std::unique_ptr<culprit::Communicator> world = culprit::make_world_communicator(&argc, &argv);
  g_world = world.get();
  ::testing::InitGoogleTest(&argc, argv);
  if (world->rank() != 0) {
    // Non-root ranks stay quiet unless something fails.
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int local_failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  bool all_passed = world->all_agree(local_failed == 0);
  if (!all_passed && world->rank() == 0) fprintf(stderr, "MPI tests failed on at least one rank\n");
  world.reset();
  return all_passed ? 0 : 1;
}
