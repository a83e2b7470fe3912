// Small text helpers shared by the text report and the HTML page.
#pragma once

#include <cstdint>
#include <string>

namespace culprit {

// printf into a std::string, whatever its length.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// "850 ns", "12.0 us", "12.0 ms", "1.37 s".
std::string duration(uint64_t ns);

// "1 process", "3 processes".
std::string plural(uint64_t n, const char* one, const char* many);

}  // namespace culprit
