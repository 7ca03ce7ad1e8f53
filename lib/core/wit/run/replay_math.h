// The arithmetic of a replay verdict, apart from LibTorch: distances between a
// replayed state and the logged one, tensor by tensor, in units of each
// tensor's float32 rounding floor; thresholds from measured noise. Spec:
// docs/replay.md ("Distances and thresholds").
#pragma once
#include <map>
#include <string>
#include <vector>

#include "wit/run/safetensors.h"

namespace wit {

// A usable verify margin: finite and above 0 (an infinite one would certify
// any forgery, a NaN one prints as null). Throws wit::Error naming the value.
void check_margin(double margin);

// One rounding of a binary32 value: 2^-24 relative.
inline constexpr double kRoundingEps = 5.9604644775390625e-08;

// The field a state tensor belongs to: "weights", "adam_m", "adam_v", or
// nullptr for the step counter (compared exactly, not by distance).
const char* state_field(const std::string& tensor_name);

// The replay R of a step against the logged state S after it and S0 before it, for one tensor:
//   distance = |R - S| / |S - S0|   (relative to the tensor's own logged update; 0 when R = S)
//   floors   = |R - S| / (eps |S|)  (in units of the tensor's float32 rounding floor)
//   floor    = eps |S| / |S - S0|   (the rounding floor relative to the update: distance = floors x floor)
// with |.| the L2 norm over the tensor's elements; an infinite value means the
// floor or the update is zero where the replay differs.
struct TensorDistance {
  std::string name;
  const char* field = nullptr;
  double distance = 0, floors = 0, floor = 0;
};
// Precondition-checked: the three lists name the same F32 tensors with the same
// shapes, in the same order; otherwise throws wit::Error naming the first mismatch.
std::vector<TensorDistance> compare_states(const std::vector<TensorView>& before, const std::vector<TensorView>& logged,
                                           const std::vector<TensorView>& replayed);

// The worst tensor of each state field (largest floors).
struct FieldDistance {
  double distance = 0, floors = 0, floor = 0;
  std::string tensor;
};
std::map<std::string, FieldDistance> worst_by_field(const std::vector<TensorDistance>& d);

// Scalar witnesses, relative: per-example losses (largest elementwise relative
// difference), grad norm, probe fingerprint (relative to its norm). Their
// rounding floor is kRoundingEps.
double losses_distance(const std::vector<float>& replayed, const std::vector<float>& logged);
double scalar_distance(double replayed, double logged);
double vector_distance(const std::vector<float>& replayed, const std::vector<float>& logged);

// A field passes when floors <= margin x max(1, noise floors); NaN never passes.
double threshold_floors(double margin, double noise_floors);
bool within(double floors, double threshold_floors);

}  // namespace wit
