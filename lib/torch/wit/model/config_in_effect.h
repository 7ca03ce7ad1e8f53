// The configuration this process computes training steps under (run_config.h):
// LibTorch's thread count in effect, the ATen kernel set, the BLAS and its
// kernel, oneDNN's instruction set, the LibTorch version. Torch-free header;
// defined beside set_torch_threads (state.cpp). Kept apart from state.h so the
// many sources that include state.h do not depend on it.
#pragma once
#include <string>

#include "wit/run/run_config.h"

namespace wit {

// run_id is left empty for the caller.
RunConfig current_run_config(const std::string& device, int world);

}  // namespace wit
