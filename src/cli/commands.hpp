// The small subcommands (mock, report) and what the command line adds to an analysis.
#pragma once

#include <string>

namespace culprit {

struct MockOptions {
  std::string out;
  std::string scenario;
  std::string format = "nccl-json";  // or probing-csv / probing-json with '+' options
};

struct AnalyzeOptions;

int run_mock_command(const MockOptions& options);
// Prints the text report of a results file, or with `html` set writes its picture there.
int run_report_command(const std::string& file, const std::string& html);
std::string mock_scenario_help();

// The command line that runs the same analysis again, for the results' run info: the
// launcher for `analyzer_ranks` processes, then every option that shapes the verdict (input,
// format, window, fan-out); outputs and --quiet are left out. Arguments are shell-quoted.
std::string reproduce_command(const AnalyzeOptions& options, const std::string& mock_spec, int analyzer_ranks);

}  // namespace culprit
