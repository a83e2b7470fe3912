// The small subcommands: mock and report.
#pragma once

#include <string>

namespace culprit {

struct MockOptions {
  std::string out;
  std::string scenario;
  std::string format = "nccl-json";  // or probing-csv / probing-json with '+' options
};

int run_mock_command(const MockOptions& options);
int run_report_command(const std::string& file);
std::string mock_scenario_help();

}  // namespace culprit
