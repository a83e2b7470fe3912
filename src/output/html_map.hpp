// The cluster map of the HTML page as inline SVG: nodes as boxes with their GPUs inside,
// each GPU coloured by role and shaded by its wait, network wires coloured by verdict, the
// culprit link drawn thick. Above kDetailedMapMaxNodes nodes the map aggregates: every node
// is one cell in rows of kNodesPerRow, flagged wires only, and the hot spots (nodes holding
// a root or a flagged wire's end) are drawn in full below it.
//
// Every GPU cell is an element `#gpu-<process_id>` and every node cell `#node-<index>`, with
// `data-cx`/`data-cy` (its centre), which the page's script uses to draw chains.
#pragma once

#include <string>

#include "core/results.hpp"
#include "output/html_model.hpp"

namespace culprit::html {

constexpr std::size_t kNodesPerRow = 64;  // aggregated map: node cells per row

std::string render_map(const AnalysisResults& results, const Model& model);

}  // namespace culprit::html
