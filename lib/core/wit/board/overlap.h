// The board's overlap test (docs/board.md, "Overlap"): is a record the board
// replayed a near-copy of a benchmark record? Exact checks miss a record with
// a few characters added; shared spans of a fixed number of tokens do not.
// Every window of `window` bytes of every benchmark record is indexed (by
// XXH3, confirmed byte for byte, so a hash collision can only be refuted,
// never counted); a training record's coverage of a benchmark record is the
// share of that record's bytes inside windows the training record also holds.
// A benchmark record shorter than the window counts as covered when it occurs
// whole in the training record. Torch-free.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "wit/base/bytes.h"

namespace wit {

class OverlapIndex {
 public:
  // `records`: the benchmark records (public, then sealed, in any order the caller names them by).
  OverlapIndex(std::vector<std::string> records, uint64_t window);
  struct Hit {
    size_t record = 0;     // index into the records given
    uint64_t covered = 0;  // bytes of it inside shared windows
    uint64_t length = 0;
    double share() const { return length ? double(covered) / double(length) : 0; }
  };
  // The benchmark record `training` covers most (ties: the lowest index), or
  // nullopt when it shares no window with any.
  std::optional<Hit> best(ByteView training) const;
  size_t size() const { return records_.size(); }
  uint64_t window() const { return window_; }

 private:
  std::vector<std::string> records_;
  uint64_t window_;
  // window hash -> (record, offset) of each occurrence
  std::unordered_multimap<uint64_t, std::pair<uint32_t, uint32_t>> windows_;
  std::vector<size_t> short_;  // records shorter than the window
};

}  // namespace wit
