// The board's overlap test of replayed records against benchmark records.
#include "wit/board/overlap.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string_view>

#include "wit/base/error.h"

namespace wit {

OverlapIndex::OverlapIndex(std::vector<std::string> records, uint64_t window) : records_(std::move(records)), window_(window) {
  if (window_ < 1) throw Error("the overlap window must be at least one token");
  for (size_t r = 0; r < records_.size(); r++) {
    const std::string& s = records_[r];
    if (s.size() > UINT32_MAX || r > UINT32_MAX) throw Error("a benchmark record is too large for the overlap index");
    if (s.size() < window_) {
      if (!s.empty()) short_.push_back(r);
      continue;
    }
    for (size_t at = 0; at + window_ <= s.size(); at++)
      windows_.emplace(XXH3_64bits(s.data() + at, window_), std::make_pair(uint32_t(r), uint32_t(at)));
  }
}

std::optional<OverlapIndex::Hit> OverlapIndex::best(ByteView training) const {
  // Covered bytes per benchmark record: a mark per byte, for the records the training record touches.
  std::map<size_t, std::vector<uint8_t>> covered;
  const char* t = reinterpret_cast<const char*>(training.data);
  if (training.size >= window_) {
    for (size_t at = 0; at + window_ <= training.size; at++) {
      const auto range = windows_.equal_range(XXH3_64bits(t + at, window_));
      for (auto it = range.first; it != range.second; ++it) {
        const auto [r, off] = it->second;
        const std::string& b = records_[r];
        if (std::memcmp(b.data() + off, t + at, window_) != 0) continue;  // a collision: not shared
        auto& marks = covered[r];
        if (marks.empty()) marks.assign(b.size(), 0);
        std::fill(marks.begin() + off, marks.begin() + off + long(window_), uint8_t(1));
      }
    }
  }
  const std::string_view tv(t, training.size);
  for (size_t r : short_)
    if (tv.find(records_[r]) != std::string_view::npos) covered[r].assign(records_[r].size(), 1);
  std::optional<Hit> out;
  for (const auto& [r, marks] : covered) {
    Hit h{r, uint64_t(std::count(marks.begin(), marks.end(), uint8_t(1))), uint64_t(records_[r].size())};
    if (!out || h.share() > out->share()) out = h;
  }
  return out;
}

}  // namespace wit
