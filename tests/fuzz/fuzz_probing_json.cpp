// libFuzzer target: probing's JSON export reader (nccl.proxy_ops, net_qp, inflight_ops,
// coll_perf rows through the shared row model).
#include <cstdint>
#include <string_view>

#include "io/probing_json_reader.hpp"
#include "tests/fuzz/probing_invariants.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  culprit::LocalData d;
  culprit::read_probing_json_buffer(text, "fuzz.json", "fuzzhost", d);
  culprit::fuzz::check_probing_export(d, "probing-json");
  return 0;
}
