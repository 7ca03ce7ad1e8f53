// wit-sketch: fingerprints of checkpoints and released models (weight sketch,
// probe fingerprint), distances between them, matching a released weights
// file to a run (exact), and checking a black-box model with fresh probes.
#include <filesystem>
#include <iostream>

#include "wit/cli.h"
#include "wit/error.h"
#include "wit/fingerprint.h"
#include "wit/io.h"
#include "wit/challenge.h"
#include "wit/release_model.h"
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
  auto* match = app.add_subcommand("match", "Is a released weights file exactly the run's final parameters? (exit 1 if not)");
  std::string optim_hex;
  match->add_option("--run", run, "Run directory")->required();
  match->add_option("MODEL", model, "Released model (.safetensors, parameters only)")->required();
  match->add_option("--optim-root", optim_hex, "The final state's optimizer root (64 hex, from a match report) when the run's final checkpoint is not at hand")->type_name("HEX");
  match->add_option("--tolerance", tolerance, "Probe distance shown for information: the old threshold it is compared with")->default_str("1e-3");
  match->add_flag("--json", json_out, "Print the verdict as JSON");

  auto* serve = app.add_subcommand("serve", "Answer model-command requests (stdin) with a model's per-token log-probabilities (stdout)");
  serve->add_option("--run", run, "Run directory (the model's shape)")->required();
  serve->add_option("MODEL", model, "Checkpoint or released model (.safetensors)")->required();

  auto* pc = app.add_subcommand("probe-check", "Check a black-box model against the run's final model on fresh probes (exit 1 if not)");
  wit::ProbeCheckOptions po;
  std::string nonce_hex, nonce_file;
  pc->add_option("--run", po.run, "Run directory (its final checkpoint and data)")->required();
  auto* o_nonce = pc->add_option("--nonce", nonce_hex, "Nonce the trainer does not control: 64 hex digits")->type_name("HEX");
  auto* o_nfile = pc->add_option("--nonce-file", nonce_file, "File holding the nonce as 64 hex digits (- = stdin)")->type_name("F");
  o_nonce->excludes(o_nfile);
  pc->add_option("--model-cmd", po.model_cmd, "Command that scores texts for the model (sh -c; JSONL requests on stdin, answers on stdout)")->required()->type_name("CMD");
  pc->add_option("--records", po.records, "Committed records to draw")->default_str("48");
  pc->add_option("--random", po.random, "Random byte strings to draw")->default_str("16");
  pc->add_option("--timeout", po.timeout_s, "Seconds the model command may take")->default_str("300");
  pc->add_option("--floor", po.floor, "Smallest tolerance, nats per token")->default_str("1e-3");
  pc->add_option("--margin", po.margin, "Tolerance = max(floor, margin x measured noise)")->default_str("10");
  pc->add_option("--fraction", po.fraction, "Fraction of deviating inputs the guarantee is for")->default_str("0.05");
  pc->add_option("--data", po.data.commit, "Data commitment (default: from RUN/data.json)");
  pc->add_option("--index", po.data.index, "Data index (default: from RUN/data.json)");
  pc->add_option("--file", po.data.files, "A data file (repeat; default: from RUN/data.json)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  pc->add_option("-o,--output", out, "Probe-check report to write (- = stdout)");
  pc->add_option("--threads-b", po.threads_b, "The checker's second thread count for the noise (default: all cores, at least 2)");
  bool quiet = false;
  pc->add_flag("-q,--quiet", quiet, "No verdict on stderr");
  auto* ex = app.add_subcommand("export", "Write a checkpoint's parameters alone: the file to publish as the released model");
  ex->add_option("--run", run, "Run directory (the model's shape)")->required();
  ex->add_option("CHECKPOINT", model, "Checkpoint (.safetensors)")->required();
  wit::cli::mark_output(ex->add_option("-o,--output", out, "Parameters-only .safetensors to write"))->required();
  for (auto* s : {fp, match, serve, pc, ex}) {
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
    if (*pc) {
      if (nonce_hex.empty() && nonce_file.empty())
        throw wit::Error("missing --nonce HEX or --nonce-file F", "", "the nonce must come from someone other than the trainer");
      po.nonce = wit::nonce_from_args(nonce_hex, nonce_file);
      po.threads = threads;
      po.device = device;
      const wit::ProbeCheckReport r = wit::probe_check(po);
      wit::write_file_atomic(out, r.to_json().dump(2) + "\n");
      if (!quiet) {
        const int64_t bad = r.first_failure();
        wit::cli::note(std::string(wit::match_name(r.pass())) + ": largest per-token difference " +
                       r.to_json()["worst"].dump() + " nats over " + std::to_string(r.worst.size()) +
                       " fresh inputs (tolerance " + r.to_json()["tolerance"].dump() + ")" +
                       (bad >= 0 ? "; first over it: input " + std::to_string(bad) : ""));
        wit::cli::note(r.guarantee());
      }
      return r.pass() ? wit::cli::kOk : wit::cli::kNegative;
    }
    wit::Manifest mf = wit::Manifest::load(run + "/run.json");
    wit::ProbeSet probe;
    const bool want_probe = *match || (*fp && !no_probe);
    if (want_probe) probe = wit::ProbeSet::load(run + "/probe.json", mf, wit::read_revealed_seed(wit::RunPaths(run)));
    if (*ex) {
      const wit::TrainState st = wit::TrainState::load(mf.model, model, device, true);
      std::vector<wit::TensorView> params;
      for (const auto& t : st.tensors())
        if (wit::is_param_tensor(t.name)) params.push_back(t);
      wit::write_safetensors(out, params);
      return wit::cli::kOk;
    }
    if (*serve) {
      const wit::TrainState st = wit::TrainState::load(mf.model, model, device, true);
      const std::vector<std::string> texts = wit::parse_model_requests(wit::read_file("-"), "stdin");
      std::string answers;
      for (size_t i = 0; i < texts.size(); i++) answers += wit::model_answer(i, wit::text_logps(st, texts[i]));
      std::cout << answers << std::flush;
      return wit::cli::kOk;
    }
    std::optional<wit::ReleasedModel> rel;
    if (*match) {
      std::optional<wit::Hash32> optim;
      if (!optim_hex.empty()) {
        wit::Hash32 h;
        if (!wit::Hash32::from_hex(optim_hex, h)) throw wit::Error("--optim-root is not 64 hex digits", optim_hex);
        optim = h;
      }
      rel = wit::load_released_model(run, model, optim, device);
    }
    wit::TrainState st = rel ? std::move(rel->state) : wit::TrainState::load(mf.model, model, device, true);
    wit::Fingerprint f = wit::fingerprint_state(mf, st, want_probe ? &probe : nullptr);
    if (*fp) {
      wit::write_file_atomic(out, f.to_json().dump() + "\n");
      return wit::cli::kOk;
    }
    // match: the exact binding is the verdict; the probe distance to the
    // last logged probe fingerprint is shown for information only.
    const wit::ReleaseBinding& b = rel->binding;
    wit::WitnessLog log = wit::WitnessLog::open(run + "/run.wlog", wit::TornTail::kRefuse);
    std::optional<double> probe_rel;
    uint64_t at = 0;
    for (uint64_t i = log.size(); i-- > 1 && !probe_rel;) {
      wit::LogEntry e = log.entry(i);
      if (e.s.probe) {
        wit::Fingerprint ref = f;
        ref.probe = e.s.probe;
        probe_rel = *wit::fingerprint_distance(f, ref).probe_rel;
        at = i;
      }
    }
    if (json_out) {
      nlohmann::json j = b.to_json();
      j["probe"] = probe_rel ? nlohmann::json{{"step", at}, {"probe_rel", *probe_rel}, {"tolerance", tolerance}}
                             : nlohmann::json(nullptr);
      std::cout << j.dump() << "\n";
    } else {
      std::cout << wit::match_name(b.match) << ": "
                << (b.match ? "the file's parameters are exactly the final state's (step " + std::to_string(b.step) + ")"
                            : b.reason)
                << "\n  state root    " << b.state_root.hex() << "\n  params root   " << b.params_root.hex()
                << "\n  optim root    " << b.optim_root.hex() << "\n";
      if (probe_rel)
        std::cout << "  probe (information only, not the verdict): relative distance " << *probe_rel << " to step " << at
                  << " (old tolerance " << tolerance << ")\n";
    }
    return b.match ? wit::cli::kOk : wit::cli::kNegative;
  });
}
