// Node-local data that does not come from files: the command line plugs a source in (the
// simulator behind `--mock`, mock/mock_source.hpp), so that the pipeline never depends on
// where the data comes from.
#pragma once

#include <string>

#include "io/local_data.hpp"

namespace culprit {

class LocalSource {
 public:
  virtual ~LocalSource() = default;
  // Appends analyzer rank `rank` of `size`'s share of the data. Throws std::invalid_argument
  // for a bad description (every rank fails alike, so no collective is needed).
  virtual void read(int rank, int size, LocalData& data) = 0;
  // What was analysed, for the run info ("mock:SPEC").
  virtual std::string describe() const = 0;
};

}  // namespace culprit
