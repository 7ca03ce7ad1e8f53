// The verdicts of wit's reports and the statuses of the board, with the one
// spelling of each ("certified", "rejected", "pending") that JSON, HTML and
// messages use (docs/replay.md, docs/eval.md, docs/board.md).
#pragma once
#include <string>

namespace wit {

// A report's verdict: a replay report (wit-replay verify) or an eval spot
// check (wit-eval check).
enum class ReportVerdict { kCertified, kRejected };

// The board's status of a run, or of one of its challenges: certified,
// rejected, or pending (a run not certified yet; a challenge without a report).
enum class BoardStatus { kCertified, kRejected, kPending };

BoardStatus status_of(ReportVerdict v);

// The names: "certified", "rejected", "pending".
const char* status_name(BoardStatus s);
const char* verdict_name(ReportVerdict v);

// A report's verdict from its name; any other name throws wit::Error
// "KIND: field 'verdict' is not "certified" or "rejected": WHERE" (one line).
ReportVerdict parse_verdict(const std::string& name, const char* kind, const std::string& where);

}  // namespace wit
