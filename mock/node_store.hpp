// The records of the nodes a Simulation keeps (docs/simulator.md, "Memory"), appended per
// node as the engines finish them. Each node's records are held in a compact binary form; once
// the nodes' pending bytes pass a budget, all of them are appended to one temporary file (one
// file descriptor whatever the node count: 2048 nodes x 8 processes x several communicators
// could not each keep a file open), and a node's records are read back, in index order, when
// it is rendered. Memory: the budget, plus the node being rendered.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "mock/records.hpp"

namespace culprit::mock {

class NodeStore {
 public:
  NodeStore(int nodes, size_t memory_budget);
  ~NodeStore();
  NodeStore(const NodeStore&) = delete;
  NodeStore& operator=(const NodeStore&) = delete;

  void add(int node, const OperationRecord& rec);
  void add(int node, const ProxyOpRecord& rec);
  NodeTimeline load(int node) const;  // every record added for the node, in index order
  uint64_t spilled_bytes() const { return file_size_; }

 private:
  template <typename Record>
  void append(int node, char tag, const Record& rec);
  void spill();

  struct Chunk {
    uint64_t offset = 0, size = 0;
  };
  std::vector<std::string> pending_;        // per node: encoded records still in memory
  std::vector<std::vector<Chunk>> chunks_;  // per node: its records in the file, in order
  size_t pending_bytes_ = 0;
  size_t budget_;
  std::FILE* file_ = nullptr;  // anonymous (std::tmpfile): gone when closed
  uint64_t file_size_ = 0;
};

}  // namespace culprit::mock
