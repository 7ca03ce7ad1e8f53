// Private to wit_torch: a loaded TorchScript model whose parameter slots are
// filled with a TrainState's tensors before every forward (LibTorch types;
// never include from a public header).
#pragma once
#include <torch/script.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "wit/run/model_spec.h"

namespace wit {

struct ScriptModel {
  std::string path;
  bool train = false;  // training mode (module.train()), else eval
  torch::jit::Module module;
  // Per parameter, in name order: the submodule that owns the slot and the attribute name.
  std::vector<std::pair<torch::jit::Module, std::string>> slots;
  // Lists that hold a parameter itself (nn.GRU's and nn.LSTM's _flat_weights,
  // a module's List[Tensor] of its parameters): element `index` of `list` is
  // parameter `param`, refreshed with the slot's tensor before every forward.
  struct ListSlot {
    c10::impl::GenericList list;
    size_t index, param;
  };
  std::vector<ListSlot> lists;
  // A digest of every attribute that is not a parameter (buffers, counters,
  // flags), taken at load: forward must leave it unchanged.
  Hash32 attrs;
  std::vector<std::string> param_names;  // sorted
};

// The run's module for `device`, loaded once per process and checked against
// `c` (digest, parameters, buffers); see check_model in wit/model/script.h. In eval
// mode, or with `train` in training mode (a run's "train_mode": its dropout
// draws from the generator the step seeds); each mode is its own copy.
std::shared_ptr<ScriptModel> load_script_model(const ModelConfig& c, torch::Device device, bool train = false);

// Puts `params` (name order) in the module's parameter slots and the lists
// that hold its parameters.
void fill_params(ScriptModel& m, const std::vector<torch::Tensor>& params);

// Logits of the module's forward with `params` (name order) in its parameter slots.
torch::Tensor script_forward(ScriptModel& m, const std::vector<torch::Tensor>& params, const torch::Tensor& idx);

}  // namespace wit
