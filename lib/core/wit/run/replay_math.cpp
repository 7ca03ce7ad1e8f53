// Replay distances and thresholds (docs/replay.md), torch-free so they are
// unit-tested on hand-computed cases.
#include "wit/run/replay_math.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "wit/base/error.h"
#include "wit/run/model_spec.h"

namespace wit {

void check_margin(double margin) {
  if (std::isfinite(margin) && margin > 0) return;
  std::ostringstream m;
  m << margin;
  throw Error("--margin must be a finite number above 0", m.str());
}

const char* state_field(const std::string& n) {
  if (n.rfind("adam.m.", 0) == 0) return "adam_m";
  if (n.rfind("adam.v.", 0) == 0) return "adam_v";
  if (n == kStepTensor) return nullptr;
  return "weights";
}

namespace {

double ratio(double num, double den) {
  if (num == 0) return 0;
  return den > 0 ? num / den : INFINITY;
}

const float* floats(const TensorView& t) { return reinterpret_cast<const float*>(t.data.data); }

}  // namespace

std::vector<TensorDistance> compare_states(const std::vector<TensorView>& before, const std::vector<TensorView>& logged,
                                           const std::vector<TensorView>& replayed) {
  if (before.size() != logged.size() || replayed.size() != logged.size())
    throw Error("states to compare have different tensor counts", "replay");
  std::vector<TensorDistance> out;
  for (size_t i = 0; i < logged.size(); i++) {
    const TensorView &a = before[i], &s = logged[i], &r = replayed[i];
    if (a.name != s.name || r.name != s.name || a.shape != s.shape || r.shape != s.shape || a.dtype != s.dtype ||
        r.dtype != s.dtype || a.data.size != s.data.size || r.data.size != s.data.size)
      throw Error("states to compare differ in tensor '" + s.name + "'", "replay");
    const char* field = state_field(s.name);
    if (!field) continue;
    if (s.dtype != DType::kF32) throw Error("state tensor '" + s.name + "' is not F32", "replay");
    const uint64_t n = s.data.size / 4;
    const float *pa = floats(a), *ps = floats(s), *pr = floats(r);
    double diff = 0, upd = 0, norm = 0;  // squared
    for (uint64_t j = 0; j < n; j++) {
      const double d = double(pr[j]) - ps[j], u = double(ps[j]) - pa[j];
      diff += d * d;
      upd += u * u;
      norm += double(ps[j]) * ps[j];
    }
    diff = std::sqrt(diff);
    upd = std::sqrt(upd);
    norm = std::sqrt(norm);
    TensorDistance t;
    t.name = s.name;
    t.field = field;
    t.distance = ratio(diff, upd);
    t.floors = ratio(diff, kRoundingEps * norm);
    t.floor = ratio(kRoundingEps * norm, upd);
    out.push_back(std::move(t));
  }
  return out;
}

std::map<std::string, FieldDistance> worst_by_field(const std::vector<TensorDistance>& d) {
  std::map<std::string, FieldDistance> out;
  for (const TensorDistance& t : d) {
    auto [it, fresh] = out.try_emplace(t.field);
    // NaN never occurs (ratios of norms), but an infinity must win.
    if (fresh || t.floors > it->second.floors) it->second = {t.distance, t.floors, t.floor, t.name};
  }
  return out;
}

double losses_distance(const std::vector<float>& replayed, const std::vector<float>& logged) {
  if (replayed.size() != logged.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < logged.size(); i++)
    m = std::max(m, ratio(std::fabs(double(replayed[i]) - logged[i]), std::max(std::fabs(double(logged[i])), 1e-12)));
  return m;
}

double scalar_distance(double replayed, double logged) { return ratio(std::fabs(replayed - logged), std::fabs(logged)); }

double vector_distance(const std::vector<float>& replayed, const std::vector<float>& logged) {
  if (replayed.size() != logged.size()) return INFINITY;
  double d = 0, n = 0;
  for (size_t i = 0; i < logged.size(); i++) {
    const double x = double(replayed[i]) - logged[i];
    d += x * x;
    n += double(logged[i]) * logged[i];
  }
  return ratio(std::sqrt(d), std::sqrt(n));
}

double threshold_floors(double margin, double noise_floors) { return margin * std::max(1.0, noise_floors); }

bool within(double floors, double threshold) { return floors <= threshold; }

}  // namespace wit
