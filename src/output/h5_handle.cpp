#include "output/h5_handle.hpp"

#include <stdexcept>
#include <vector>

namespace culprit::h5 {
namespace {

std::string one_line(const char* text) {
  std::string s = text ? text : "";
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

struct Frame {
  std::string func;
  std::string desc;
};

herr_t collect_frame(unsigned /*n*/, const H5E_error2_t* err, void* client) {
  auto* frames = static_cast<std::vector<Frame>*>(client);
  frames->push_back({one_line(err->func_name), one_line(err->desc)});
  return 0;
}

}  // namespace

std::string error_stack_message() {
  std::vector<Frame> frames;
  // Downward: from the API call the caller made to the innermost function that failed.
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_frame, &frames);
  H5Eclear2(H5E_DEFAULT);
  if (frames.empty()) return "unknown HDF5 error";
  const Frame& api = frames.front();
  std::string msg = api.func.empty() ? api.desc : api.func + ": " + api.desc;
  if (frames.size() > 1 && frames.back().desc != api.desc && !frames.back().desc.empty()) {
    msg += " (" + frames.back().desc + ")";
  }
  return msg;
}

hid_t check_id(hid_t id, const std::string& what) {
  if (id < 0) throw std::runtime_error(what + ": " + error_stack_message());
  return id;
}

herr_t check(herr_t rc, const std::string& what) {
  if (rc < 0) throw std::runtime_error(what + ": " + error_stack_message());
  return rc;
}

void Handle::reset() noexcept {
  if (id_ >= 0) {
    if (H5Iis_valid(id_) > 0) H5Idec_ref(id_);
    H5Eclear2(H5E_DEFAULT);
  }
  id_ = H5I_INVALID_HID;
}

void Handle::close(const std::string& what) {
  const hid_t id = std::exchange(id_, H5I_INVALID_HID);
  if (id >= 0) check(H5Idec_ref(id), what);
}

Handle file_access_properties() {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), "creating file access properties");
  check(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG), "setting the file close degree");
#if H5_VERSION_GE(1, 10, 7)
  check(H5Pset_file_locking(fapl.get(), false, true), "disabling file locking");
#endif
  return fapl;
}

ErrorSilencer::ErrorSilencer() {
  if (H5Eget_auto2(H5E_DEFAULT, &saved_func_, &saved_data_) >= 0) saved_ = true;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

ErrorSilencer::~ErrorSilencer() {
  if (saved_) H5Eset_auto2(H5E_DEFAULT, saved_func_, saved_data_);
}

}  // namespace culprit::h5
