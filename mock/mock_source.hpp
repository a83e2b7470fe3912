// The simulator as a local data source (`analyze --mock SPEC`): each analyzer rank simulates
// the cluster, keeps the records of its share of the nodes (round-robin) only, and reads them
// as NCCL trace files rendered in memory, node by node.
#pragma once

#include <string>

#include "pipeline/local_source.hpp"

namespace culprit::mock {

class MockSource final : public LocalSource {
 public:
  explicit MockSource(std::string spec) : spec_(std::move(spec)) {}
  void read(int rank, int size, LocalData& data) override;
  std::string describe() const override { return "mock:" + spec_; }

 private:
  std::string spec_;
};

}  // namespace culprit::mock
