// The page's style sheet and script, inlined into every page (nothing is fetched, so the page
// opens offline from a shared file system).
#pragma once

namespace culprit::html {

// CSS for the page, the map (roles, wire verdicts, chains) and the tables.
extern const char* const kStyle;

// Plain JavaScript, no library. Reads the JSON in <script id="culprit-data">: `ids` (process
// id per GPU), `next` (next hop of each GPU's chain, -1 none), `node` (node index per GPU),
// `names`, `focus` (per node: the GPU whose chain a click on the node shows) and `defaults`
// (victims whose chains are drawn at load). Clicking a GPU (or an aggregated node cell, or a
// chain in the list) highlights that chain in every map and names its hops in #chain-info;
// clicking a table header sorts the table by that column.
extern const char* const kScript;

}  // namespace culprit::html
