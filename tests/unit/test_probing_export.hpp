// Test helper: a probing CSV export (header and rows) rewritten as probing's JSON export of
// the same rows (`-f json`: an array of row objects, keys sorted, pretty-printed, null where
// the CSV cell is empty, numbers unquoted), so that both readers can be fed the same rows.
#pragma once

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace culprit::testing {

inline std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) cells.emplace_back();
    else if (c != '\r') cells.back().push_back(c);
  }
  return cells;
}

inline nlohmann::json json_cell(const std::string& text) {
  if (text.empty()) return nullptr;
  size_t used = 0;
  try {
    if (text[0] == '-') {
      long long v = std::stoll(text, &used);
      if (used == text.size()) return v;
    } else if (text.find_first_not_of("0123456789") == std::string::npos) {
      unsigned long long v = std::stoull(text, &used);
      if (used == text.size()) return v;
    }
    double d = std::stod(text, &used);
    if (used == text.size()) return d;
  } catch (const std::exception&) {
  }
  return text;
}

inline std::string probing_json(const std::string& csv) {
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header = csv_cells(line);
  nlohmann::json rows = nlohmann::json::array();
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> cells = csv_cells(line);
    nlohmann::json row = nlohmann::json::object();
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = json_cell(i < cells.size() ? cells[i] : "");
    rows.push_back(row);
  }
  return rows.dump(2);
}

}  // namespace culprit::testing
