#pragma once
namespace culprit {
inline constexpr const char* kToolVersion = "0.1.0";
inline constexpr int kFormatVersion = 1;
}  // namespace culprit
