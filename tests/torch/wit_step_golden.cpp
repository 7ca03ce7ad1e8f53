// One step of wit's training step (train_step, the function training and
// replay share) on a given state and batch, for the golden comparison with
// PyTorch's own AdamW (tests/torch/golden_adamw.py, tests/cli/torch_model.sh).
//   wit_step_golden --run RUN --state-in IN.safetensors --batch BATCH.json
//                   --state-out OUT.safetensors --info INFO.json
// BATCH.json: {"records": ["<hex>", ...]}. INFO.json: the step's inputs a
// reimplementation needs (hyperparameters, lr, token mapping, decay flags)
// and its outputs (per-example losses, mean loss, gradient norm).
#include <cstring>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "wit/base/bytes.h"
#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/run/manifest.h"
#include "wit/run/model_spec.h"
#include "wit/run/runlog.h"
#include "wit/model/state.h"

int main(int argc, char** argv) {
  std::string run, in, batch_path, out, info;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    std::string* v = k == "--run" ? &run : k == "--state-in" ? &in : k == "--batch" ? &batch_path
                   : k == "--state-out" ? &out : k == "--info" ? &info : nullptr;
    if (!v) {
      std::cerr << "wit_step_golden: error: unknown option " << k << "\n";
      return 2;
    }
    *v = argv[i + 1];
  }
  if (run.empty() || in.empty() || batch_path.empty() || out.empty() || info.empty()) {
    std::cerr << "usage: wit_step_golden --run RUN --state-in IN --batch BATCH.json --state-out OUT --info INFO.json\n";
    return 2;
  }
  try {
    wit::set_torch_threads(1);
    const wit::Manifest mf = wit::Manifest::load(wit::RunPaths(run).manifest());
    wit::TrainState st = wit::TrainState::load(mf.model, in);
    const auto bj = nlohmann::json::parse(wit::read_file(batch_path));
    wit::BatchRecords batch;
    for (const auto& h : bj.at("records")) {
      wit::Bytes b;
      if (!wit::from_hex(h.get<std::string>(), b)) throw wit::Error("a record is not hex", batch_path);
      batch.emplace_back(b.begin(), b.end());
    }
    const int64_t t = st.step() + 1;
    const wit::StepOutput o = wit::train_step(mf, st, batch);
    st.save(out);
    nlohmann::json decay = nlohmann::json::object();
    for (const auto& p : wit::model_params(mf.model)) decay[p.name] = p.decay;
    const nlohmann::json j = {{"step", t},
                              {"lr", mf.lr_at(t)},
                              {"beta1", mf.opt.beta1},
                              {"beta2", mf.opt.beta2},
                              {"eps", mf.opt.eps},
                              {"weight_decay", mf.opt.weight_decay},
                              {"grad_clip", mf.opt.grad_clip},
                              {"context", mf.model.context},
                              {"pad", mf.model.scripted() ? mf.model.pad : wit::ModelConfig::kPad},
                              {"tokens", wit::token_mode_name(mf.model.tokens)},
                              {"decay", decay},
                              {"losses", o.losses},
                              {"mean_loss", o.mean_loss},
                              {"grad_norm", o.grad_norm}};
    wit::write_file_atomic(info, j.dump(1) + "\n");
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "wit_step_golden: error: " << e.what() << "\n";
    return 2;
  }
}
