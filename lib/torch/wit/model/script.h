// TorchScript models (docs/model.md): what `wit-train --model FILE` binds,
// and the check that a module keeps wit's contract. Torch-free header.
#pragma once
#include <string>

#include "wit/run/model_spec.h"

namespace wit {

// The module in `path` as a run binds it: arch torchscript, the file's
// digest, its parameters and its other tensors (buffers, tensor attributes
// and constants), sorted by name, the default init and decay rules, and
// module_path = path. Throws wit::Error naming the file when it is not a
// TorchScript module, its forward is not forward(self, tokens: Tensor) ->
// Tensor, a parameter is not float32, two parameters share storage, or its
// other tensors are too large (tensors_problem).
ModelConfig describe_module(const std::string& path);

// Loads the run's module (c.module_path) for `device` and checks it against
// the config: the same digest (another file is refused, naming both
// digests), parameters and buffers, and a trial forward on a [2, L] batch
// that must give float32 logits [2, L, vocab]. With `train_mode` (the run's
// "train_mode") also a trial forward of the training-mode copy the step runs,
// which must leave the module's own state unchanged (BatchNorm's running
// statistics, a counter). What wit-train does before it writes anything;
// every later use loads through the same cache.
void check_model(const ModelConfig& c, const std::string& device = "cpu", bool train_mode = false);

// What `wit-train --describe` prints: per parameter of the model a run with
// this config (and module, and data when given) would train, its shape, init
// and weight decay and the rules they come from. Checks what wit-train checks
// before it writes anything (the config, the module's contract, a rule for
// every parameter) and writes nothing. Without data, the records are bytes.
std::string describe_training(const std::string& config_path, const std::string& model_path,
                              const std::string& commit_path, const std::string& device = "cpu");

}  // namespace wit
