// The tool's own MPI traffic stays off the training fabric (DESIGN.md, "Where it runs"):
// beside a job stuck on a possibly sick InfiniBand fabric, a few small messages must not
// open RDMA resources there, and Open MPI's UCX start-up is most of a small run's wall time.
// Unless NCCL_CULPRIT_MPI_TRANSPORT=site, the process asks Open MPI for the ob1 PML over
// shared memory and TCP before MPI_Init. Settings the user or launcher already made
// (OMPI_MCA_* in the environment, `mpirun --mca ...`) are left as they are.
#pragma once

#include <string>
#include <vector>

namespace culprit {

struct TransportRequest {
  bool site_default = false;         // NCCL_CULPRIT_MPI_TRANSPORT=site: nothing requested
  std::vector<std::string> applied;  // "pml=ob1", ...: what this process set itself
  std::vector<std::string> kept;     // "pml=ucx", ...: what was already set and left alone
};

// Before MPI_Init. The same environment gives every rank the same choice.
TransportRequest request_tool_transport();

// Shared objects of RDMA stacks mapped into this process (libucp, libibverbs, ...), from
// /proc/self/maps: empty when none was opened. The check that the request is in force.
std::vector<std::string> rdma_libraries_loaded();

// One line for the results' run info: the PML and BTLs in force and the RDMA libraries seen.
std::string describe_transport(const TransportRequest& request, const std::string& pml,
                               const std::string& btl);

}  // namespace culprit
