// Attack 14 of docs/design.md: a trained network passed off as a TorchScript
// "architecture". The module files the attack suite trains with
// (tests/attacks/model_attacks.sh), built in C++ so the suite needs no Python.
#include "model_forge.h"

#include "script_modules.h"
#include "wit/error.h"

namespace wit {

void forge_model_file(const std::string& kind, const std::string& out, int64_t vocab, int64_t d) {
  if (kind == "plain") {
    save_tiny_lm(out, vocab, d);
  } else if (kind == "stored") {  // the same code; "pretrained" values stored in the file
    save_tiny_lm(out, vocab, d, "", TinyExtra::kStoredValues);
  } else if (kind == "hidden") {  // a network hidden in buffers, added to the logits
    save_tiny_lm(out, vocab, d, "", TinyExtra::kHiddenNetwork);
  } else if (kind == "swapped") {  // the same parameters, other code: what a forger would replay with
    save_tiny_lm(out, vocab, d, R"JIT(
def forward(self, tokens):
    x = torch.embedding(self.wte, tokens)
    x = torch.layer_norm(x, [x.size(-1)], self.ln.weight, self.ln.bias, 1e-5)
    return torch.matmul(torch.relu(torch.matmul(x, self.proj)), self.wte.t())
)JIT");
  } else {
    throw Error("unknown model kind '" + kind + "' (plain, stored, hidden, swapped)", "wit-forge model");
  }
}

}  // namespace wit
