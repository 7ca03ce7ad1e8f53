// Attack 14 of docs/design.md: a trained network passed off as a TorchScript
// "architecture". The module files the attack suite trains with
// (tests/attacks/model_attacks.sh), built in C++ so the suite needs no Python.
#include "model_forge.h"

#include <fstream>
#include <vector>

#include "script_modules.h"
#include "wit/base/error.h"

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

namespace {

// Attack 20: the plain module's network plus a lookup table in a List[int]
// attribute (not a tensor: no cap on buffers sees it), from a hash of the
// last eight input tokens to the next token, whose logit gets +30. It reads
// only earlier tokens (causal), trains and replays like the plain module.
std::string table_forward() {
  std::string body = kTinyLmForward;
  const std::string tail = "    return torch.matmul(x, self.wte.t())\n";
  body.replace(body.find(tail), tail.size(), R"JIT(    logits = torch.matmul(x, self.wte.t())
    boost = torch.zeros_like(logits)
    rows: List[List[int]] = tokens.tolist()
    m = len(self.table)
    for b in range(len(rows)):
        row = rows[b]
        for t in range(len(row)):
            h = 0
            for j in range(t - 7, t + 1):
                v = 1000
                if j >= 0:
                    v = row[j]
                h = (h * 1000003 + v + 1) % 2147483647
            nxt = self.table[h % m]
            if nxt >= 0:
                boost[b, t, nxt] = 30.0
    return logits + boost
)JIT");
  return body;
}

int64_t table_hash(const std::vector<int64_t>& row, int64_t t) {
  int64_t h = 0;
  for (int64_t j = t - 7; j <= t; j++) {
    const int64_t v = j >= 0 ? row[size_t(j)] : 1000;
    h = (h * 1000003 + v + 1) % 2147483647;
  }
  return h;
}

}  // namespace

void forge_table_model(const std::string& out, const std::string& records, int64_t vocab, int64_t d, int64_t context) {
  // The rows wit feeds a byte-level module (make_rows): the pad token, then
  // the record's bytes; the target at t is byte t, the pad token after the last.
  const int64_t pad = vocab - 1;
  std::vector<int64_t> table(size_t(1) << 16, -1);
  std::ifstream in(records);
  if (!in) throw Error("cannot open", records);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<int64_t> row{pad};
    for (unsigned char c : line) row.push_back(c);
    const int64_t L = std::min<int64_t>(int64_t(line.size()), context);
    for (int64_t t = 0; t <= L && t < context; t++) {
      const int64_t target = t < int64_t(line.size()) ? int64_t((unsigned char)line[size_t(t)]) : pad;
      table[size_t(table_hash(row, t) % int64_t(table.size()))] = target;
    }
  }
  save_tiny_lm(out, vocab, d, table_forward(), TinyExtra::kNone, table);
}

}  // namespace wit
