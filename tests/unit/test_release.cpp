// The exact binding of a released file, the probe check's draw, the model
// command's format and the report's verdict (docs/release.md).
#include <catch2/catch.hpp>

#include <cmath>

#include "wit/cmd/command.h"
#include "wit/base/error.h"
#include "wit/eval/release.h"

using namespace wit;

namespace {

TensorView view(const std::string& name, const std::vector<float>& v) {
  return {name, DType::kF32, {int64_t(v.size())}, ByteView(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4)};
}

}  // namespace

TEST_CASE("release: a params-only file binds exactly through P and the final O", "[release]") {
  const std::vector<float> a{1, 2, 3}, b{4, 5}, ma{0.1f, 0.2f, 0.3f}, mb{0.4f, 0.5f}, step{0, 0};
  const std::vector<TensorView> state{view("a", a), view("b", b), view("adam.m.a", ma), view("adam.m.b", mb),
                                      {"wit.step", DType::kI64, {1}, ByteView(reinterpret_cast<const uint8_t*>(step.data()), 8)}};
  const StateRoot sr = state_root_parts(state);
  const LoggedFinal fin{7, sr.root};
  const NamedLeaves final_params = tensor_leaves({state[0], state[1]});

  // The parameters alone (any order), and the full state: both match.
  ReleaseBinding r = bind_release({view("b", b), view("a", a)}, fin, sr.optim, &final_params);
  CHECK(r.match);
  CHECK(r.params_root == sr.params);
  CHECK(r.reason.empty());
  CHECK(bind_release(state, fin, sr.optim, nullptr).match);

  // One changed value: no match, that tensor named; without the leaves, the root.
  const std::vector<float> b2{4, 5.0000005f};
  r = bind_release({view("a", a), view("b", b2)}, fin, sr.optim, &final_params);
  CHECK_FALSE(r.match);
  CHECK(r.reason == "tensor 'b' is not the final state's (step 7)");
  r = bind_release({view("a", a), view("b", b2)}, fin, sr.optim, nullptr);
  CHECK_FALSE(r.match);
  CHECK(r.reason.find("is not the state root the log has at its final step") != std::string::npos);
  // The right parameters with a wrong optimizer root do not join either.
  CHECK_FALSE(bind_release({view("a", a), view("b", b)}, fin, sr.params, nullptr).match);
  CHECK(r.to_json()["optim_root"] == sr.optim.hex());

  // The board's side: a binding read back, checked against the final entry.
  const ReleaseBinding ok = bind_release({view("a", a), view("b", b)}, fin, sr.optim, nullptr);
  const ReleaseBinding back = ReleaseBinding::from_json(ok.to_json(), "t");
  CHECK(back.params_root == ok.params_root);
  CHECK(binding_problem(back, fin) == std::nullopt);
  CHECK(binding_problem(back, LoggedFinal{8, sr.root}) == Problem("the binding is not to the run's final state"));
  CHECK(binding_problem(ReleaseBinding::from_json(r.to_json(), "t"), fin) == Problem(r.reason));
  nlohmann::json forged = r.to_json();
  forged["match"] = true, forged["reason"] = "";
  CHECK_THROWS_WITH(ReleaseBinding::from_json(forged, "t"), Catch::Contains("match is not whether"));
}

TEST_CASE("release: the nonce's draw is fixed, in range, and changes with the nonce", "[release]") {
  Hash32 run, n1, n2;
  run.b.fill(1), n1.b.fill(2), n2.b.fill(3);
  const ProbeDraw d = draw_probe_inputs(run, n1, 10, 20, 5, 47);
  REQUIRE(d.indices.size() == 20);
  REQUIRE(d.random_texts.size() == 5);
  for (uint64_t i : d.indices) CHECK(i < 10);
  for (const auto& t : d.random_texts) CHECK((t.size() >= 1 && t.size() <= 47));
  const ProbeDraw again = draw_probe_inputs(run, n1, 10, 20, 5, 47);
  CHECK(again.indices == d.indices);
  CHECK(again.random_texts == d.random_texts);
  const ProbeDraw other = draw_probe_inputs(run, n2, 10, 20, 5, 47);
  CHECK((other.indices != d.indices || other.random_texts != d.random_texts));
  CHECK_THROWS_AS(draw_probe_inputs(run, n1, 10, 0, 0, 47), Error);
  CHECK_THROWS_AS(draw_probe_inputs(run, n1, 10, kMaxProbeInputs, 1, 47), Error);
}

