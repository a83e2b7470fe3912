#include "comm/mpi_transport.hpp"

#include <cstdlib>
#include <fstream>
#include <set>

namespace culprit {
namespace {

// Open MPI's MCA parameters for the tool's traffic: the ob1 PML (no UCX) with the self,
// shared-memory and TCP BTLs; no UCX one-sided component and no HCOLL (both open the fabric).
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

std::vector<std::string> rdma_libraries_loaded() {
  static const char* const kRdma[] = {"libucp", "libuct", "libucs", "libibverbs", "librdmacm",
                                      "libmlx5", "libhcoll", "mca_pml_ucx", "mca_osc_ucx", "mca_btl_openib"};
  std::set<std::string> seen;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    size_t slash = line.rfind('/');
    if (slash == std::string::npos) continue;
    std::string file = line.substr(slash + 1);
    for (const char* lib : kRdma)
      if (file.rfind(lib, 0) == 0) seen.insert(file.substr(0, file.find(".so")));
  }
  return {seen.begin(), seen.end()};
}

std::string describe_transport(const TransportRequest& request, const std::string& pml,
                               const std::string& btl) {
  std::string out = "pml=" + (pml.empty() ? std::string("(Open MPI's choice)") : pml) +
                    " btl=" + (btl.empty() ? std::string("(Open MPI's choice)") : btl);
  if (request.site_default) out += " (site default: NCCL_CULPRIT_MPI_TRANSPORT=site)";
  else if (!request.kept.empty()) out += " (tool default where unset; set by the user or launcher: " + request.kept.front() +
                                        (request.kept.size() > 1 ? ", ..." : "") + ")";
  else out += " (tool default)";
  std::vector<std::string> rdma = rdma_libraries_loaded();
  out += "; RDMA libraries loaded: ";
  if (rdma.empty()) out += "none";
  for (size_t i = 0; i < rdma.size(); ++i) out += (i ? "," : "") + rdma[i];
  return out;
}

}  // namespace culprit
