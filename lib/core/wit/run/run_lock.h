// The one lock of a run directory, RUN/train.lock: wit-train holds it for the
// whole run and every other writer of the run (wit-log sign) while it
// writes, so no two processes ever write one run (docs: man wit-train(1)).
#pragma once
#include <string>

#include "wit/base/io.h"

namespace wit {

inline constexpr const char* kRunLockFile = "train.lock";

// Does not wait: throws wit::Error("the run directory is in use by pid N on
// HOST", RUN/train.lock) while another process holds it. RUN must exist.
inline FileLock lock_run_dir(const std::string& run_dir) {
  return FileLock::try_hold(run_dir + "/" + kRunLockFile, "the run directory");
}

}  // namespace wit