TEST_CASE("release: model command requests and answers", "[release]") {
  const std::vector<std::string> texts{"hi", std::string("\0\xff", 2), "x"};
  CHECK(parse_model_requests(model_requests(texts), "t") == texts);
  const std::vector<size_t> len{2, 0};
  const std::string ok = "{\"id\":1,\"logp\":[-0.5]}\n\n{\"id\":0,\"logp\":[-1,-2,-0.25]}\n";
  const auto a = parse_model_answers(ok, len, "t");
  CHECK(a[0] == std::vector<double>{-1, -2, -0.25});
  CHECK(a[1] == std::vector<double>{-0.5});
  auto bad = [&](const std::string& text, const std::string& why) {
    try {
      parse_model_answers(text, len, "out");
      FAIL("accepted: " << text);
    } catch (const Error& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains(why));
    }
  };
  bad("{\"id\":0,\"logp\":[-1,-2,-3]}\n", "no answer for id 1");
  bad("{\"id\":0,\"logp\":[-1,-2]}\n", "has 2 log-probabilities, expected 3");
  bad("{\"id\":1,\"logp\":[-1]}\n{\"id\":1,\"logp\":[-1]}\n", "repeats id 1");
  bad("{\"id\":2,\"logp\":[-1]}\n", "not one of the requests'");
  bad("{\"id\":1,\"logp\":[0.5]}\n", "not finite and <= 0");
  bad("{\"id\":1,\"logp\":[\"a\"]}\n", "not a number");
  bad("[1]\n", "not a JSON object");
  bad("{\"logp\":[-1]}\n", "no unsigned \"id\"");
  CHECK_THROWS_AS(parse_model_requests("{\"id\":1,\"text_hex\":\"00\"}\n", "in"), Error);
  CHECK_THROWS_AS(parse_model_requests("{\"id\":0,\"text_hex\":\"0\"}\n", "in"), Error);
}

TEST_CASE("release: the probe check's verdict and guarantee", "[release]") {
  ProbeCheckReport r;
  r.records = 3, r.random = 1, r.tolerance = 1e-3, r.fraction = 0.5, r.step = 9;
  r.worst = {0, 1e-4, 1e-3, 0};
  CHECK(r.pass());
  CHECK(r.first_failure() == -1);
  CHECK_THAT(r.guarantee(), Catch::Contains("fails these 4 fresh probes with probability at least 93.75%"));
  r.worst[2] = 2e-3;
  CHECK_FALSE(r.pass());
  CHECK(r.first_failure() == 2);
  CHECK(r.to_json()["failures"] == 1);
  CHECK(r.to_json()["verdict"] == "no match");
  r.worst[1] = NAN;  // a NaN never passes
  CHECK(r.first_failure() == 1);
  CHECK(max_abs_difference({-1, -2}, {-1.5f, -2.0f}) == Approx(0.5));
  CHECK(std::isinf(max_abs_difference({-1}, {-1.0f, -2.0f})));

  // The report's JSON form: a round trip, and derived fields that must agree.
  r.worst = {0, 1e-4, 2e-3, 0};
  r.floor = 1e-3, r.margin = 10, r.noise = 0;
  const nlohmann::json j = r.to_json();
  CHECK(ProbeCheckReport::from_json(j, "t").to_json() == j);
  nlohmann::json edited = j;
  edited["verdict"] = "match";
  CHECK_THROWS_WITH(ProbeCheckReport::from_json(edited, "t"), Catch::Contains("'verdict' is not what the differences give"));
  edited = j;
  edited["tolerance"] = 1.0;
  CHECK_THROWS_WITH(ProbeCheckReport::from_json(edited, "t"), Catch::Contains("max(floor, margin x noise)"));
}

TEST_CASE("release: the model command runner", "[release]") {
  CommandResult r = run_command("tr a-z A-Z", "hello\n", 10);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "HELLO\n");
  r = run_command("exit 3", "", 10);
  CHECK(r.exit_code == 3);
  r = run_command("sleep 5", "", 0.2);
  CHECK(r.timed_out);
  // A command that ignores its input still ends; a large input does not block.
  r = run_command("true", std::string(1 << 20, 'x'), 10);
  CHECK(r.exit_code == 0);
}
