// The recorded configuration of a run (run_config.h, docs/manifest.md).
#include "wit/run/run_config.h"

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <cstdlib>
#include <cstring>

#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/base/json_fields.h"

namespace wit {

using nlohmann::json;

namespace {

constexpr const char* kCfg = "invalid configuration";

std::string str(const json& j, const char* key, const std::string& where) {
  const json& v = jsonf::need(j, key, kCfg, where);
  if (!v.is_string()) jsonf::bad(kCfg, std::string("field '") + key + "' is not a string", where);
  return v.get<std::string>();
}

int64_t positive(const json& j, const char* key, int64_t max, const std::string& where) {
  const json& v = jsonf::need(j, key, kCfg, where);
  if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > max)
    jsonf::bad(kCfg, std::string("field '") + key + "' is not an integer from 1 to " + std::to_string(max), where);
  return v.get<int64_t>();
}

bool has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}
bool has_avx512() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

json RunConfig::to_json() const {
  return {{"format", kRunConfigFormat}, {"version", kRunConfigVersion}, {"run_id", run_id},
          {"device", device},           {"threads", threads},           {"world", world},
          {"aten_cpu_capability", cpu_capability}, {"blas", blas}, {"blas_core", blas_core},
          {"onednn_max_cpu_isa", onednn_isa}, {"torch_version", torch_version}};
}

RunConfig RunConfig::from_json(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("format") || j["format"] != kRunConfigFormat) throw Error("not a wit configuration", where);
  if (!j.contains("version") || j["version"] != kRunConfigVersion)
    throw Error("unsupported configuration version " + (j.contains("version") ? j["version"].dump() : std::string("(none)")),
                where);
  jsonf::only_keys(j, {"format", "version", "run_id", "device", "threads", "world", "aten_cpu_capability", "blas",
                       "blas_core", "onednn_max_cpu_isa", "torch_version"},
                   kCfg, where);
  RunConfig c;
  c.run_id = jsonf::hash(j, "run_id", kCfg, where).hex();
  c.device = str(j, "device", where);
  c.threads = unsigned(positive(j, "threads", 4096, where));
  c.world = int(positive(j, "world", 4096, where));
  c.cpu_capability = str(j, "aten_cpu_capability", where);
  if (c.cpu_capability != "default" && c.cpu_capability != "avx2" && c.cpu_capability != "avx512")
    jsonf::bad(kCfg, "field 'aten_cpu_capability' is not default, avx2 or avx512", where);
  c.blas = str(j, "blas", where);
  c.blas_core = str(j, "blas_core", where);
  c.onednn_isa = str(j, "onednn_max_cpu_isa", where);
  c.torch_version = str(j, "torch_version", where);
  // What goes into an environment variable: no NUL, '=' or control characters.
  for (const std::string* s : {&c.device, &c.blas, &c.blas_core, &c.onednn_isa, &c.torch_version})
    for (char ch : *s)
      if (static_cast<unsigned char>(ch) < 0x20 || ch == '=' || ch == 0x7f) jsonf::bad(kCfg, "a field holds a control character or '='", where);
  return c;
}

RunConfig RunConfig::parse(const std::string& text, const std::string& where) {
  const json j = jsonf::parse(text, kCfg, where);
  return from_json(j, where);
}

Problem config_problem(const RunConfig& r, const RunConfig& n) {
  const std::pair<const char*, std::pair<std::string, std::string>> fields[] = {
      {"device", {r.device, n.device}},
      {"threads", {std::to_string(r.threads), std::to_string(n.threads)}},
      {"world", {std::to_string(r.world), std::to_string(n.world)}},
      {"aten_cpu_capability", {r.cpu_capability, n.cpu_capability}},
      {"blas", {r.blas, n.blas}},
      {"blas_core", {r.blas_core, n.blas_core}},
      {"onednn_max_cpu_isa", {r.onednn_isa, n.onednn_isa}},
      {"torch_version", {r.torch_version, n.torch_version}}};
  for (const auto& [name, v] : fields) {
    if (strcasecmp(v.first.c_str(), v.second.c_str()) == 0) continue;
    return std::string(name) + ": " + (v.first.empty() ? "(none)" : v.first) + " (recorded) vs " +
           (v.second.empty() ? "(none)" : v.second) + " (here)";
  }
  return std::nullopt;
}


