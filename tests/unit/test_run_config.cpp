// The recorded configuration (run_config.h): its file round-trips and is
// strict, differences are named field by field, kernel sets map to their
// environment (and one the CPU lacks is refused), and a resumed run under
// another configuration is refused before anything is written.
#include <catch2/catch.hpp>

#include <filesystem>

#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/run/run_config.h"

using namespace wit;
using nlohmann::json;

namespace {

RunConfig sample() {
  RunConfig c;
  c.run_id = std::string(64, 'a');
  c.threads = 2;
  c.cpu_capability = "avx2";
  c.blas = "openblas";
  c.blas_core = "Haswell";
  c.onednn_isa = "AVX2";
  c.torch_version = "1.13.1";
  return c;
}

std::string refusal(const json& j) {
  try {
    RunConfig::from_json(j, "c.json");
    return "accepted";
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("run config: round trip, strict fields", "[run_config]") {
  const json j = sample().to_json();
  CHECK(RunConfig::from_json(json::parse(j.dump()), "c.json") == sample());
  CHECK(j["format"] == "wit.config");
  auto with = [&](auto edit) {
    json x = j;
    edit(x);
    return refusal(x);
  };
  CHECK(with([](json& x) { x["run_id"] = std::string(63, 'a'); }) == "invalid configuration: field 'run_id' is not 64 hex digits: c.json");
  CHECK(with([](json& x) { x["threads"] = 0; }) == "invalid configuration: field 'threads' is not an integer from 1 to 4096: c.json");
  CHECK(with([](json& x) { x["aten_cpu_capability"] = "sse9"; }) ==
        "invalid configuration: field 'aten_cpu_capability' is not default, avx2 or avx512: c.json");
  CHECK(with([](json& x) { x["blas_core"] = "Haswell\nX=1"; }) ==
        "invalid configuration: a field holds a control character or '=': c.json");
  CHECK(with([](json& x) { x["extra"] = 1; }) == "invalid configuration: unknown field 'extra': c.json");
  CHECK(with([](json& x) { x["version"] = 2; }) == "unsupported configuration version 2: c.json");
  CHECK(refusal(json::array()) == "not a wit configuration: c.json");
}

TEST_CASE("run config: the first difference is named; thread counts and kernels count, the run id does not", "[run_config]") {
  RunConfig a = sample(), b = sample();
  CHECK_FALSE(config_problem(a, b));
  b.run_id = std::string(64, 'b');
  CHECK_FALSE(config_problem(a, b));
  b.blas_core = "haswell";  // OpenBLAS's spelling of the same kernel
  CHECK_FALSE(config_problem(a, b));
  b.threads = 4;
  CHECK(config_problem(a, b) == Problem("threads: 2 (recorded) vs 4 (here)"));
  b = sample();
  b.cpu_capability = "avx512";
  CHECK(config_problem(a, b) == Problem("aten_cpu_capability: avx2 (recorded) vs avx512 (here)"));
}

TEST_CASE("run config: kernel sets and the environment that reproduces a configuration", "[run_config]") {
  CHECK(kernel_set_environment("native").empty());
  CHECK_THROWS_WITH(kernel_set_environment("sse2"), "unknown CPU kernel set 'sse2': --cpu-kernels");
  if (cpu_has_kernel_set("avx2")) {
    const EnvVars e = kernel_set_environment("avx2");
    CHECK(e == EnvVars{{"ATEN_CPU_CAPABILITY", "avx2"}, {"OPENBLAS_CORETYPE", "Haswell"}, {"ONEDNN_MAX_CPU_ISA", "AVX2"}});
    CHECK(config_environment(sample()) == e);
  } else {
    CHECK_THROWS_WITH(kernel_set_environment("avx2"), "this CPU cannot run the avx2 kernel set: --cpu-kernels avx2");
  }
  RunConfig c = sample();
  c.cpu_capability = "default";
  c.blas = "";
  c.onednn_isa = "";
  CHECK(config_environment(c) == EnvVars{{"ATEN_CPU_CAPABILITY", "default"}, {"ONEDNN_MAX_CPU_ISA", ""}});
}

TEST_CASE("run config: recorded once; a resume under another configuration is refused", "[run_config]") {
  const TempDir d("wit-test");
  const std::string run = d.path();
  CHECK_FALSE(load_run_config(run, sample().run_id));
  record_run_config(run, sample());
  CHECK(*load_run_config(run, sample().run_id) == sample());
  record_run_config(run, sample());  // the same configuration: fine
  RunConfig other = sample();
  other.threads = 3;
  CHECK_THROWS_WITH(record_run_config(run, other),
                    "this run was trained under another configuration (threads: 2 (recorded) vs 3 (here)): " + run + "/config.json");
  CHECK(*load_run_config(run, sample().run_id) == sample());  // unchanged
  CHECK_THROWS_WITH(load_run_config(run, std::string(64, 'b')), "the recorded configuration is another run's: " + run + "/config.json");
}
