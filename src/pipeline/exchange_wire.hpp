// The exchange's wire format: one generic packer that turns records into the flat byte blob an
// analyzer process sends to rank 0 (pipeline/exchange.hpp), and back.
//
// Every analyzer process of a job runs the same build on the same architecture, so records
// travel in their memory layout. What a value becomes on the wire:
//
//   trivially copyable record  its sizeof(T) bytes, as in memory. Nothing is written per
//                              record type: a member added to the struct travels with it.
//   std::string                u64 length, then its bytes
//   std::vector<T>             u64 count, then the elements (one block when T is trivially
//                              copyable)
//   std::map<K, V>             u64 count, then key, value, key, value, ...
//   any other record           its members in the order WireMembers<T>::visit names them:
//                              the one description of such a record, used both ways. Keep
//                              these few: give a record that grows a trivially copyable part
//                              (a base) and list that part as one member.
//
// Reading checks every count against the bytes left before it allocates, and throws
// std::runtime_error on a blob that is truncated or corrupt.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace culprit {

// Specialised (struct WireMembers<R> { template <class Rec, class F> static void visit(Rec&,
// F&&); }) for each record that is not trivially copyable; `visit` calls F on each member, on
// a const record when packing and on a mutable one when unpacking.
template <class T>
struct WireMembers {
  static_assert(std::is_trivially_copyable_v<T>,
                "a record that is not trivially copyable needs a WireMembers<T> specialisation");
};

// The trivially copyable part `Base` of a record, as const as the record.
template <class Base, class Record>
auto& base_part(Record& record) {
  if constexpr (std::is_const_v<Record>) return static_cast<const Base&>(record);
  else return static_cast<Base&>(record);
}

namespace wire_detail {
template <class T>
inline constexpr bool kIsVector = false;
template <class T, class A>
inline constexpr bool kIsVector<std::vector<T, A>> = true;
template <class T>
inline constexpr bool kIsMap = false;
template <class K, class V, class C, class A>
inline constexpr bool kIsMap<std::map<K, V, C, A>> = true;
}  // namespace wire_detail

class WireWriter {
 public:
  template <class T>
  void put(const T& value) {
    if constexpr (std::is_same_v<T, std::string>) {
      put_count(value.size());
      put_bytes(value.data(), value.size());
    } else if constexpr (wire_detail::kIsVector<T>) {
      put_count(value.size());
      if constexpr (std::is_trivially_copyable_v<typename T::value_type>) put_bytes(value.data(), value.size());
      else for (const auto& item : value) put(item);
    } else if constexpr (wire_detail::kIsMap<T>) {
      put_count(value.size());
      for (const auto& [key, item] : value) {
        put(key);
        put(item);
      }
    } else if constexpr (std::is_trivially_copyable_v<T>) {
      put_bytes(&value, 1);
    } else {
      WireMembers<T>::visit(value, [this](const auto& member) { put(member); });
    }
  }

  std::vector<char> take() && { return std::move(out_); }

 private:
  void put_count(uint64_t n) { put_bytes(&n, 1); }

  template <class T>
  void put_bytes(const T* items, size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    const size_t at = out_.size();
    out_.resize(at + n * sizeof(T));
    if (n) std::memcpy(out_.data() + at, items, n * sizeof(T));
  }

  std::vector<char> out_;
};

class WireReader {
 public:
  explicit WireReader(const std::vector<char>& bytes) : in_(bytes) {}

  template <class T>
  void get(T& value) {
    if constexpr (std::is_same_v<T, std::string>) {
      value.resize(get_count(1));
      get_bytes(value.data(), value.size());
    } else if constexpr (wire_detail::kIsVector<T>) {
      get_vector(value);
    } else if constexpr (wire_detail::kIsMap<T>) {
      const uint64_t n = get_count(1);
      value.clear();
      for (uint64_t i = 0; i < n; ++i) {
        typename T::key_type key{};
        typename T::mapped_type item{};
        get(key);
        get(item);
        value.emplace(std::move(key), std::move(item));
      }
    } else if constexpr (std::is_trivially_copyable_v<T>) {
      get_bytes(&value, 1);
    } else {
      WireMembers<T>::visit(value, [this](auto& member) { get(member); });
    }
  }

  template <class T>
  T get() {
    T value{};
    get(value);
    return value;
  }

  bool at_end() const { return at_ == in_.size(); }

 private:
  // Elements of a record that is not trivially copyable are read one by one, so a corrupt
  // count fails when the bytes run out instead of allocating for it.
  template <class T>
  void get_vector(std::vector<T>& value) {
    if constexpr (std::is_trivially_copyable_v<T>) {
      value.resize(get_count(sizeof(T)));
      get_bytes(value.data(), value.size());
    } else {
      const uint64_t n = get_count(1);
      value.clear();
      for (uint64_t i = 0; i < n; ++i) value.push_back(get<T>());
    }
  }

  // A count of items of at least `min_bytes_each` bytes that must still fit in the blob.
  uint64_t get_count(size_t min_bytes_each) {
    uint64_t n = 0;
    get_bytes(&n, 1);
    if (n > (in_.size() - at_) / min_bytes_each) throw std::runtime_error("exchange blob: count beyond its end");
    return n;
  }

  template <class T>
  void get_bytes(T* items, size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (n > (in_.size() - at_) / sizeof(T)) throw std::runtime_error("truncated exchange blob");
    if (n) std::memcpy(items, in_.data() + at_, n * sizeof(T));
    at_ += n * sizeof(T);
  }

  const std::vector<char>& in_;
  size_t at_ = 0;
};

}  // namespace culprit