std::optional<RunConfig> load_run_config(const std::string& run_dir, const std::string& run_id) {
  const std::string path = run_dir + "/" + kRunConfigFile;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  RunConfig c = RunConfig::parse(read_file(path), path);
  if (c.run_id != run_id) throw Error("the recorded configuration is another run's", path);
  return c;
}

void record_run_config(const std::string& run_dir, const RunConfig& now) {
  const std::string path = run_dir + "/" + kRunConfigFile;
  if (auto old = load_run_config(run_dir, now.run_id)) {
    if (const Problem d = config_problem(*old, now))
      throw Error("this run was trained under another configuration (" + *d + ")", path,
                  "resume with the recorded thread count (-j) and kernel set (--cpu-kernels), or train a new run");
    return;
  }
  write_file_atomic(path, now.to_json().dump(2) + "\n");
}

bool cpu_has_kernel_set(const std::string& cap) {
  if (cap == "default") return true;
  if (cap == "avx2") return has_avx2();
  if (cap == "avx512") return has_avx512();
  return false;
}

EnvVars kernel_set_environment(const std::string& set) {
  if (set == "native") return {};
  EnvVars env;
  if (set == "avx2") env = {{"ATEN_CPU_CAPABILITY", "avx2"}, {"OPENBLAS_CORETYPE", "Haswell"}, {"ONEDNN_MAX_CPU_ISA", "AVX2"}};
  else if (set == "avx512")
    env = {{"ATEN_CPU_CAPABILITY", "avx512"}, {"OPENBLAS_CORETYPE", "SkylakeX"}, {"ONEDNN_MAX_CPU_ISA", "AVX512_CORE"}};
  else
    throw Error("unknown CPU kernel set '" + set + "'", "--cpu-kernels", "use avx2 (the portable default), avx512 or native");
  if (!cpu_has_kernel_set(set))
    throw Error("this CPU cannot run the " + set + " kernel set", "--cpu-kernels " + set,
                "use --cpu-kernels native (a run only machines like this one replay exactly)");
  return env;
}

EnvVars config_environment(const RunConfig& c) {
  if (!cpu_has_kernel_set(c.cpu_capability))
    throw Error("this CPU cannot run the run's recorded kernel set (" + c.cpu_capability + ")", kRunConfigFile,
                "verify with --tolerant on this machine, or exactly on one that has " + c.cpu_capability);
  EnvVars env = {{"ATEN_CPU_CAPABILITY", c.cpu_capability}};
  if (c.blas == "openblas" && !c.blas_core.empty()) env.push_back({"OPENBLAS_CORETYPE", c.blas_core});
  env.push_back({"ONEDNN_MAX_CPU_ISA", c.onednn_isa});  // "": unset, oneDNN's own choice as recorded
  return env;
}

std::string aten_capability_in_effect() {
  const std::string e = env_or_empty("ATEN_CPU_CAPABILITY");
  if (e == "avx512" || e == "avx2" || e == "default") return e;  // ATen 1.13 takes these as given
  if (has_avx512()) return "avx512";
  if (has_avx2()) return "avx2";
  return "default";
}

void run_under_environment(const EnvVars& env, char** argv) {
  std::string want;
  bool same = true;
  for (const auto& [k, v] : env) {
    want += k + "=" + v + ";";
    same = same && env_or_empty(k.c_str()) == v;
  }
  if (same) return;
  // A program re-executed for exactly this environment that still lacks it: never loop.
  if (env_or_empty("WIT_PINNED_ENV") == want)
    throw Error("cannot set the kernel environment (" + want + ")", "re-executing " + std::string(argv[0]));
  for (const auto& [k, v] : env) {
    if (v.empty()) ::unsetenv(k.c_str());
    else ::setenv(k.c_str(), v.c_str(), 1);
  }
  ::setenv("WIT_PINNED_ENV", want.c_str(), 1);
  exec_holding_signals("/proc/self/exe", argv);  // LibTorch loads again: a signal meanwhile is still said
  throw Error("cannot re-execute with the pinned kernel environment: " + errno_text(), argv[0]);
}

}  // namespace wit
