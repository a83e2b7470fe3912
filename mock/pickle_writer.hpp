// A protocol-2 pickle of plain data, shaped as PyTorch's C++ pickler writes Flight Recorder
// dumps: dicts and lists filled with SETITEMS/APPENDS, every string memoized on first use
// and fetched back with BINGET afterwards, small ints in their shortest opcode.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace culprit::mock {

// Objects become dicts, arrays lists, strings str, integers int, numbers float, booleans
// bool and null None.
std::string pickle_protocol2(const nlohmann::json& value);

}  // namespace culprit::mock
