// Fuzz target for the model command's format (docs/release.md, "The model
// command"): requests (what wit-sketch serve reads) and answers (what the
// probe check reads from a black-box model). Every input is rejected with a
// wit::Error or accepted; accepted requests survive model_requests() and a
// re-parse unchanged; accepted answers have exactly the lengths asked for,
// finite values <= 0, and survive model_answer() and a re-parse; an accepted
// probe-check report or model binding (wit-sketch match --json) survives
// to_json() and a re-parse unchanged. Verdict letters (outcome.h): requests,
// answers, then (JSON inputs only, else j) binding and probe-check report.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "wit/base/error.h"
#include "wit/eval/release.h"
#include "outcome.h"

#include <nlohmann/json.hpp>

namespace {

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "fuzz_model_io: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const std::vector<std::string> r = wit::parse_model_requests(text, "fuzz");
    if (wit::parse_model_requests(wit::model_requests(r), "fuzz (re-parse)") != r)
      broken("accepted requests change in a round trip");
    wit_fuzz::note('a');
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
  }
  // Answers: an input "#DIGITS\n..." asks for texts of those lengths (one
  // digit each) and gives the rest as the answers; any other input is
  // parsed as answers for two texts of 0 and 2 bytes.
  std::vector<size_t> lengths{0, 2};
  std::string_view answers = text;
  if (!text.empty() && text[0] == '#') {
    lengths.clear();
    size_t i = 1;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9' && lengths.size() < 8; i++)
      lengths.push_back(size_t(text[i] - '0'));
    const size_t nl = text.find('\n');
    answers = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  try {
    const auto a = wit::parse_model_answers(answers, lengths, "fuzz");
    if (a.size() != lengths.size()) broken("accepted answers of another count");
    std::string again;
    for (size_t i = 0; i < a.size(); i++) {
      if (a[i].size() != lengths[i] + 1) broken("accepted an answer of the wrong length");
      for (double d : a[i])
        if (!std::isfinite(d) || d > 0) broken("accepted a log-probability that is not finite and <= 0");
      // float answers (as serve writes them) re-parse to the same floats
      std::vector<float> f(a[i].begin(), a[i].end());
      again += wit::model_answer(i, f);
    }
    const auto b = wit::parse_model_answers(again, lengths, "fuzz (re-parse)");
    for (size_t i = 0; i < a.size(); i++)
      for (size_t j = 0; j < a[i].size(); j++)
        if (float(b[i][j]) != float(a[i][j])) broken("a float answer changes in a round trip");
    wit_fuzz::note('a');
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_discarded()) {
    try {
      const wit::ReleaseBinding b = wit::ReleaseBinding::from_json(j, "fuzz");
      if (b.match != (wit::join_state_root(b.params_root, b.optim_root) == b.state_root))
        broken("accepted a binding whose verdict its roots do not give");
      if (wit::ReleaseBinding::from_json(b.to_json(), "fuzz").to_json() != b.to_json())
        broken("an accepted binding changes in a round trip");
      wit_fuzz::note('a');
    } catch (const wit::Error&) {
      wit_fuzz::note('r');
    }
    try {
      const wit::ProbeCheckReport r = wit::ProbeCheckReport::from_json(j, "fuzz");
      if (r.to_json() != j) broken("an accepted probe check is not its own to_json");
      if (wit::ProbeCheckReport::from_json(nlohmann::json::parse(r.to_json().dump()), "fuzz").to_json() != j)
        broken("an accepted probe check changes in a round trip");
      wit_fuzz::note('a');
    } catch (const wit::Error&) {
      wit_fuzz::note('r');
    }
  } else {
    wit_fuzz::note('j');
  }
  return 0;
}
