// Progress bar / summary line on stderr.
#include "wit/base/progress.h"

#include <cstdio>

#include "wit/base/cli_base.h"
#include "wit/base/io.h"

namespace wit {

std::string human_bytes(double b) {
  const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (b >= 1024 && i < 4) {
    b /= 1024;
    i++;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, i ? "%.2f %s" : "%.0f %s", b, u[i]);
  return buf;
}

Progress::Progress(std::string label, uint64_t total, std::string unit, bool quiet)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), quiet_(quiet),
      tty_(is_terminal_stderr()), start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { finish(); }

namespace {
std::string amount(double v, const std::string& unit) {
  if (unit == "B") return human_bytes(v);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.0f %s", v, unit.c_str());
  return buf;
}
}  // namespace

void Progress::add(uint64_t delta) {
  done_ += delta;
  if (quiet_ || !tty_) return;
  int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now() - start_).count();
  int64_t last = last_draw_ns_.load();
  if (now - last < 100000000) return;
  if (!last_draw_ns_.compare_exchange_strong(last, now)) return;
  draw();
}

void Progress::draw() {
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double done = double(done_.load());
  double rate = secs > 0 ? done / secs : 0;
  std::string line = cli::tool_name() + ": " + label_ + " ";
  if (total_) {
    int width = 24, fill = int(width * std::min(1.0, done / double(total_)));
    line += "[" + std::string(size_t(fill), '#') + std::string(size_t(width - fill), '.') + "] ";
    line += amount(done, unit_) + "/" + amount(double(total_), unit_);
    char eta[32];
    std::snprintf(eta, sizeof eta, " eta %.0fs", rate > 0 ? (double(total_) - done) / rate : 0.0);
    line += " " + amount(rate, unit_) + "/s" + eta;
  } else {
    char t[32];
    std::snprintf(t, sizeof t, " in %.2fs", secs);
    line += amount(done, unit_) + t + " (" + amount(rate, unit_) + "/s)";
  }
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (!quiet_ && tty_) std::fputs("\r\033[K", stderr);  // the tool prints its own summary line
}

}  // namespace wit
