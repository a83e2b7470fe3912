// libFuzzer target: probing's CSV reader (nccl.proxy_ops, net_qp, inflight_ops, coll_perf).
#include <cstdint>
#include <string_view>

#include "io/probing_csv_reader.hpp"
#include "tests/fuzz/probing_invariants.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  culprit::LocalData d;
  culprit::read_probing_csv_buffer(text, "fuzz.csv", "fuzzhost", d);
  culprit::fuzz::check_probing_export(d, "probing-csv");
  return 0;
}
