// The names of verdicts and statuses (verdict.h): their one spelling.
#include "wit/base/verdict.h"

#include "wit/base/json_fields.h"

namespace wit {

BoardStatus status_of(ReportVerdict v) {
  return v == ReportVerdict::kCertified ? BoardStatus::kCertified : BoardStatus::kRejected;
}

const char* status_name(BoardStatus s) {
  switch (s) {
    case BoardStatus::kCertified: return "certified";
    case BoardStatus::kRejected: return "rejected";
    case BoardStatus::kPending: return "pending";
  }
  return "rejected";  // not reached: every enumerator is named above
}

const char* verdict_name(ReportVerdict v) { return status_name(status_of(v)); }

ReportVerdict parse_verdict(const std::string& name, const char* kind, const std::string& where) {
  for (ReportVerdict v : {ReportVerdict::kCertified, ReportVerdict::kRejected})
    if (name == verdict_name(v)) return v;
  jsonf::bad(kind, "field 'verdict' is not \"certified\" or \"rejected\"", where);
}

}  // namespace wit
