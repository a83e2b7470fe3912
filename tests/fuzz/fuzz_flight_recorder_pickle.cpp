// libFuzzer target: the plain-data pickle reader behind the Flight Recorder dumps
// (io/safe_unpickler.hpp), and the dump reader (io/flight_recorder_reader.hpp) on whatever it
// decodes. Any input either parses or raises UnpickleError, and any decoded value is read as a
// dump or rejected in its report; anything else (a crash, a sanitizer report, another
// exception) is a finding. Small limits keep each run fast while still reaching every limit check.
#include <cstdint>
#include <string_view>

#include "io/flight_recorder_reader.hpp"
#include "io/safe_unpickler.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  culprit::UnpickleLimits limits;
  limits.max_bytes = 1u << 16;
  limits.max_depth = 32;
  limits.max_items = 1u << 14;
  limits.max_text_bytes = 1u << 20;
  (void)culprit::looks_like_pickle(bytes);
  try {
    // A result must always serialize: strings were checked to be valid UTF-8.
    const nlohmann::json value = culprit::unpickle_plain(bytes, limits);
    (void)value.dump();
    culprit::LocalData data;
    culprit::InputReport report;
    culprit::read_flight_recorder_value(value, 3, "fuzz", "", data, report);
  } catch (const culprit::UnpickleError&) {
  }
  return 0;
}
