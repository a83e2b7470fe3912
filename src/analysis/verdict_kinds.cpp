#include "analysis/verdict_kinds.hpp"

namespace culprit {

std::string name_of(CulpritClass culprit_class) {
  switch (culprit_class) {
    case CulpritClass::kGpuProducer: return "gpu_producer";
    case CulpritClass::kGpuConsumer: return "gpu_consumer";
    case CulpritClass::kNetworkLink: return "network_link";
    case CulpritClass::kFlush: return "flush";
    case CulpritClass::kHang: return "hang";
    case CulpritClass::kNone: break;
  }
  return "none";
}

std::string name_of(EdgeVerdict verdict) {
  switch (verdict) {
    case EdgeVerdict::kLateData: return "late_data";
    case EdgeVerdict::kNoCredit: return "no_credit";
    case EdgeVerdict::kSlowLink: return "slow_link";
    case EdgeVerdict::kSlowFlush: return "slow_flush";
    case EdgeVerdict::kNormal: break;
  }
  return "normal";
}

}  // namespace culprit
