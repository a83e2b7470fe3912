// Reader for probing's CSV exports (FORMATS.md §3): `probing ... query "SELECT * FROM nccl.X"
// -f csv` for the tables nccl.proxy_ops, nccl.net_qp, nccl.inflight_ops and nccl.coll_perf.
// Columns are found by header name (a file without a header uses the export order); the
// rows become records through the row model of probing_rows.hpp.
#pragma once

#include <string>
#include <string_view>

#include "io/local_data.hpp"

namespace culprit {

void read_probing_csv_file(const std::string& path, const std::string& host, LocalData& data);
void read_probing_csv_buffer(std::string_view content, const std::string& name,
                             const std::string& host, LocalData& data);

}  // namespace culprit
