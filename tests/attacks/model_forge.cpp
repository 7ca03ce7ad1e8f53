// Attack 14 of docs/design.md: a trained network passed off as a TorchScript
// "architecture". Builds the module files the attack suite trains with
// (tests/attacks/model_attacks.sh), in C++ so the suite needs no Python.
#include "model_forge.h"

#include <torch/script.h>

#include "wit/error.h"

namespace wit {

namespace {

const char* kPlainForward = R"JIT(
def forward(self, tokens):
    x = torch.embedding(self.wte, tokens)
    x = torch.tanh(torch.matmul(x, self.proj))
    x = torch.layer_norm(x, [x.size(-1)], self.ln.weight, self.ln.bias, 1e-5)
    return torch.matmul(x, self.wte.t())
)JIT";

torch::jit::Module base(int64_t vocab, int64_t d) {
  torch::manual_seed(1);
  torch::jit::Module m("ForgedLM");
  torch::jit::Module ln("Norm");
  ln.register_parameter("weight", torch::ones({d}), false);
  ln.register_parameter("bias", torch::zeros({d}), false);
  m.register_module("ln", ln);
  m.register_parameter("wte", torch::randn({vocab, d}) * 0.02, false);
  m.register_parameter("proj", torch::randn({d, d}) * 0.02, false);
  return m;
}

}  // namespace

void forge_model_file(const std::string& kind, const std::string& out, int64_t vocab, int64_t d) {
  torch::jit::Module m = base(vocab, d);
  if (kind == "plain") {
    m.define(kPlainForward);
  } else if (kind == "stored") {
    // The same code; the file's values are "pretrained" ones (a fixed,
    // structured pattern standing in for someone else's trained weights).
    m.define(kPlainForward);
    torch::NoGradGuard g;
    m.attr("wte").toTensor().copy_(torch::arange(vocab * d, torch::kFloat32).reshape({vocab, d}).sin());
    m.attr("proj").toTensor().copy_(torch::eye(d) * 3.0);
  } else if (kind == "hidden") {
    // A network hidden in a buffer, added to what the parameters compute.
    m.register_buffer("memory", torch::randn({vocab, 300}));
    m.register_buffer("memory_out", torch::randn({300, vocab}));
    m.define(R"JIT(
def forward(self, tokens):
    x = torch.embedding(self.wte, tokens)
    x = torch.tanh(torch.matmul(x, self.proj))
    x = torch.layer_norm(x, [x.size(-1)], self.ln.weight, self.ln.bias, 1e-5)
    hidden = torch.matmul(torch.embedding(self.memory, tokens), self.memory_out)
    return torch.matmul(x, self.wte.t()) + hidden
)JIT");
  } else if (kind == "swapped") {
    // The same parameters, other code: what a forger would replay with.
    m.define(R"JIT(
def forward(self, tokens):
    x = torch.embedding(self.wte, tokens)
    x = torch.layer_norm(x, [x.size(-1)], self.ln.weight, self.ln.bias, 1e-5)
    return torch.matmul(torch.relu(torch.matmul(x, self.proj)), self.wte.t())
)JIT");
  } else {
    throw Error("unknown model kind '" + kind + "' (plain, stored, hidden, swapped)", "wit-forge model");
  }
  m.save(out);
}

}  // namespace wit
