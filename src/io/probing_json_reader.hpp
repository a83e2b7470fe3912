// Reader for probing's JSON exports (FORMATS.md §3): `probing ... query "SELECT * FROM nccl.X"
// -f json` writes an array of row objects (keys: the column names; values: numbers, strings
// or null where its converter has no unsigned 64-bit type). The same tables and row model as
// the CSV reader (probing_rows.hpp). Parsed with a SAX parser: memory is bounded by one row;
// a malformed file keeps the rows before the error and names it in the file's error.
#pragma once

#include <string>
#include <string_view>

#include "io/local_data.hpp"

namespace culprit {

// Reads an export from disk; appends records and one InputReport (format "probing-json").
void read_probing_json_file(const std::string& path, const std::string& host, LocalData& data);

// The same for an export held in memory (`name` is reported as its path).
void read_probing_json_buffer(std::string_view content, const std::string& name,
                              const std::string& host, LocalData& data);

}  // namespace culprit
