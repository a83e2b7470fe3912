// Reader for PyTorch Flight Recorder dumps (FORMATS.md §6): one file per rank, named
// `<prefix><global rank>`, a protocol-2 pickle of plain data (read by safe_unpickler.hpp, no
// Python) or the same content as JSON. Schema 1.x (a list of entries) to 2.10.
//
// What it keeps, per dump: how far the rank got in each process group (pg_status, mapped
// from the dump's local pg_id to the group's name), the groups' members, and the entries of
// the ring buffer. The process is known by its global rank only (host: the directory it was
// found under, pid unknown).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "io/local_data.hpp"

namespace culprit {

// The global rank a dump's file name ends in (`nccl_trace_rank_12`, `_dump_3`,
// `rank_7.json`), or -1 when the name does not end in digits after a non-digit prefix.
int64_t flight_recorder_rank_of_name(const std::string& path);

// The first bytes of a file say it is a Flight Recorder dump: a pickle, or a JSON object
// with the dump's top-level keys.
bool looks_like_flight_recorder(std::string_view head);

// Reads a dump from disk; appends its records and one InputReport (format "flight-recorder").
void read_flight_recorder_file(const std::string& path, const std::string& host, LocalData& data);

// The same for a dump already decoded (`name` is reported as its path).
void read_flight_recorder_value(const nlohmann::json& dump, int64_t global_rank, const std::string& name,
                                const std::string& host, LocalData& data, InputReport& report);

}  // namespace culprit
