// read_results_h5: reads a results file written by write_results_h5 back into AnalysisResults.
//
// Checks what it relies on and names what is missing: each required root attribute, each
// dataset, each field (by name and type class) of each dataset. Fields are matched by name, so
// extra fields or a different member order written by another tool are fine. The extra
// attributes `reduce_path`, `mpi_transport`, `command` and `notes` are optional ("unknown",
// "", "" and none when absent).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/version.hpp"
#include "output/h5_handle.hpp"
#include "output/h5_types.hpp"
#include "output/results_io.hpp"

namespace culprit {
namespace {

using h5::check;
using h5::Handle;
using h5::Layout;

bool has_attribute(hid_t loc, const char* name) {
  return check(H5Aexists(loc, name), std::string("looking for attribute '") + name + "'") > 0;
}

std::string read_string_attribute(hid_t loc, const char* name) {
  const std::string what = std::string("reading attribute '") + name + "'";
  if (!has_attribute(loc, name))
    throw std::runtime_error(std::string("missing root attribute '") + name + "'");
  Handle attr(H5Aopen(loc, name, H5P_DEFAULT), what);
  Handle type(H5Aget_type(attr.get()), what);
  if (H5Tget_class(type.get()) != H5T_STRING) {
    throw std::runtime_error(std::string("root attribute '") + name + "' is not a string");
  }
  Handle space(H5Aget_space(attr.get()), what);
  if (H5Sget_simple_extent_npoints(space.get()) != 1) {
    throw std::runtime_error(std::string("root attribute '") + name + "' is not a single value");
  }
  if (check(H5Tis_variable_str(type.get()), what) > 0) {
    Handle mem(H5Tcopy(H5T_C_S1), what);
    check(H5Tset_size(mem.get(), H5T_VARIABLE), what);
    char* value = nullptr;
    check(H5Aread(attr.get(), mem.get(), &value), what);
    std::string out = value ? value : "";
    H5free_memory(value);
    return out;
  }
  const std::size_t size = H5Tget_size(type.get());
  if (size == 0) throw std::runtime_error(what + ": string of size 0");
  Handle mem = h5::string_type(size);
  std::vector<char> buffer(size, '\0');
  check(H5Aread(attr.get(), mem.get(), buffer.data()), what);
  return h5::get_string(buffer.data(), size);
}

int32_t read_int_attribute(hid_t loc, const char* name) {
  const std::string what = std::string("reading attribute '") + name + "'";
  if (!has_attribute(loc, name))
    throw std::runtime_error(std::string("missing root attribute '") + name + "'");
  Handle attr(H5Aopen(loc, name, H5P_DEFAULT), what);
  Handle type(H5Aget_type(attr.get()), what);
  if (H5Tget_class(type.get()) != H5T_INTEGER) {
    throw std::runtime_error(std::string("root attribute '") + name + "' is not an integer");
  }
  Handle space(H5Aget_space(attr.get()), what);
  if (H5Sget_simple_extent_npoints(space.get()) != 1) {
    throw std::runtime_error(std::string("root attribute '") + name + "' is not a single value");
  }
  int64_t value = 0;
  check(H5Aread(attr.get(), H5T_NATIVE_INT64, &value), what);
  if (value < INT32_MIN || value > INT32_MAX) {
    throw std::runtime_error(std::string("root attribute '") + name + "' is out of range");
  }
  return static_cast<int32_t>(value);
}

const char* class_name(H5T_class_t c) {
  switch (c) {
    case H5T_INTEGER:
      return "an integer";
    case H5T_FLOAT:
      return "a float";
    case H5T_STRING:
      return "a string";
    case H5T_COMPOUND:
      return "a compound";
    default:
      return "of another type class";
  }
}

// Checks that the dataset's compound type has every required field we read, with a
// convertible class. Returns the fields the file has (optional ones may be absent).
std::vector<h5::Field> check_fields(hid_t file_type, const std::string& dataset,
                                    std::span<const h5::Field> fields) {
  if (H5Tget_class(file_type) != H5T_COMPOUND) {
    throw std::runtime_error("dataset " + dataset + " is not a compound table");
  }
  std::vector<h5::Field> present;
  for (const h5::Field& f : fields) {
    const int index = H5Tget_member_index(file_type, f.name);
    if (index < 0) {
      H5Eclear2(H5E_DEFAULT);
      if (f.optional) continue;
      throw std::runtime_error("dataset " + dataset + " has no field '" + f.name + "'");
    }
    const H5T_class_t expected = f.kind == h5::Kind::Str   ? H5T_STRING
                                 : f.kind == h5::Kind::F64 ? H5T_FLOAT
                                                           : H5T_INTEGER;
    const H5T_class_t actual = H5Tget_member_class(file_type, static_cast<unsigned>(index));
    if (actual != expected) {
      throw std::runtime_error("field '" + std::string(f.name) + "' of dataset " + dataset +
                               " is " + class_name(actual) + ", expected " + class_name(expected));
    }
    if (expected == H5T_STRING) {
      Handle member(H5Tget_member_type(file_type, static_cast<unsigned>(index)),
                    "reading " + dataset);
      if (H5Tis_variable_str(member.get()) > 0) {
        throw std::runtime_error("field '" + std::string(f.name) + "' of dataset " + dataset +
                                 " is a variable-length string, expected fixed-length");
      }
    }
    present.push_back(f);
  }
  return present;
}

// A record before reading: what a field the file lacks reads as.
template <class Rec>
Rec blank_record() {
  return Rec{};
}
template <>
h5::ProcessRec blank_record<h5::ProcessRec>() {
  h5::ProcessRec rec{};
  rec.rank = -1;  // files before the rank column: no input named one
  return rec;
}

template <class Rec>
auto read_table(hid_t file, const char* name, std::span<const h5::Field> fields) {
  using Row = decltype(h5::from_record(std::declval<const Rec&>()));
  const std::string dataset = std::string("/") + name;
  const std::string what = "reading dataset " + dataset;
  if (check(H5Lexists(file, name, H5P_DEFAULT), what) <= 0) {
    throw std::runtime_error("missing dataset " + dataset);
  }
  Handle dset(H5Dopen2(file, name, H5P_DEFAULT), what);
  Handle file_type(H5Dget_type(dset.get()), what);
  const std::vector<h5::Field> present = check_fields(file_type.get(), dataset, fields);

  Handle space(H5Dget_space(dset.get()), what);
  if (H5Sget_simple_extent_ndims(space.get()) != 1) {
    throw std::runtime_error("dataset " + dataset + " is not one-dimensional");
  }
  hsize_t dims[1] = {0};
  check(H5Sget_simple_extent_dims(space.get(), dims, nullptr), what);

  std::vector<Rec> records(static_cast<std::size_t>(dims[0]), blank_record<Rec>());
  if (!records.empty()) {
    Handle mem_type = h5::make_compound(present, sizeof(Rec), Layout::Memory);
    check(H5Dread(dset.get(), mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, records.data()), what);
  }
  std::vector<Row> rows;
  rows.reserve(records.size());
  for (const Rec& rec : records) rows.push_back(h5::from_record(rec));
  return rows;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  if (text.empty()) return lines;
  std::size_t start = 0;
  while (true) {
    const auto nl = text.find('\n', start);
    lines.push_back(text.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return lines;
}

AnalysisResults read_file(const std::string& path) {
  if (::access(path.c_str(), R_OK) != 0) throw std::runtime_error(std::strerror(errno));
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 < 0) throw std::runtime_error("cannot open: " + h5::error_stack_message());
  if (is_hdf5 == 0) throw std::runtime_error("not an HDF5 file");
  Handle fapl = h5::file_access_properties();
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), "cannot open");
  const hid_t root = file.get();

