// The subcommands of wit-sketch (sketch_cmd.h): what main used to decide.
#include "wit/cmd/sketch_cmd.h"

#include <iostream>

#include "wit/run/challenge.h"
#include "wit/cmd/cli.h"
#include "wit/base/error.h"
#include "wit/model/fingerprint.h"
#include "wit/base/io.h"
#include "wit/run/safetensors.h"
#include "wit/run/sketch.h"
#include "wit/run/state_root.h"
#include "wit/run/wlog.h"

namespace wit {

namespace {

Manifest run_manifest(const std::string& run) { return Manifest::load(run + "/run.json"); }

ProbeSet run_probe(const std::string& run, const Manifest& mf) {
  return ProbeSet::load(run + "/probe.json", mf, read_revealed_seed(RunPaths(run)));
}

}  // namespace

int sketch_fingerprint_cmd(const std::string& run, const std::string& model, bool probe, const std::string& out,
                           const std::string& device, unsigned threads) {
  set_torch_threads(threads);
  const Manifest mf = run_manifest(run);
  ProbeSet ps;
  if (probe) ps = run_probe(run, mf);
  const TrainState st = TrainState::load(mf.model, model, device, true);
  const Fingerprint f = fingerprint_state(mf, st, probe ? &ps : nullptr);
  write_file_atomic(out, f.to_json().dump() + "\n");
  return cli::kOk;
}

int sketch_distance_cmd(const std::string& a, const std::string& b) {
  auto d = fingerprint_distance(Fingerprint::load(a), Fingerprint::load(b));
  std::cout << d.to_json().dump() << "\n";
  return cli::kOk;
}

int sketch_show_cmd(const std::string& path) {
  const Fingerprint f = Fingerprint::load(path);
  std::cout << "run " << f.run_id.hex() << "\n"
            << (f.state_root ? "state root " + f.state_root->hex() + " at step " + std::to_string(f.step)
                             : std::string("released model (parameters only)"))
            << "\nweight sketch: " << f.w.size() << " buckets, l2 " << l2_norm(f.w) << "\n"
            << "probe: " << (f.probe ? std::to_string(f.probe->size()) + " dims, l2 " + std::to_string(l2_norm(*f.probe)) : "none")
            << "\n";
  return cli::kOk;
}

int sketch_match_cmd(const std::string& run, const std::string& model, const std::string& optim_hex, double tolerance,
                     bool json, const std::string& device, unsigned threads) {
  set_torch_threads(threads);
  const Manifest mf = run_manifest(run);
  const ProbeSet probe = run_probe(run, mf);
  std::optional<Hash32> optim;
  if (!optim_hex.empty()) {
    Hash32 h;
    if (!Hash32::from_hex(optim_hex, h)) throw Error("--optim-root is not 64 hex digits", optim_hex);
    optim = h;
  }
  ReleasedModel rel = load_released_model(run, model, optim, device);
  const TrainState st = std::move(rel.state);
  const Fingerprint f = fingerprint_state(mf, st, &probe);
  // The exact binding is the verdict; the probe distance to the last logged
  // probe fingerprint is shown for information only.
  const ReleaseBinding& b = rel.binding;
  WitnessLog log = WitnessLog::open(run + "/run.wlog", TornTail::kRefuse);
  std::optional<double> probe_rel;
  uint64_t at = 0;
  for (uint64_t i = log.size(); i-- > 1 && !probe_rel;) {
    LogEntry e = log.entry(i);
    if (e.s.probe) {
      Fingerprint ref = f;
      ref.probe = e.s.probe;
      probe_rel = *fingerprint_distance(f, ref).probe_rel;
      at = i;
    }
  }
  if (json) {
    nlohmann::json j = b.to_json();
    j["probe"] = probe_rel ? nlohmann::json{{"step", at}, {"probe_rel", *probe_rel}, {"tolerance", tolerance}}
                           : nlohmann::json(nullptr);
    std::cout << j.dump() << "\n";
  } else {
    std::cout << match_name(b.match) << ": "
              << (b.match ? "the file's parameters are exactly the final state's (step " + std::to_string(b.step) + ")"
                          : b.reason)
              << "\n  state root    " << b.state_root.hex() << "\n  params root   " << b.params_root.hex()
              << "\n  optim root    " << b.optim_root.hex() << "\n";
    if (probe_rel)
      std::cout << "  probe (information only, not the verdict): relative distance " << *probe_rel << " to step " << at
                << " (old tolerance " << tolerance << ")\n";
  }
  return b.match ? cli::kOk : cli::kNegative;
}

int sketch_serve_cmd(const std::string& run, const std::string& model, const std::string& device, unsigned threads) {
  set_torch_threads(threads);
  const Manifest mf = run_manifest(run);
  const TrainState st = TrainState::load(mf.model, model, device, true);
  const std::vector<std::string> texts = parse_model_requests(read_file("-"), "stdin");
  std::string answers;
  for (size_t i = 0; i < texts.size(); i++) answers += model_answer(i, text_logps(st, texts[i]));
  std::cout << answers << std::flush;
  return cli::kOk;
}

int sketch_probe_check_cmd(ProbeCheckOptions po, const std::string& nonce_hex, const std::string& nonce_file,
                           const std::string& out, bool quiet, const std::string& device, unsigned threads) {
  set_torch_threads(threads);
  if (nonce_hex.empty() && nonce_file.empty())
    throw Error("missing --nonce HEX or --nonce-file F", "", "the nonce must come from someone other than the trainer");
  po.nonce = nonce_from_args(nonce_hex, nonce_file);
  po.threads = threads;
  po.device = device;
  const ProbeCheckReport r = probe_check(po);
  write_file_atomic(out, r.to_json().dump(2) + "\n");
  if (!quiet) {
    const int64_t bad = r.first_failure();
    cli::note(std::string(match_name(r.pass())) + ": largest per-token difference " + r.to_json()["worst"].dump() +
              " nats over " + std::to_string(r.worst.size()) + " fresh inputs (tolerance " +
              r.to_json()["tolerance"].dump() + ")" + (bad >= 0 ? "; first over it: input " + std::to_string(bad) : ""));
    cli::note(r.guarantee());
  }
  return r.pass() ? cli::kOk : cli::kNegative;
}

int sketch_export_cmd(const std::string& run, const std::string& checkpoint, const std::string& out,
                      const std::string& device, unsigned threads) {
  set_torch_threads(threads);
  const Manifest mf = run_manifest(run);
  const TrainState st = TrainState::load(mf.model, checkpoint, device, true);
  std::vector<TensorView> params;
  for (const auto& t : st.tensors())
    if (is_param_tensor(t.name)) params.push_back(t);
  write_safetensors(out, params);
  return cli::kOk;
}

}  // namespace wit
