// wit-sketch: fingerprints of checkpoints and released models (weight sketch,
// probe fingerprint), distances between them, and matching a model to a run.
#include <filesystem>
#include <iostream>

#include "wit/cli.h"
#include "wit/error.h"
#include "wit/fingerprint.h"
#include "wit/io.h"
#include "wit/runlog.h"
#include "wit/sketch.h"
#include "wit/wlog.h"


int main(int argc, char** argv) {
  CLI::App app{"Fingerprint checkpoints and released models; compare fingerprints; match a model to a run"};
  wit::cli::setup(app, "wit-sketch");
  app.require_subcommand(1);
  std::string run, model, out = "-", device = "cpu";
  bool no_probe = false, json_out = false;
  double tolerance = 1e-3;
  unsigned threads = 0;

  auto* fp = app.add_subcommand("fingerprint", "Fingerprint a checkpoint or released model with a run's spec");
  fp->add_option("--run", run, "Run directory (manifest, probe set)")->required();
  fp->add_option("MODEL", model, "Checkpoint or released model (.safetensors)")->required();
  fp->add_flag("--no-probe", no_probe, "Weight sketch only");
  fp->add_option("-o,--output", out, "Fingerprint JSON to write (- = stdout)");
  auto* dist = app.add_subcommand("distance", "Distance between two fingerprints");
  std::string a, b;
  dist->add_option("A", a, "Fingerprint JSON")->required();
  dist->add_option("B", b, "Fingerprint JSON")->required();
  auto* show = app.add_subcommand("show", "Summarise a fingerprint");
  show->add_option("FINGERPRINT", a, "Fingerprint JSON (- = stdin)")->required();
  auto* match = app.add_subcommand("match", "Does a released model match the run's final probe fingerprint? (exit 1 if not)");
  match->add_option("--run", run, "Run directory")->required();
  match->add_option("MODEL", model, "Released model (.safetensors)")->required();
  match->add_option("--tolerance", tolerance, "Largest relative probe distance that matches")->default_str("1e-3");
  match->add_flag("--json", json_out, "Print the verdict as JSON");
  for (auto* s : {fp, match}) {
    s->add_option("--device", device, "cpu or cuda")->default_str("cpu");
    s->add_option("-j,--threads", threads, "LibTorch threads (0 = all cores)");
  }

  return wit::cli::run(app, argc, argv, [&]() -> int {
    if (*dist) {
      auto d = wit::fingerprint_distance(wit::Fingerprint::load(a), wit::Fingerprint::load(b));
      std::cout << d.to_json().dump() << "\n";
      return wit::cli::kOk;
    }
    if (*show) {
      wit::Fingerprint f = wit::Fingerprint::load(a);
      std::cout << "run " << f.run_id.hex() << "\n"
                << (f.state_root ? "state root " + f.state_root->hex() + " at step " + std::to_string(f.step)
                                 : std::string("released model (parameters only)"))
                << "\nweight sketch: " << f.w.size() << " buckets, l2 " << wit::l2_norm(f.w) << "\n"
                << "probe: " << (f.probe ? std::to_string(f.probe->size()) + " dims, l2 " + std::to_string(wit::l2_norm(*f.probe)) : "none")
                << "\n";
      return wit::cli::kOk;
    }
    wit::set_torch_threads(threads);
    wit::Manifest mf = wit::Manifest::load(run + "/run.json");
    wit::ProbeSet probe;
    const bool want_probe = *match || !no_probe;
    if (want_probe) probe = wit::ProbeSet::load(run + "/probe.json", mf, wit::read_revealed_seed(wit::RunPaths(run)));
    wit::TrainState st = wit::TrainState::load(mf.model, model, device, true);
    wit::Fingerprint f = wit::fingerprint_state(mf, st, want_probe ? &probe : nullptr);
    if (*fp) {
      wit::write_file_atomic(out, f.to_json().dump() + "\n");
      return wit::cli::kOk;
    }
    // match: against the last probe fingerprint in the log.
    wit::WitnessLog log = wit::WitnessLog::open(run + "/run.wlog", wit::TornTail::kRefuse);
    std::optional<std::vector<float>> logged;
    uint64_t at = 0;
    for (uint64_t i = log.size(); i-- > 1 && !logged;) {
      wit::LogEntry e = log.entry(i);
      if (e.s.probe) {
        logged = e.s.probe;
        at = i;
      }
    }
    if (!logged) throw wit::Error("the run's log has no probe fingerprint", run);
    wit::Fingerprint ref = f;
    ref.probe = logged;
    auto d = wit::fingerprint_distance(f, ref);
    const bool ok = *d.probe_rel <= tolerance;
    if (json_out)
      std::cout << nlohmann::json{{"match", ok}, {"step", at}, {"probe_rel", *d.probe_rel}, {"tolerance", tolerance}}.dump() << "\n";
    else
      std::cout << (ok ? "match: " : "no match: ") << "relative probe distance " << *d.probe_rel << " to step " << at
                << " (tolerance " << tolerance << ")\n";
    return ok ? wit::cli::kOk : wit::cli::kNegative;
  });
}
