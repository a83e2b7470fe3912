// Reader for probing's `nccl.proxy_ops` CSV exports (FORMATS.md §3): one row per ProxyOp
// with the phase sums already taken. Columns are found by header name; the federation
// columns (_host, _rank, ...) and a pid column are used when present.
#pragma once

#include <string>
#include <string_view>

#include "io/local_data.hpp"

namespace culprit {

void read_probing_csv_file(const std::string& path, const std::string& host, LocalData& data);
void read_probing_csv_buffer(std::string_view content, const std::string& name,
                             const std::string& host, LocalData& data);

}  // namespace culprit
