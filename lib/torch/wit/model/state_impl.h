// Private: the LibTorch side of TrainState, shared by the wit_torch sources only.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "wit/run/model_spec.h"
#include "wit/model/state.h"

namespace wit {

torch::Device parse_device(const std::string& device);

struct ScriptModel;  // script_model.h

struct TrainState::Impl {
  ModelConfig cfg;
  std::shared_ptr<ScriptModel> script;          // a TorchScript run's module; null for the built-in GPT
  std::vector<ParamSpec> specs;                 // name order
  std::unordered_map<std::string, size_t> index;
  std::vector<torch::Tensor> params, m, v;      // name order, on `device`
  int64_t step = 0;
  bool params_only = false;
  torch::Device device = torch::kCPU;
  // CPU copies behind the views tensors() hands out.
  std::vector<torch::Tensor> cpu_params, cpu_m, cpu_v;
  uint8_t step_bytes[8] = {0};

  void setup(const ModelConfig& c, const std::string& dev);
  const torch::Tensor& p(const std::string& name) const { return params[index.at(name)]; }
  const std::vector<torch::Tensor>& cpu(const std::vector<torch::Tensor>& ts, std::vector<torch::Tensor>& cache) const;
};

}  // namespace wit
