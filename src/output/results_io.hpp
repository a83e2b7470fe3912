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

// The verdict as one self-contained HTML page (inline SVG, CSS and JavaScript, nothing
// fetched): the culprit cards, the cluster map with the chains, the per-connection table,
// inputs and notes (html_page.cpp). Written via temporary name + rename. Throws on failure.
void write_results_html(const AnalysisResults& results, const std::string& path);

// What the text report says when nobody is named: what was seen instead (waiting spread
// evenly over many processes is not "no waiting"). The HTML page's card says the same.
void render_no_culprit(const AnalysisResults& results, std::ostream& out);

// The human-readable report: culprits first (host, pid, class, blame share, victims),
// the longest chain, inputs and rejections, run notes.
void render_report(const AnalysisResults& results, std::ostream& out);

}  // namespace culprit
