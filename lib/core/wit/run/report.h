// The replay report and the calibration file, typed: written by wit-replay,
// read by wit-board and the report matcher. One owner for their formats
// (docs/replay.md, "The calibration file" and "The report").
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/check.h"
#include "wit/base/bytes.h"
#include "wit/run/challenge.h"
#include "wit/base/verdict.h"

namespace wit {

inline constexpr const char* kReportFormat = "wit.report";
// Version 3: "mode" ("exact": replayed roots equal the logged ones; "tolerant":
// per-tensor thresholds) and the recorded "configuration". Version 2 reports
// (tolerant, before modes) are still read, as mode "tolerant".
inline constexpr int kReportVersion = 3;
inline constexpr const char* kCalibrationFormat = "wit.calibration";
// Version 2: noise of whole states, in rounding floors of the worst tensor.
inline constexpr int kCalibrationVersion = 2;
// The most checks a report may hold (a step challenge's k plus a segment's
// transitions are bounded by the head size; this bounds what a parser allocates).
inline constexpr size_t kMaxReportChecks = 1u << 20;

// The fields compared on a replayed step: the whole state's W, m and v tensor
// by tensor (each field's worst tensor), and the per-example losses, grad norm
// and probe fingerprint of the entry.
inline constexpr const char* kStateFields[] = {"weights", "adam_m", "adam_v"};
inline constexpr const char* kScalarFields[] = {"losses", "grad_norm", "probe"};
inline constexpr const char* kReplayFields[] = {"weights", "adam_m", "adam_v", "losses", "grad_norm", "probe"};

// Measured replay noise: for each field, the largest difference seen between
// replays of the same step under different thread counts, in units of the
// float32 rounding floor (for W, m, v: of the worst tensor, |A - B| / (2^-24 |A|)),
// so it carries over to steps with smaller updates.
struct Calibration {
  std::string run_id;                    // hex, or "" (a placeholder)
  std::vector<unsigned> threads;         // the two thread counts compared
  std::vector<int64_t> steps;            // steps replayed
  std::map<std::string, double> noise;   // field -> max noise in floors

  double noise_of(const std::string& field) const;  // 0 when not measured
  nlohmann::json to_json() const;
  // Throws wit::Error ("invalid calibration: ...", "unsupported calibration version ...").
  static Calibration from_json(const nlohmann::json& j, const std::string& where);
  static Calibration load(const std::string& path);
};

enum class CheckKind { kStep, kSegment };
// Its name in reports and board.json: "step" or "segment".
const char* check_kind_name(CheckKind k);

// For W, m and v: the tensor farthest from the replay, in rounding floors.
struct WorstTensor {
  std::string tensor;
  double floors = 0;            // may be infinite
  double threshold_floors = 0;
  bool operator==(const WorstTensor& o) const;
};

// One replayed transition s (the state after s - 1 to the state after s).
struct ReportCheck {
  CheckKind kind = CheckKind::kStep;
  int64_t step = 0;
  int64_t segment_from = 0, segment_to = 0;  // kSegment only
  bool pass = false;
  std::string failed;   // the check that failed ("" when it passed)
  std::string reason;   // why ("" when it passed)
  std::map<std::string, double> distances, thresholds;  // infinite allowed ("inf" in JSON)
  std::map<std::string, WorstTensor> worst_tensors;
  // Tolerant mode: for W, m and v the tensor with the largest threshold (the
  // most slack this transition allowed), its distance and threshold in floors.
  std::map<std::string, WorstTensor> slack;
  double seconds = 0;
  bool operator==(const ReportCheck& o) const;
};

struct ReplayReport {
  Hash32 run_id;
  uint64_t head_size = 0;
  Hash32 head_root;
  Hash32 challenge_seed;
  ReportVerdict verdict = ReportVerdict::kRejected;
  std::string reason;           // the first failure; "" when certified
  Guarantee guarantee;          // the challenge's
  std::string mode = "exact";   // "exact" or "tolerant"
  nlohmann::json configuration; // the run's recorded configuration (run_config.h) replayed under; null if none
  Calibration calibration;      // tolerant: the largest noise per field, for information; exact: a placeholder
  double margin = 0;            // tolerant: the margin used; exact: 0
  std::vector<ReportCheck> checks;  // step challenges in challenge order, then segment transitions
  double replay_seconds = 0, total_seconds = 0;

  // An empty report on `c`: its run, head, seed and guarantee filled in.
  static ReplayReport answering(const Challenge& c);
  bool certified() const { return verdict == ReportVerdict::kCertified; }
  // The steps of the "step" checks, in order (what a certified report must
  // match with its challenge's steps; segment checks are not uniform draws).
  std::vector<int64_t> step_checks() const;
  // Whether this report answers challenge `c` (its run, head size and root,
  // and challenge seed): nothing, or why not, for the board's check 8 and
  // wit-board add ("is a report on another run", "is for another head than
  // its challenge's", "answers another challenge (challenge seed differs)").
  Problem answer_problem(const Challenge& c) const;
  nlohmann::json to_json() const;
  // Checks every field's type and the envelope; throws wit::Error ("not a
  // replay report", "unsupported report version ...", "invalid replay report:
  // ..."). A certified report with a failed check, or a rejected one
  // without a reason, is refused.
  static ReplayReport from_json(const nlohmann::json& j, const std::string& where);
  static ReplayReport parse(const std::string& text, const std::string& where);
};

// A number as the reports write it: finite numbers as numbers, others as "inf".
nlohmann::json report_number(double x);

}  // namespace wit
