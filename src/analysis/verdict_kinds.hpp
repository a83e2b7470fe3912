// The kinds of verdict the analysis passes hand on to each other: what a root is (its
// class) and what a connection showed. They are enums inside the analysis; their names are
// the strings of CONTRACT.md's results (/processes.culprit_class, /edges.verdict), written
// only where the result rows are made.
#pragma once

#include <cstdint>
#include <string>

namespace culprit {

enum class CulpritClass : uint8_t { kNone, kGpuProducer, kGpuConsumer, kNetworkLink, kFlush, kHang };

enum class EdgeVerdict : uint8_t { kNormal, kLateData, kNoCredit, kSlowLink, kSlowFlush };

std::string name_of(CulpritClass culprit_class);
std::string name_of(EdgeVerdict verdict);

}  // namespace culprit
