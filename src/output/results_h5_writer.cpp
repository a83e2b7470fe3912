// write_results_h5: the HDF5 results file of CONTRACT.md ("Results file").
//
// Layout: root attributes (tool_version, format_version, seq_window, analyzer_ranks, processes,
// created_utc, input, status, plus the extras reduce_path, mpi_transport, command and notes), and one 1-D compound
// dataset per table (/processes, /comm_ranks, /edges, /culprits, /chains, /inputs) with the
// types of h5_types.hpp. Empty tables are written as datasets of 0 rows.
// The header comes from completed_run_info(): format_version is always this writer's
// (kFormatVersion); an empty tool_version or created_utc is filled in.
// String attributes are fixed-length, NUL-padded, exactly as long as the value (at least one
// byte); `notes` holds RunInfo::notes joined with '\n'. Attribute values longer than
// kMaxAttributeBytes are truncated (HDF5 keeps attributes in the object header, < 64 KiB).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "output/atomic_file.hpp"
#include "output/h5_handle.hpp"
#include "output/h5_types.hpp"
#include "output/results_io.hpp"
#include "output/run_info_defaults.hpp"

namespace culprit {
namespace {

using h5::check;
using h5::Handle;
using h5::Layout;

constexpr std::size_t kMaxAttributeBytes = 60000;

void write_string_attribute(hid_t loc, const char* name, const std::string& value) {
  const std::string what = std::string("writing attribute '") + name + "'";
  // One byte more than the longest kept value: truncated_length keeps size - 1 bytes.
  std::string kept = value.substr(0, h5::truncated_length(value, kMaxAttributeBytes + 1));
  if (kept.empty()) kept.push_back('\0');  // HDF5 strings have at least one byte
  Handle type = h5::string_type(kept.size());
  Handle space(H5Screate(H5S_SCALAR), what);
  Handle attr(H5Acreate2(loc, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), what);
  check(H5Awrite(attr.get(), type.get(), kept.data()), what);
}

void write_int_attribute(hid_t loc, const char* name, int32_t value) {
  const std::string what = std::string("writing attribute '") + name + "'";
  Handle space(H5Screate(H5S_SCALAR), what);
  Handle attr(H5Acreate2(loc, name, H5T_STD_I32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), what);
  check(H5Awrite(attr.get(), H5T_NATIVE_INT32, &value), what);
}

template <class Row>
void write_table(hid_t file, const char* name, const std::vector<Row>& rows,
                 Handle (*make_type)(Layout)) {
  using Rec = decltype(h5::to_record(std::declval<const Row&>()));
  const std::string what = std::string("writing dataset /") + name;
  std::vector<Rec> records;
  records.reserve(rows.size());
  for (const Row& row : rows) records.push_back(h5::to_record(row));

  Handle mem_type = make_type(Layout::Memory);
  Handle file_type = make_type(Layout::File);
  const hsize_t dims[1] = {static_cast<hsize_t>(records.size())};
  Handle space(H5Screate_simple(1, dims, nullptr), what);
  Handle dset(
      H5Dcreate2(file, name, file_type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      what);
  if (!records.empty()) {
    check(H5Dwrite(dset.get(), mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, records.data()),
          what);
  }
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) out.push_back('\n');
    out += lines[i];
  }
  return out;
}

// Writes the whole file to `file_path`; every HDF5 object is closed when this returns or
// throws, so the caller may remove the file right after a failure.
void write_file(const AnalysisResults& results, const std::string& file_path) {
  Handle fapl = h5::file_access_properties();
  Handle file(H5Fcreate(file_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
              "cannot create '" + file_path + "'");

  const RunInfo info = completed_run_info(results.info);
  const hid_t root = file.get();
  write_string_attribute(root, "tool_version", info.tool_version);
  write_int_attribute(root, "format_version", info.format_version);
  write_int_attribute(root, "seq_window", info.seq_window);
  write_int_attribute(root, "analyzer_ranks", info.analyzer_ranks);
  write_int_attribute(root, "processes", info.processes);
  write_string_attribute(root, "created_utc", info.created_utc);
  write_string_attribute(root, "input", info.input);
  write_string_attribute(root, "status", info.status);
  write_string_attribute(root, "reduce_path", info.reduce_path);
  write_string_attribute(root, "mpi_transport", info.mpi_transport);
  write_string_attribute(root, "command", info.command);
  write_string_attribute(root, "notes", join_lines(info.notes));

  write_table(root, "processes", results.processes, h5::process_type);
  write_table(root, "comm_ranks", results.comm_ranks, h5::comm_rank_type);
  write_table(root, "edges", results.edges, h5::edge_type);
  write_table(root, "culprits", results.culprits, h5::culprit_type);
  write_table(root, "chains", results.chains, h5::chain_type);
  write_table(root, "inputs", results.inputs, h5::input_type);

  check(H5Fflush(root, H5F_SCOPE_GLOBAL), "flushing '" + file_path + "'");
  file.close("closing '" + file_path + "'");
}

}  // namespace

void write_results_h5(const AnalysisResults& results, const std::string& path) {
  if (path.empty()) throw std::runtime_error("cannot write results file: empty file name");
  h5::ErrorSilencer silence;
  const std::string temp = temporary_name_for(path);
  try {
    write_file(results, temp);
    commit_temporary(temp, path);
  } catch (const std::exception& e) {
    remove_quietly(temp);
    throw std::runtime_error("cannot write results file '" + path + "': " + e.what());
  }
}

}  // namespace culprit
