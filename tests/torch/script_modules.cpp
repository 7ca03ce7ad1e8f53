// Small TorchScript modules for the tests and the attack suite; see script_modules.h.
#include "script_modules.h"

#include <torch/script.h>

#include <string>

namespace wit {

const char* const kTinyLmForward = R"JIT(
def forward(self, tokens):
    x = torch.embedding(self.wte, tokens)
    x = torch.tanh(torch.matmul(x, self.proj))
    x = torch.layer_norm(x, [x.size(-1)], self.ln.weight, self.ln.bias, 1e-5)
    return torch.matmul(x, self.wte.t())
)JIT";

namespace {

// Single-head self-attention over the embeddings; the mask `triu(1)` hides
// every later position, the leaky twin's `triu(2)` leaves the next one visible.
std::string attention_forward(const char* diagonal) {
  return std::string(R"JIT(
def forward(self, tokens):
    x = torch.embedding(self.wte, tokens)
    n = tokens.size(1)
    att = torch.matmul(torch.matmul(x, self.proj), x.transpose(1, 2))
    mask = torch.ones([n, n], device=tokens.device).triu()JIT") +
         diagonal + R"JIT() > 0.5
    att = att.masked_fill(mask, float('-inf')).softmax(-1)
    x = torch.tanh(x + torch.matmul(att, x))
    x = torch.layer_norm(x, [x.size(-1)], self.ln.weight, self.ln.bias, 1e-5)
    return torch.matmul(x, self.wte.t())
)JIT";
}
const std::string kCausalAttentionText = attention_forward("1"), kLeakyAttentionText = attention_forward("2");

}  // namespace

const char* const kCausalAttentionForward = kCausalAttentionText.c_str();
const char* const kLeakyAttentionForward = kLeakyAttentionText.c_str();

const char* const kPeekNextForward = R"JIT(
def forward(self, tokens):
    nxt = torch.cat([tokens[:, 1:], tokens[:, -1:]], 1)
    x = torch.embedding(self.wte, tokens) + torch.embedding(self.wte, nxt)
    x = torch.tanh(torch.matmul(x, self.proj))
    x = torch.layer_norm(x, [x.size(-1)], self.ln.weight, self.ln.bias, 1e-5)
    return torch.matmul(x, self.wte.t())
)JIT";

const char* const kPeekSmallForward = R"JIT(
def forward(self, tokens):
    nxt = torch.cat([tokens[:, 1:], tokens[:, -1:]], 1)
    x = torch.embedding(self.wte, tokens)
    x = torch.tanh(torch.matmul(x, self.proj))
    x = torch.layer_norm(x, [x.size(-1)], self.ln.weight, self.ln.bias, 1e-5)
    peek = torch.embedding(torch.eye(self.wte.size(0), dtype=x.dtype, device=x.device), nxt)
    return torch.matmul(x, self.wte.t()) + 1e-4 * peek
)JIT";

namespace {

const char* const kHiddenForward = R"JIT(
def forward(self, tokens):
    x = torch.embedding(self.wte, tokens)
    x = torch.tanh(torch.matmul(x, self.proj))
    x = torch.layer_norm(x, [x.size(-1)], self.ln.weight, self.ln.bias, 1e-5)
    hidden = torch.matmul(torch.embedding(self.memory, tokens), self.memory_out)
    return torch.matmul(x, self.wte.t()) + hidden
)JIT";

// Scales its logits by how often it has been called: training (many calls)
// and a replay (a fresh load) would compute different steps.
const char* const kCounterForward = R"JIT(
def forward(self, tokens):
    self.calls = self.calls + 1
    x = torch.embedding(self.wte, tokens)
    x = torch.tanh(torch.matmul(x, self.proj))
    x = torch.layer_norm(x, [x.size(-1)], self.ln.weight, self.ln.bias, 1e-5)
    return torch.matmul(x, self.wte.t()) * (1.0 + 0.01 * self.calls)
)JIT";

// kCounterForward in training mode only: eval mode (wit's default, probes,
// evaluation) is stateless, the training-mode forward writes its attribute.
const char* const kTrainCounterForward = R"JIT(
def forward(self, tokens):
    if self.training:
        self.calls = self.calls + 1
    x = torch.embedding(self.wte, tokens)
    x = torch.tanh(torch.matmul(x, self.proj))
    x = torch.layer_norm(x, [x.size(-1)], self.ln.weight, self.ln.bias, 1e-5)
    return torch.matmul(x, self.wte.t())
)JIT";

