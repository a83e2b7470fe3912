// Finding the input files of this analyzer process and reading them (in parallel).
#pragma once

#include <string>
#include <vector>

#include "io/local_data.hpp"

namespace culprit {

struct InputFile {
  std::string host;
  std::string path;
  std::string format;  // nccl-json | probing-csv | probing-json | shard
};

struct Discovery {
  std::vector<InputFile> files;
  std::string error;   // one line naming the directory, empty on success
};

// Expands {host}, {rank} and {job} in an --input template.
std::string expand_input_template(const std::string& tmpl, const std::string& host, int rank,
                                  const std::string& job);

// Guesses the format of a file from its name and first bytes ("" when not an input file).
// `forced` (other than "auto") wins for every candidate file.
std::string detect_format(const std::string& path, const std::string& forced);

// Node-local data: the files directly under `dir` or one level below, all of host `host`.
Discovery discover_node_local(const std::string& dir, const std::string& host,
                              const std::string& forced_format);

// Shared post-mortem data DIR/<host>/...: the host directories are dealt round-robin over
// the analyzer ranks so that every file is read exactly once and every host's files stay
// together (kernel clocks are compared within a node).
Discovery discover_shared(const std::string& dir, int rank, int size,
                          const std::string& forced_format);

// Host directories under a shared directory, sorted (for the mock and Slurm sizing).
std::vector<std::string> shared_hosts(const std::string& dir, std::string* error);

// Reads the files with up to `threads` threads (0: all cores) into `data`.
void read_input_files(const std::vector<InputFile>& files, LocalData& data, unsigned threads = 0);

}  // namespace culprit
