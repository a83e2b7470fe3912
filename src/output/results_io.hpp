// Writing and reading the verdict: HDF5 results file (CONTRACT.md layout), JSON, text report.
#pragma once

#include <ostream>
#include <string>

#include "core/results.hpp"

namespace culprit {

// Writes the HDF5 results file of CONTRACT.md to `path` via a temporary name in the same
// directory and a rename, so that no partly written file ever carries the final name.
// Throws std::runtime_error with a one-line message naming the file on failure.
void write_results_h5(const AnalysisResults& results, const std::string& path);

// Reads a results file written by write_results_h5 (for `nccl-culprit report`).
// Throws std::runtime_error naming the file and what is wrong.
AnalysisResults read_results_h5(const std::string& path);

// Writes the same verdict as JSON (via temporary name + rename). Throws on failure.
void write_results_json(const AnalysisResults& results, const std::string& path);

// The human-readable report: culprits first (host, pid, class, blame share, victims),
// the longest chain, inputs and rejections, run notes.
void render_report(const AnalysisResults& results, std::ostream& out);

}  // namespace culprit