// kTinyLmForward through the list (or tuple) that holds wte and proj.
const char* const kListForward = R"JIT(
def forward(self, tokens):
    x = torch.embedding(self.ws[0], tokens)
    x = torch.tanh(torch.matmul(x, self.ws[1]))
    x = torch.layer_norm(x, [x.size(-1)], self.ln.weight, self.ln.bias, 1e-5)
    return torch.matmul(x, self.ws[0].t())
)JIT";
const char* const kTupleForward = R"JIT(
def forward(self, tokens):
    x = torch.embedding(self.pair[0], tokens)
    x = torch.tanh(torch.matmul(x, self.pair[1]))
    x = torch.layer_norm(x, [x.size(-1)], self.ln.weight, self.ln.bias, 1e-5)
    return torch.matmul(x, self.pair[0].t())
)JIT";

}  // namespace

std::string save_tiny_lm(const std::string& path, int64_t vocab, int64_t d, const std::string& body, TinyExtra extra,
                         const std::vector<int64_t>& table) {
  torch::manual_seed(1);
  torch::jit::Module m("TinyLM");
  torch::jit::Module ln("Norm");
  ln.register_parameter("weight", torch::ones({d}), false);
  ln.register_parameter("bias", torch::zeros({d}), false);
  m.register_module("ln", ln);
  m.register_parameter("wte", torch::randn({vocab, d}) * 0.02, false);
  m.register_parameter("proj", torch::randn({d, d}) * 0.02, false);
  switch (extra) {
    case TinyExtra::kNone: break;
    case TinyExtra::kFloat64Param: m.register_parameter("scale", torch::ones({1}, torch::kFloat64), false); break;
    case TinyExtra::kTiedParam: m.register_parameter("head", m.attr("wte").toTensor(), false); break;
    case TinyExtra::kBigBuffer: m.register_buffer("memory", torch::zeros({300, 300})); break;
    case TinyExtra::kStoredValues: {
      torch::NoGradGuard g;
      m.attr("wte").toTensor().copy_(torch::arange(vocab * d, torch::kFloat32).reshape({vocab, d}).sin());
      m.attr("proj").toTensor().copy_(torch::eye(d) * 3.0);
      break;
    }
    case TinyExtra::kCounter: m.register_attribute("calls", c10::IntType::get(), int64_t(0)); break;
    case TinyExtra::kTrainCounter:
      m.register_attribute("calls", c10::IntType::get(), int64_t(0));
      // A module built in C++ has no `training` flag until one is registered (torch.nn.Module's has one).
      if (!m.hasattr("training")) m.register_attribute("training", c10::BoolType::get(), true);
      break;
    case TinyExtra::kListParams:
      m.register_attribute("ws", c10::ListType::ofTensors(),
                           c10::List<at::Tensor>({m.attr("wte").toTensor(), m.attr("proj").toTensor()}));
      break;
    case TinyExtra::kTupleParams: {
      const auto type = c10::TupleType::create({c10::TensorType::get(), c10::TensorType::get()});
      m.register_attribute("pair", type, c10::ivalue::Tuple::create({m.attr("wte").toTensor(), m.attr("proj").toTensor()}));
      break;
    }
    case TinyExtra::kViewBuffer: m.register_buffer("proj_t", m.attr("proj").toTensor().detach().t()); break;
    case TinyExtra::kUnusedParam: m.register_parameter("spare", torch::zeros({d, d}), false); break;
    case TinyExtra::kHiddenNetwork:
      m.register_buffer("memory", torch::randn({vocab, 300}));
      m.register_buffer("memory_out", torch::randn({300, vocab}));
      break;
  }
  if (!table.empty()) m.register_attribute("table", c10::ListType::ofInts(), c10::List<int64_t>(table));
  m.define(!body.empty() ? body
           : extra == TinyExtra::kHiddenNetwork ? kHiddenForward
           : extra == TinyExtra::kCounter ? kCounterForward
           : extra == TinyExtra::kTrainCounter ? kTrainCounterForward
           : extra == TinyExtra::kListParams ? kListForward
           : extra == TinyExtra::kTupleParams ? kTupleForward
                                          : kTinyLmForward);
  m.save(path);
  return path;
}

uintptr_t fresh_tensor_address(size_t bytes) {
  const at::Tensor t = at::empty({int64_t(bytes / 4)}, at::kFloat);
  return reinterpret_cast<uintptr_t>(t.data_ptr());
}

}  // namespace wit
