// The one check of a --device value, made before a tool writes anything
// (wit-train, wit-eval): "cpu", or "cuda" / "cuda:N" where LibTorch has CUDA.
#pragma once
#include <string>

#include "wit/base/error.h"
#include "wit/model/state.h"

namespace wit {

inline void check_device(const std::string& device) {
  if (device == "cpu") return;
  if (device == "cuda" || device.rfind("cuda:", 0) == 0) {
    if (!cuda_available())
      throw Error("cuda requested but this LibTorch has no CUDA device", "--device " + device, "use --device cpu");
    return;
  }
  throw Error("unknown device '" + device + "'", "--device", "use cpu or cuda");
}

}  // namespace wit