  AnalysisResults r;
  RunInfo& info = r.info;
  info.format_version = read_int_attribute(root, "format_version");
  if (info.format_version > kFormatVersion) {
    throw std::runtime_error("format_version " + std::to_string(info.format_version) +
                             " is newer than this tool understands (" +
                             std::to_string(kFormatVersion) + ")");
  }
  info.tool_version = read_string_attribute(root, "tool_version");
  info.seq_window = read_int_attribute(root, "seq_window");
  info.analyzer_ranks = read_int_attribute(root, "analyzer_ranks");
  info.processes = read_int_attribute(root, "processes");
  info.created_utc = read_string_attribute(root, "created_utc");
  info.input = read_string_attribute(root, "input");
  info.status = read_string_attribute(root, "status");
  info.reduce_path =
      has_attribute(root, "reduce_path") ? read_string_attribute(root, "reduce_path") : "unknown";
  if (has_attribute(root, "mpi_transport")) info.mpi_transport = read_string_attribute(root, "mpi_transport");
  if (has_attribute(root, "command")) info.command = read_string_attribute(root, "command");
  if (has_attribute(root, "notes")) info.notes = split_lines(read_string_attribute(root, "notes"));

  r.processes =
      read_table<h5::ProcessRec>(root, "processes", h5::process_fields());
  r.comm_ranks =
      read_table<h5::CommRankRec>(root, "comm_ranks", h5::comm_rank_fields());
  r.edges = read_table<h5::EdgeRec>(root, "edges", h5::edge_fields());
  r.culprits = read_table<h5::CulpritRec>(root, "culprits", h5::culprit_fields());
  r.chains = read_table<h5::ChainRec>(root, "chains", h5::chain_fields());
  r.inputs = read_table<h5::InputRec>(root, "inputs", h5::input_fields());
  return r;
}

}  // namespace

AnalysisResults read_results_h5(const std::string& path) {
  h5::ErrorSilencer silence;
  try {
    return read_file(path);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot read results file '" + path + "': " + e.what());
  }
}

}  // namespace culprit
