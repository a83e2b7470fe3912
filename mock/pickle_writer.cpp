#include "mock/pickle_writer.hpp"

#include <bit>
#include <cstdint>
#include <cstring>
#include <map>

namespace culprit::mock {
namespace {

class Pickler {
 public:
  std::string run(const nlohmann::json& value) {
    out_ += "\x80\x02";  // PROTO 2
    put(value);
    out_ += '.';  // STOP
    return std::move(out_);
  }

 private:
  void little_endian(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }

  void memoize() {
    const uint32_t slot = next_slot_++;
    if (slot < 256) {
      out_ += 'q';  // BINPUT
      little_endian(slot, 1);
    } else {
      out_ += 'r';  // LONG_BINPUT
      little_endian(slot, 4);
    }
  }

  void put_string(const std::string& s) {
    auto it = strings_.find(s);
    if (it != strings_.end()) {
      if (it->second < 256) {
        out_ += 'h';  // BINGET
        little_endian(it->second, 1);
      } else {
        out_ += 'j';  // LONG_BINGET
        little_endian(it->second, 4);
      }
      return;
    }
    out_ += 'X';  // BINUNICODE
    little_endian(s.size(), 4);
    out_ += s;
    strings_.emplace(s, next_slot_);
    memoize();
  }

  void put_integer(int64_t v) {
    if (v >= 0 && v < 256) {
      out_ += 'K';  // BININT1
      little_endian(static_cast<uint64_t>(v), 1);
    } else if (v >= 0 && v < 65536) {
      out_ += 'M';  // BININT2
      little_endian(static_cast<uint64_t>(v), 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      out_ += 'J';  // BININT
      little_endian(static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(v))), 4);
    } else {
      out_ += "\x8a\x08";  // LONG1, 8 bytes two's complement
      little_endian(static_cast<uint64_t>(v), 8);
    }
  }

  void put_float(double d) {
    out_ += 'G';  // BINFLOAT, big-endian
    uint64_t bits = std::bit_cast<uint64_t>(d);
    for (int i = 7; i >= 0; --i) out_ += static_cast<char>((bits >> (8 * i)) & 0xff);
  }

  void put(const nlohmann::json& v) {
    switch (v.type()) {
      case nlohmann::json::value_t::object:
        out_ += '}';  // EMPTY_DICT
        memoize();
        if (v.empty()) return;
        out_ += '(';  // MARK
        for (const auto& [key, item] : v.items()) {
          put_string(key);
          put(item);
        }
        out_ += 'u';  // SETITEMS
        return;
      case nlohmann::json::value_t::array:
        out_ += ']';  // EMPTY_LIST
        memoize();
        if (v.empty()) return;
        out_ += '(';
        for (const auto& item : v) put(item);
        out_ += 'e';  // APPENDS
        return;
      case nlohmann::json::value_t::string: return put_string(v.get<std::string>());
      case nlohmann::json::value_t::boolean: out_ += v.get<bool>() ? '\x88' : '\x89'; return;
      case nlohmann::json::value_t::number_integer: return put_integer(v.get<int64_t>());
      case nlohmann::json::value_t::number_unsigned: return put_integer(static_cast<int64_t>(v.get<uint64_t>()));
      case nlohmann::json::value_t::number_float: return put_float(v.get<double>());
      default: out_ += 'N'; return;  // None
    }
  }

  std::string out_;
  std::map<std::string, uint32_t> strings_;
  uint32_t next_slot_ = 0;
};

}  // namespace

std::string pickle_protocol2(const nlohmann::json& value) { return Pickler().run(value); }

}  // namespace culprit::mock
