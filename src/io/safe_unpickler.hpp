// A pickle reader for plain data only (PyTorch Flight Recorder dumps), with no Python and no
// way for the input to name a class or run code.
//
// Accepted: protocols 0-5 framing (PROTO, FRAME) and the binary opcodes that build dicts,
// lists, tuples, str, int, float, bool and None, with the memo (PUT/GET/MEMOIZE). Refused with
// an UnpickleError: every opcode that names a class or builds an object (GLOBAL, STACK_GLOBAL,
// REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1/2/4, PERSID, BINPERSID), bytes, bytearray,
// sets and out-of-band buffers, and the text opcodes of protocol 0 (INT, LONG, STRING,
// UNICODE, FLOAT, PUT, GET, ...).
//
// Mapping to JSON: dict -> object, list and tuple -> array, str -> string, int -> integer
// (up to 64 bits; a wider int is an error), float -> number (NaN and infinities are kept as
// doubles; nlohmann writes them as null), True/False -> bool, None -> null. Dict keys
// become text the way Python's json.dumps writes them: str as is, int in decimal, True/False
// as "true"/"false", None as "null", float in its shortest round-trip form. A list or dict
// as a key is unhashable and refused; a tuple key has no JSON form and is refused too.
// Strings must be valid UTF-8 (strict: no overlong forms, no surrogates); invalid bytes are
// refused rather than replaced, so that a dump is either read exactly or reported.
//
// Bounds: every read is checked against the end of the input; see UnpickleLimits for the
// sizes. Nothing recurses on the input's depth; any failure, including running out of memory,
// comes out as UnpickleError.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

namespace culprit {

// A pickle was refused or is malformed; what() reads "offset N: what is wrong".
class UnpickleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct UnpickleLimits {
  size_t max_bytes = 64u << 20;  // size of the input
  // Nesting of containers in the result, and of open MARKs while parsing.
  size_t max_depth = 64;
  // Each of these stays at or below it: values created while parsing, slots filled in
  // containers, the stack's length, memo entries, and JSON nodes produced (counting every
  // copy a memo GET makes, so repetition through the memo cannot multiply memory).
  size_t max_items = 4u << 20;
  // Bytes of string text (values and keys) in the result, counting copies: a long string
  // fetched again and again from the memo costs its length each time.
  size_t max_text_bytes = 256u << 20;
};

// Parses a whole pickle (exactly one, ending in STOP with nothing after it) into JSON.
nlohmann::json unpickle_plain(std::string_view bytes, const UnpickleLimits& limits = {});

// The first bytes look like a binary pickle: PROTO (0x80) followed by version 2 to 5.
bool looks_like_pickle(std::string_view head);

}  // namespace culprit
