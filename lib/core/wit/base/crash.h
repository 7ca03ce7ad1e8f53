// Crash points for the crash-safety tests: with WIT_CRASH_AT="NAME:N" in the
// environment, the N-th time the process passes crash_point("NAME") it kills
// itself with SIGKILL, as kill -9 or a power cut would, in the middle of the
// write the point sits in. WIT_CRASH_AT="NAME:N:TERM" (or INT) sends that
// signal instead, to test what a catchable signal at that exact point leaves.
// Without the variable a crash point costs one branch.
#pragma once
#include <cstddef>

namespace wit {

void crash_point(const char* name);

// Writes all of buf to fd, passing crash_point(name) halfway through.
// Returns false with errno set on a write error.
bool write_all(int fd, const void* buf, size_t n, const char* crash_name);

}  // namespace wit
