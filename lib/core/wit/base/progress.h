// Progress bar on stderr with rate and ETA, drawn only when stderr is a
// terminal and not --quiet; the tool prints its own one-line summary after.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace wit {

class Progress {
 public:
  // total may be 0 when unknown; unit names what is counted ("B", "records", "steps").
  Progress(std::string label, uint64_t total, std::string unit, bool quiet);
  ~Progress();
  // Thread-safe; redraws at most ~10 times a second.
  void add(uint64_t delta);
  // Erases the bar (once).
  void finish();

 private:
  void draw();
  std::string label_, unit_;
  uint64_t total_;
  bool quiet_, tty_, finished_ = false;
  std::atomic<uint64_t> done_{0};
  std::atomic<int64_t> last_draw_ns_{0};
  std::chrono::steady_clock::time_point start_;
};

// "1.23 GiB", "512 B"; and rates like "812.4 MiB/s".
std::string human_bytes(double bytes);

}  // namespace wit
