// Running a user-supplied command (`/bin/sh -c CMD`): its stdin fed from a
// string, its stdout collected, a deadline after which its process group is
// killed. The probe check talks to a black-box model through it.
#pragma once
#include <cstdint>
#include <string>

namespace wit {

struct CommandResult {
  bool timed_out = false;
  int exit_code = -1;     // the exit status, or -1 when killed by a signal
  int signal = 0;         // the signal that ended it, or 0
  std::string out;        // everything it wrote to stdout (up to max_out bytes)
  bool out_truncated = false;
};
// Throws wit::Error only when the command cannot be started at all.
CommandResult run_command(const std::string& cmd, const std::string& input, double timeout_s,
                          uint64_t max_out = uint64_t(1) << 30);

}  // namespace wit
