// Released models: the exact binding of a weights file, per-token
// log-probabilities of a text, and the probe check of a black-box model.
#include "wit/eval/release_model.h"

#include <thread>

#include "wit/train/dist.h"  // logged_checkpoint
#include "wit/model/model.h"
#include "wit/model/state_impl.h"
#include "wit/cmd/command.h"
#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/data/index.h"
#include "wit/base/io.h"
#include "wit/run/wlog.h"

namespace wit {

namespace {

struct Final {
  Manifest mf;
  LoggedFinal fin;
};
Final final_of(const std::string& run) {
  const RunPaths rp(run);
  Final f;
  f.mf = Manifest::load(rp.manifest());
  const WitnessLog log = WitnessLog::open(rp.log(), TornTail::kRefuse);
  f.fin = final_logged_state(log, rp.log());
  return f;
}

TrainState final_checkpoint(const std::string& run, const Final& f, const std::string& device, const char* hint) {
  const std::string path = RunPaths(run).checkpoint(f.fin.step);
  std::optional<TrainState> st = logged_checkpoint(f.mf.model, path, int64_t(f.fin.step), f.fin.root, device);
  if (!st) throw Error("no checkpoint of the final step with the logged state root", path, hint);
  return std::move(*st);
}

}  // namespace

ReleasedModel load_released_model(const std::string& run, const std::string& path,
                                  const std::optional<Hash32>& optim_root, const std::string& device) {
  const Final f = final_of(run);
  ReleasedModel r;
  // The model's names, dtypes and shapes first: anything else is bad input.
  const Safetensors file = Safetensors::open(path);
  r.state = TrainState::from_tensors(f.mf.model, file.tensors(), path, device, true);
  if (optim_root) {
    r.binding = bind_release(file.tensors(), f.fin, *optim_root, nullptr);
    return r;
  }
  const TrainState ck = final_checkpoint(run, f, device, "or pass --optim-root HEX from a match report");
  std::vector<TensorView> params;
  for (const auto& t : ck.tensors())
    if (is_param_tensor(t.name)) params.push_back(t);
  const NamedLeaves final_params = tensor_leaves(params);
  r.binding = bind_release(file.tensors(), f.fin, state_root_parts(ck.tensors()).optim, &final_params);
  return r;
}

std::vector<float> text_logps(const TrainState& state, const std::string& text) {
  const TrainState::Impl& s = state.impl();
  if (int64_t(text.size()) > s.cfg.context - 1)
    throw Error("a text of " + std::to_string(text.size()) + " bytes does not fit the context with its end",
                "at most " + std::to_string(s.cfg.context - 1) + " bytes");
  torch::NoGradGuard no_grad;
  const Rows rows = make_rows(BatchRecords{text}, s.cfg, s.device);
  const std::vector<float> lp = to_vector(target_logp(s, rows));
  return std::vector<float>(lp.begin(), lp.begin() + int64_t(text.size()) + 1);
}

ProbeCheckReport probe_check(const ProbeCheckOptions& o) {
  if (o.model_cmd.empty()) throw Error("missing --model-cmd CMD", "", "the command that scores texts for the model checked");
  if (!(o.timeout_s > 0)) throw Error("the timeout must be positive", std::to_string(o.timeout_s));
  if (!(o.floor > 0) || !(o.margin >= 1)) throw Error("the floor must be positive and the margin at least 1", "");
  if (!(o.fraction > 0 && o.fraction <= 1)) throw Error("the fraction must be in (0, 1]", std::to_string(o.fraction));
  const Final f = final_of(o.run);
  if (f.mf.model.scripted() && f.mf.model.tokens != TokenMode::kBytes)
    throw Error("the probe check sends texts as bytes; this run's model reads token ids", o.run,
                "check a token model's release with 'wit-sketch match' (exact binding)");
  const uint64_t max_len = uint64_t(std::max<int64_t>(f.mf.model.context - 1, 0));
  const ProbeDraw d = draw_probe_inputs(f.mf.run_id(), o.nonce, f.mf.data_n, o.records, o.random, max_len);
  std::vector<std::string> texts;
  if (!d.indices.empty()) {
    const RunDataFiles df = run_data_files(o.run, o.data);
    const Commitment c = load_commit_pair(df.commit, df.index, IndexUse::kIndexOptional).commit;
    if (c.root != f.mf.data_root) throw Error("the data commitment is not the run's", df.commit);
    const Dataset data(c, df.files, o.threads);
    for (uint64_t i : d.indices) texts.push_back(data.record(i).substr(0, size_t(max_len)));
  }
  for (const auto& t : d.random_texts) texts.push_back(t);
  std::vector<size_t> lengths;
  for (const auto& t : texts) lengths.push_back(t.size());

  // The model first: the checker's scores are not needed to ask it.
  const CommandResult cr = run_command(o.model_cmd, model_requests(texts), o.timeout_s);
  if (cr.timed_out) throw Error("the model command did not answer within " + std::to_string(int64_t(o.timeout_s)) + " s", o.model_cmd);
  if (cr.out_truncated) throw Error("the model command wrote more than 1 GiB", o.model_cmd);
  if (cr.signal) throw Error("the model command was ended by signal " + std::to_string(cr.signal), o.model_cmd);
  if (cr.exit_code != 0) throw Error("the model command failed (exit " + std::to_string(cr.exit_code) + ")", o.model_cmd);
  const auto answers = parse_model_answers(cr.out, lengths, "the model command's output");

  const TrainState ck = final_checkpoint(o.run, f, o.device, "the probe check scores with the run's final checkpoint");
  auto score_all = [&](unsigned threads) {
    set_torch_threads(threads);
    std::vector<std::vector<float>> out;
    for (const auto& t : texts) out.push_back(text_logps(ck, t));
    return out;
  };
  const unsigned tb = o.threads_b ? o.threads_b : std::max(2u, std::thread::hardware_concurrency());
  const auto ref = score_all(o.threads ? o.threads : 1);
  const auto other = score_all(tb);
  // Filled field by field, as TrainState::clone copies its own: alike by shape only, on purpose.
  ProbeCheckReport r;
  r.run_id = f.mf.run_id();
  r.nonce = o.nonce;
  r.step = f.fin.step;
  r.state_root = f.fin.root;
  r.records = o.records;
  r.random = o.random;
  r.model_cmd = o.model_cmd;
  r.floor = o.floor;
  r.margin = o.margin;
  r.fraction = o.fraction;
  for (size_t i = 0; i < texts.size(); i++) {
    const std::vector<double> a(ref[i].begin(), ref[i].end());
    r.noise = std::max(r.noise, max_abs_difference(a, other[i]));
  }
  r.tolerance = std::max(o.floor, o.margin * r.noise);
  for (size_t i = 0; i < texts.size(); i++) r.worst.push_back(max_abs_difference(answers[i], ref[i]));
  return r;
}

}  // namespace wit
