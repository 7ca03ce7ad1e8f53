// The typed replay report and calibration (report.h): what wit-replay writes
// is what the board reads back, field for field; every malformed variant is
// refused with a reason naming the field.
#include <catch2/catch.hpp>

#include <cmath>

#include "wit/base/error.h"
#include "wit/run/report.h"

using namespace wit;
using nlohmann::json;

namespace {

Hash32 filled(uint8_t b) {
  Hash32 h;
  for (auto& x : h.b) x = b;
  return h;
}

// A report as verify_response fills one: two step checks, one segment transition.
ReplayReport sample(bool certified = true) {
  ReplayReport r;
  r.run_id = filled(1);
  r.head_size = 41;
  r.head_root = filled(2);
  r.challenge_seed = filled(3);
  r.guarantee = make_guarantee(40, 2, 0.1);
  r.calibration.run_id = r.run_id.hex();
  r.calibration.threads = {1, 2};
  r.calibration.steps = {7, 12};
  for (const char* f : kReplayFields) r.calibration.noise[f] = 0.5;
  r.calibration.noise["weights"] = 3;
  r.margin = 10;
  for (int64_t s : {7, 12}) {
    ReportCheck k;
    k.step = s;
    k.pass = true;
    k.distances = {{"weights", 1e-7}, {"adam_m", INFINITY}, {"losses", 0}, {"sketch", 1e-9}};
    k.thresholds = {{"weights", 1e-6}, {"adam_m", 1e-4}, {"losses", 1e-6}, {"sketch", 1e-5}};
    k.worst_tensors["weights"] = {"blocks.0.attn.w", 2.5, 30};
    k.worst_tensors["adam_m"] = {"adam.m.head.b", INFINITY, 30};
    k.seconds = 0.25;
    r.checks.push_back(k);
  }
  ReportCheck g;
  g.kind = CheckKind::kSegment;
  g.step = 21;
  g.segment_from = 20;
  g.segment_to = 30;
  g.pass = certified;
  if (!certified) {
    g.failed = "weights";
    g.reason = "weights differs beyond the replay noise at step 21 (tensor head.w)";
    r.reason = g.reason;
  }
  r.checks.push_back(g);
  r.verdict = certified ? ReportVerdict::kCertified : ReportVerdict::kRejected;
  r.replay_seconds = 0.5;
  r.total_seconds = 1.5;
  return r;
}

std::string refusal(const json& j) {
  try {
    ReplayReport::from_json(j, "r.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("report: what is written is read back, field for field", "[report]") {
  for (bool certified : {true, false}) {
    const ReplayReport r = sample(certified);
    const json j = r.to_json();
    CHECK(j["format"] == "wit.report");
    CHECK(j["version"] == 3);
    CHECK(j["verdict"] == (certified ? "certified" : "rejected"));
    CHECK(j["checks"][0]["distances"]["adam_m"] == "inf");  // infinite distances as the string "inf"
    CHECK(j["checks"][2]["kind"] == "segment");
    CHECK(j["checks"][2]["segment"] == json{{"from", 20}, {"to", 30}});
    CHECK_FALSE(j["checks"][0].contains("segment"));
    CHECK(j["checks"][0]["failed"].is_null());
    CHECK(j["guarantee"]["words"] == r.guarantee.words());
    const ReplayReport back = ReplayReport::parse(j.dump(2), "r.json");
    CHECK(back.run_id == r.run_id);
    CHECK(back.head_size == 41);
    CHECK(back.head_root == r.head_root);
    CHECK(back.challenge_seed == r.challenge_seed);
    CHECK(back.certified() == certified);
    CHECK(back.reason == r.reason);
    CHECK(back.guarantee.detection == r.guarantee.detection);
    CHECK(back.calibration.noise == r.calibration.noise);
    CHECK(back.calibration.threads == r.calibration.threads);
    CHECK(back.margin == 10);
    REQUIRE(back.checks.size() == 3);
    for (size_t i = 0; i < 3; i++) CHECK(back.checks[i] == r.checks[i]);
    CHECK(std::isinf(back.checks[0].distances.at("adam_m")));
    CHECK(back.step_checks() == std::vector<int64_t>{7, 12});  // the segment transition is not a step check
    CHECK(back.to_json() == j);
  }
}

TEST_CASE("report: the mode, the configuration and the slack round-trip; a version-2 report reads as tolerant", "[report]") {
  ReplayReport r = sample();
  r.mode = "tolerant";
  r.configuration = json{{"threads", 2}, {"aten_cpu_capability", "avx2"}};
  r.checks[0].slack["weights"] = {"wte", 3.5, 420};
  const json j = r.to_json();
  CHECK(j["version"] == 3);
  CHECK(j["mode"] == "tolerant");
  const ReplayReport back = ReplayReport::from_json(json::parse(j.dump()), "r.json");
  CHECK(back.mode == "tolerant");
  CHECK(back.configuration == r.configuration);
  CHECK(back.checks[0] == r.checks[0]);
  CHECK(back.to_json() == j);
  ReplayReport e = sample();
  CHECK(ReplayReport::from_json(e.to_json(), "r.json").mode == "exact");  // the default
  json old = e.to_json();
  old["version"] = 2;
  old.erase("mode");
  old.erase("configuration");
  const ReplayReport v2 = ReplayReport::from_json(old, "r.json");
  CHECK(v2.mode == "tolerant");  // every verifier before modes was tolerant
  CHECK(v2.configuration.is_null());
}

TEST_CASE("report: malformed reports are refused, naming what is wrong", "[report]") {
  const json good = sample().to_json();
  auto with = [&](auto edit) {
    json j = good;
    edit(j);
    return refusal(j);
  };
  CHECK(refusal(good) == "accepted");
  CHECK(with([](json& j) { j["format"] = "wit.challenge"; }) == "not a replay report: r.json");
  CHECK(with([](json& j) { j["version"] = 1; }).rfind("unsupported report version 1 (this wit reads version 3", 0) == 0);
  CHECK(with([](json& j) { j["mode"] = "lenient"; }) == "invalid replay report: field 'mode' is not \"exact\" or \"tolerant\": r.json");
  CHECK(with([](json& j) { j.erase("mode"); }) == "invalid replay report: missing field 'mode': r.json");
  CHECK(with([](json& j) { j["configuration"] = 3; }) ==
        "invalid replay report: field 'configuration' is not an object or null: r.json");
  CHECK(with([](json& j) { j["checks"][0]["slack"] = json{{"weights", 1}}; }) ==
        "invalid replay report: slack.weights is not an object: r.json");
  CHECK(with([](json& j) { j.erase("run_id"); }) == "invalid replay report: missing field 'run_id': r.json");
  CHECK(with([](json& j) { j["head"]["root"] = "xyz"; }) == "invalid replay report: field 'root' is not 64 hex digits: r.json");
  CHECK(with([](json& j) { j["head"]["size"] = -1; }) ==
        "invalid replay report: field 'size' is not a non-negative integer: r.json");
  CHECK(with([](json& j) { j["verdict"] = "maybe"; }) ==
        "invalid replay report: field 'verdict' is not \"certified\" or \"rejected\": r.json");
  CHECK(with([](json& j) { j["checks"] = json::object(); }) == "invalid replay report: field 'checks' is not an array: r.json");
  CHECK(with([](json& j) { j["checks"][0]["step"] = "7"; }) == "invalid replay report: field 'step' is not an integer: r.json");
  CHECK(with([](json& j) { j["checks"][0]["kind"] = "batch"; }) ==
        "invalid replay report: a check's kind is not \"step\" or \"segment\": r.json");
  CHECK(with([](json& j) { j["checks"][2].erase("segment"); }) == "invalid replay report: missing field 'segment': r.json");
  CHECK(with([](json& j) { j["checks"][2]["segment"]["to"] = 20; }) ==
        "invalid replay report: a segment check's step is not within its segment: r.json");
  CHECK(with([](json& j) { j["checks"][1]["distances"]["weights"] = "big"; }) ==
        "invalid replay report: distances.weights is not a number: r.json");
  CHECK(with([](json& j) { j["checks"][1]["pass"] = "yes"; }) == "invalid replay report: field 'pass' is not a boolean: r.json");
  // Verdict and checks must agree.
  CHECK(with([](json& j) {
          j["checks"][1]["pass"] = false;
          j["checks"][1]["failed"] = "adam_v";
        }) == "invalid replay report: a certified report with a failed check (step 12): r.json");
  CHECK(with([](json& j) { j["checks"][1]["pass"] = false; }) == "invalid replay report: a failed check names no failed field: r.json");
  CHECK(with([](json& j) { j["checks"][1]["failed"] = "weights"; }) ==
        "invalid replay report: a passed check names a failed field: r.json");
  CHECK(with([](json& j) { j["verdict"] = "rejected"; }) == "invalid replay report: a rejected report gives no reason: r.json");
  CHECK(with([](json& j) { j["guarantee"]["k"] = 41; }).find("field 'guarantee' is not a guarantee") != std::string::npos);
  CHECK(with([](json& j) { j["calibration"]["version"] = 1; }).rfind("unsupported calibration version 1", 0) == 0);
  CHECK(with([](json& j) { j["calibration"]["run_id"] = std::string(63, 'a'); }) ==
        "invalid calibration: field 'run_id' is not 64 lowercase hex digits: r.json");
  CHECK(refusal(json::array()) == "not a replay report: r.json");
  CHECK_THROWS_WITH(ReplayReport::parse("{\"format\"", "r.json"), "not a replay report (not valid json): r.json");
}

TEST_CASE("report: the calibration file round-trips and refuses bad noise", "[report]") {
  const Calibration c = sample().calibration;
  const Calibration back = Calibration::from_json(json::parse(c.to_json().dump()), "c.json");
  CHECK(back.noise == c.noise);
  CHECK(back.steps == c.steps);
  CHECK(back.noise_of("weights") == 3);
  CHECK(Calibration{}.noise_of("weights") == 0);
  json j = c.to_json();
  j["noise"]["adam_v"] = -1;
  CHECK_THROWS_WITH(Calibration::from_json(j, "c.json"), "invalid calibration: noise.adam_v is not a non-negative number: c.json");
  j = c.to_json();
  j["threads"] = "two";
  CHECK_THROWS_WITH(Calibration::from_json(j, "c.json"), "invalid calibration: field 'threads' is not an array: c.json");
  j = c.to_json();
  j.erase("noise");
  CHECK_THROWS_WITH(Calibration::from_json(j, "c.json"), "invalid calibration: missing noise: c.json");
  CHECK_THROWS_WITH(Calibration::from_json(json{{"format", "wit.report"}}, "c.json"), "not a wit calibration: c.json");
}

TEST_CASE("report: verdicts and board statuses have one spelling each", "[report]") {
  CHECK(std::string(verdict_name(ReportVerdict::kCertified)) == "certified");
  CHECK(std::string(verdict_name(ReportVerdict::kRejected)) == "rejected");
  CHECK(std::string(status_name(BoardStatus::kCertified)) == "certified");
  CHECK(std::string(status_name(BoardStatus::kRejected)) == "rejected");
  CHECK(std::string(status_name(BoardStatus::kPending)) == "pending");
  CHECK(status_of(ReportVerdict::kRejected) == BoardStatus::kRejected);
  CHECK(parse_verdict("certified", "invalid x", "x.json") == ReportVerdict::kCertified);
  CHECK(parse_verdict("rejected", "invalid x", "x.json") == ReportVerdict::kRejected);
  // "pending" is a board status, never a report's verdict.
  CHECK_THROWS_WITH(parse_verdict("pending", "invalid x", "x.json"),
                    "invalid x: field 'verdict' is not \"certified\" or \"rejected\": x.json");
  CHECK_THROWS_WITH(parse_verdict("Certified", "invalid x", "x.json"),
                    "invalid x: field 'verdict' is not \"certified\" or \"rejected\": x.json");
}

TEST_CASE("report: it answers the challenge of its run, head and seed, or says which differs", "[report]") {
  const ReplayReport r = sample();
  Challenge c;
  c.head.run_id = r.run_id;
  c.head.size = r.head_size;
  c.head.root = r.head_root;
  c.seed = r.challenge_seed;
  CHECK_FALSE(r.answer_problem(c));
  Challenge other = c;
  other.head.run_id = filled(9);
  CHECK(r.answer_problem(other) == std::string("is a report on another run"));
  other = c;
  other.head.size++;
  CHECK(r.answer_problem(other) == std::string("is for another head than its challenge's"));
  other = c;
  other.seed = filled(9);
  CHECK(r.answer_problem(other) == std::string("answers another challenge (challenge seed differs)"));
}
