// The configuration that determines a training step's bits (docs/manifest.md,
// "The recorded configuration"): device, intra-op thread count, data-parallel
// world, the ATen CPU kernel set, the BLAS library and its kernel, oneDNN's
// instruction set, the LibTorch version. wit-train records it in RUN/config.json
// (bound to the run by its run id); a response bundle carries it as
// config.json; an exact verifier reproduces it. Torch-free: the values in
// effect are read by the torch side (state.h, current_run_config).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/check.h"

namespace wit {

inline constexpr const char* kRunConfigFormat = "wit.config";
inline constexpr int kRunConfigVersion = 1;
inline constexpr const char* kRunConfigFile = "config.json";  // in the run directory and in a response bundle

struct RunConfig {
  std::string run_id;          // 64 hex: the run this configuration trained
  std::string device = "cpu";
  unsigned threads = 1;        // LibTorch intra-op threads in effect (never 0)
  int world = 1;               // data-parallel ranks (a replay emulates them in one process)
  std::string cpu_capability;  // ATen CPU kernel set in effect: "default", "avx2", "avx512"
  std::string blas;            // "openblas", or "" when not known
  std::string blas_core;       // OpenBLAS's kernel (its core name, e.g. "Haswell"); "" when not OpenBLAS
  std::string onednn_isa;      // ONEDNN_MAX_CPU_ISA in effect ("" = oneDNN's own choice)
  std::string torch_version;   // "1.13.1"

  nlohmann::json to_json() const;
  // Strict: every field, of its type, and no other; throws wit::Error ("invalid configuration: ...").
  static RunConfig from_json(const nlohmann::json& j, const std::string& where);
  static RunConfig parse(const std::string& text, const std::string& where);
  bool operator==(const RunConfig& o) const { return to_json() == o.to_json(); }
};

// What differs between `recorded` and `now` in the fields that decide a
// step's bits (all but run_id): nothing when nothing does, else "FIELD:
// RECORDED (recorded) vs NOW (here)" for the first difference.
Problem config_problem(const RunConfig& recorded, const RunConfig& now);

// RUN/config.json: written when absent; when present (a resumed run) it must
// be this run's and `now` must not differ from it (throws wit::Error naming
// the difference: steps computed under another configuration would not replay exactly).
void record_run_config(const std::string& run_dir, const RunConfig& now);
// RUN/config.json of the run `run_id` (hex); std::nullopt when the run has none
// (trained before configurations were recorded). Throws wit::Error when it is
// invalid or another run's.
std::optional<RunConfig> load_run_config(const std::string& run_dir, const std::string& run_id);

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// The kernel sets wit-train can pin (--cpu-kernels): "avx2" (the default: every
// x86-64 machine since 2013/2015 has it) sets ATEN_CPU_CAPABILITY=avx2,
// OPENBLAS_CORETYPE=Haswell, ONEDNN_MAX_CPU_ISA=AVX2; "avx512" the AVX-512
// equivalents; "native" pins nothing (the machine's own choice, recorded as
// found). Throws wit::Error for another name, or one this CPU cannot run.
EnvVars kernel_set_environment(const std::string& set);

// The environment that reproduces a recorded configuration's kernels (a
// variable with an empty value is to be unset). Throws wit::Error when this
// CPU lacks the recorded ATen kernel set.
EnvVars config_environment(const RunConfig& c);

// Whether this CPU can run ATen kernel set `cap` ("default", "avx2", "avx512").
bool cpu_has_kernel_set(const std::string& cap);

// A guess at the ATen kernel set this process dispatches to, without LibTorch:
// ATEN_CPU_CAPABILITY as ATen 1.13 reads it, else the best the CPU has.
// current_run_config asks ATen itself and uses this only when it cannot tell.
std::string aten_capability_in_effect();

// Makes the process run with `env` set (an empty value: unset): returns at once when every variable
// already has its value; otherwise sets them and re-executes this program
// (/proc/self/exe) with the same arguments, since LibTorch and OpenBLAS read
// them when they initialise (OpenBLAS as it is loaded, before main). Throws
// wit::Error when the re-executed program still lacks them or exec fails.
void run_under_environment(const EnvVars& env, char** argv);

}  // namespace wit
