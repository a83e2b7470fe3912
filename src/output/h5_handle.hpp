// RAII for HDF5 identifiers and the checks that turn HDF5 failures into exceptions.
//
// - Handle owns one hid_t of any kind (file, group, dataset, dataspace, datatype, attribute,
//   property list) and releases it with H5Idec_ref; its destructor never throws.
// - check()/check_id() turn a negative HDF5 return value into std::runtime_error whose message
//   is "<what>: <HDF5 error stack, one line>".
// - ErrorSilencer switches off HDF5's default error printer (which writes multi-line stack dumps
//   to stderr) for its lifetime and restores the previous setting afterwards.
#pragma once

#include <hdf5.h>

#include <string>
#include <utility>

namespace culprit::h5 {

// The current thread's HDF5 error stack as one line ("API call: what failed (innermost
// cause)"), or "unknown HDF5 error" when the stack is empty. Clears the stack.
std::string error_stack_message();

// Throws std::runtime_error("<what>: <error stack>") when `id` is negative; returns `id`.
hid_t check_id(hid_t id, const std::string& what);

// Throws std::runtime_error("<what>: <error stack>") when `rc` is negative; returns `rc`.
herr_t check(herr_t rc, const std::string& what);

class Handle {
 public:
  Handle() = default;
  // Takes ownership of `id`; throws (see check_id) when it is negative.
  Handle(hid_t id, const std::string& what) : id_(check_id(id, what)) {}
  ~Handle() { reset(); }

  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

  // Releases the identifier, ignoring errors (for destructors and unwinding).
  void reset() noexcept;

  // Releases the identifier and throws when HDF5 reports an error. Use it for files, whose
  // close flushes data: a failed flush must fail the write.
  void close(const std::string& what);

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// File access properties for our files: strong close degree (closing the file closes every
// object still open in it) and, where the library supports it, no file locking (HDF5 1.10's
// flock() fails on some parallel file systems, and nobody else opens our temporary file).
Handle file_access_properties();

class ErrorSilencer {
 public:
  ErrorSilencer();
  ~ErrorSilencer();
  ErrorSilencer(const ErrorSilencer&) = delete;
  ErrorSilencer& operator=(const ErrorSilencer&) = delete;

 private:
  H5E_auto2_t saved_func_ = nullptr;
  void* saved_data_ = nullptr;
  bool saved_ = false;
};

}  // namespace culprit::h5
