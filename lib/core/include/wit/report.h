// Replay report and calibration format versions, shared by wit-replay (which
// writes them) and the board (which reads reports). Format: docs/replay.md.
#pragma once

namespace wit {

inline constexpr const char* kReportFormat = "wit.report";
// Version 2: whole states compared tensor by tensor, one check per replayed
// transition ("kind": "step" for step challenges, "segment" for segment steps).
inline constexpr int kReportVersion = 2;
inline constexpr const char* kCalibrationFormat = "wit.calibration";
// Version 2: noise of whole states, in rounding floors of the worst tensor.
inline constexpr int kCalibrationVersion = 2;

}  // namespace wit
