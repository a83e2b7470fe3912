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

// What this process has mapped, from /proc/self/maps (after MPI_Init: Open MPI keeps only
// the components it selected loaded). The check that the request is in force, cheaper than
// MPI_T (whose start-up registers every component: 0.2 s a call here).
struct LoadedTransport {
  std::vector<std::string> pml;   // Open MPI PML components (mca_pml_<name>.so): "ob1"
  std::vector<std::string> btl;   // BTL components: "self", "tcp", ...
  std::vector<std::string> rdma;  // RDMA stacks (libucp, libibverbs, ...): empty when none
};
LoadedTransport loaded_transport();

// One line for the results' run info: what was requested, what is loaded, RDMA seen.
std::string describe_transport(const TransportRequest& request);

}  // namespace culprit
