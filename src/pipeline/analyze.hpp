// `nccl-culprit analyze`: read -> reduce -> exchange -> analyse -> write, every phase
// ending in an agreement so that one node's failure is a clean error everywhere.
#pragma once

#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "pipeline/local_source.hpp"

namespace culprit {

struct AnalyzeOptions {
  std::string input;          // --input template (node-local)
  std::string shared;         // --shared DIR
  std::shared_ptr<LocalSource> source;  // data from elsewhere than files (--mock), else null
  std::string format = "auto";
  int seq_window = 20;
  bool local_only = false;
  std::string reduce = "auto";
  std::string output;         // default nccl-culprit-{job}.h5
  std::string json;
  bool quiet = false;
  double deadline_s = 60;     // --deadline: how long a phase waits for a silent analyzer process
  std::string html;           // --html: also draw the verdict as a self-contained page
  std::string command;        // the command line that runs this analysis again (run info)
};

// Exit codes of CONTRACT.md, and 4: results written with status partial because some
// analyzer processes stayed silent past --deadline (the job is then ended, silent ones too).
enum ExitCode : int { kExitOk = 0, kExitFailure = 1, kExitUsage = 2, kExitNoData = 3, kExitSilentNodes = 4 };

// Collective over `comm`. Returns the exit code, the same on every rank.
int run_analyze(const AnalyzeOptions& options, Communicator& comm);

// The job id used in default paths: SLURM_JOB_ID, else "local".
std::string current_job_id();
std::string current_host_name();

}  // namespace culprit
