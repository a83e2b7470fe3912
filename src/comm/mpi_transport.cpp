#include "comm/mpi_transport.hpp"

#include <cstdlib>
#include <fstream>
#include <set>

namespace culprit {
namespace {

// Open MPI's MCA parameters for the tool's traffic: the ob1 PML (no UCX) with the self,
// shared-memory and TCP BTLs; no UCX one-sided component and no HCOLL (both open the fabric);
// and an idle rank yields its core while it waits (the analyzer shares the node's cores with
// the training job, and rank 0 works while the others wait for its verdict).
struct Setting {
  const char* variable;
  const char* value;
  const char* shown;
};
constexpr Setting kToolTransport[] = {
    {"OMPI_MCA_pml", "ob1", "pml"},
    {"OMPI_MCA_btl", "self,vader,tcp", "btl"},
    {"OMPI_MCA_osc", "^ucx", "osc"},
    {"OMPI_MCA_coll_hcoll_enable", "0", "coll_hcoll_enable"},
    {"OMPI_MCA_mpi_yield_when_idle", "1", "mpi_yield_when_idle"},
};

}  // namespace

TransportRequest request_tool_transport() {
  TransportRequest r;
  const char* choice = std::getenv("NCCL_CULPRIT_MPI_TRANSPORT");
  if (choice && std::string(choice) == "site") {
    r.site_default = true;
    return r;
  }
  for (const Setting& s : kToolTransport) {
    if (const char* already = std::getenv(s.variable); already && *already) {
      r.kept.push_back(std::string(s.shown) + "=" + already);
    } else {
      setenv(s.variable, s.value, 0);
      r.applied.push_back(std::string(s.shown) + "=" + s.value);
    }
  }
  return r;
}

LoadedTransport loaded_transport() {
  static const char* const kRdma[] = {"libucp", "libuct", "libucs", "libibverbs", "librdmacm",
                                      "libmlx5", "libhcoll", "mca_pml_ucx", "mca_osc_ucx", "mca_btl_openib"};
  std::set<std::string> pml, btl, rdma;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    size_t slash = line.rfind('/');
    if (slash == std::string::npos) continue;
    std::string file = line.substr(slash + 1);
    std::string stem = file.substr(0, file.find(".so"));
    for (const char* lib : kRdma)
      if (file.rfind(lib, 0) == 0) rdma.insert(stem);
    if (stem.rfind("mca_pml_", 0) == 0) pml.insert(stem.substr(8));
    if (stem.rfind("mca_btl_", 0) == 0) btl.insert(stem.substr(8));
  }
  return {{pml.begin(), pml.end()}, {btl.begin(), btl.end()}, {rdma.begin(), rdma.end()}};
}

namespace {

std::string joined(const std::vector<std::string>& items, const char* none) {
  if (items.empty()) return none;
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out;
}

}  // namespace

std::string describe_transport(const TransportRequest& request) {
  std::string out;
  if (request.site_default) {
    out = "site default (NCCL_CULPRIT_MPI_TRANSPORT=site)";
  } else {
    std::vector<std::string> asked = request.applied;
    asked.insert(asked.end(), request.kept.begin(), request.kept.end());
    out = "requested " + joined(asked, "nothing") +
          (request.kept.empty() ? " (tool default)" : " (partly set by the user or launcher)");
  }
  const LoadedTransport loaded = loaded_transport();
  out += "; loaded pml " + joined(loaded.pml, "(none seen)") + ", btl " + joined(loaded.btl, "(none seen)");
  out += "; RDMA libraries loaded: " + joined(loaded.rdma, "none");
  return out;
}

}  // namespace culprit
