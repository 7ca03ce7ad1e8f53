// The one way wit says "no", and the one engine for checks run in order
// (docs/design.md, "Code rules").
//
// A check passes, says "no" with a reason (one line), or cannot do its work
// (a wit::Error: exit 2, never a "no"). The "no" has one shape at each level:
// - Problem: what a check with nothing to summarise answers: a "no" and its
//   reason, or nothing (ok). Never a "" or an optional string meaning ok.
// - Verdict: what a verifier answers: ok with what it showed (a one-line
//   summary), or a "no" with its reason. A verifier with figures to report
//   derives from it (RunVerdict, LeavesAudit). Every tool prints it with
//   cli::print_verdict, one way.
// - Rejection: a "no" raised inside a check (reject()), naming the check
//   where a verifier's report names it.
// Checks run in order, the first "no" wins: each check of a verifier is a
// function of its context that says no by calling reject() (a helper deep in
// it may too); run_checks runs the verifier's table, which reads as the
// numbered list of its doc page (a cli test compares the two), and returns
// the first Rejection. Only the engine turns an error into a "no": a row of
// the table that reads the evidence under judgement says so (OnError::kNo),
// and a wit::Error raised in it (malformed evidence) becomes that row's "no"
// with the error's message; in any other row an error stays an error.
#pragma once
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include "wit/error.h"

namespace wit {

// A "no" and its reason, or nothing (ok).
class Problem {
 public:
  Problem() = default;                                                    // ok
  Problem(std::nullopt_t) {}                                              // ok, as `return std::nullopt;` reads
  Problem(std::string reason) : no_(true), reason_(std::move(reason)) {}  // no, and why
  Problem(const char* reason) : Problem(std::string(reason)) {}
  // True when the check says no.
  explicit operator bool() const { return no_; }
  bool has_value() const { return no_; }
  // The reason (only when it says no).
  const std::string& operator*() const { return reason_; }
  const std::string* operator->() const { return &reason_; }
  std::string value_or(std::string ok) const { return no_ ? reason_ : std::move(ok); }
  friend bool operator==(const Problem& a, const Problem& b) { return a.no_ == b.no_ && a.reason_ == b.reason_; }
  friend bool operator!=(const Problem& a, const Problem& b) { return !(a == b); }

 private:
  bool no_ = false;
  std::string reason_;
};

struct Verdict {
  bool ok = false;
  std::string reason;   // why not, one line, when !ok
  std::string summary;  // what was shown, when ok
  static Verdict pass(std::string summary) { return {true, {}, std::move(summary)}; }
  static Verdict fail(std::string reason) { return {false, std::move(reason), {}}; }
};

// A check said no: `reason` is the verdict's reason; `check` names the check
// where a verifier reports it (a replay report's "failed" field), else "".
struct Rejection {
  std::string check;
  std::string reason;
};

// Says no from inside a check (throws the Rejection run_checks catches).
[[noreturn]] inline void reject(std::string reason) { throw Rejection{{}, std::move(reason)}; }
[[noreturn]] inline void reject_at(std::string check, std::string reason) {
  throw Rejection{std::move(check), std::move(reason)};
}
// reject(PREFIX + problem) when there is one.
inline void reject_if(const Problem& p, const std::string& prefix = {}) {
  if (p) reject(prefix + *p);
}

template <class Ctx>
using Check = void (*)(Ctx&);

// What the engine makes of a wit::Error raised inside a row of a table.
enum class OnError {
  kError,  // the tool cannot do its work: the error passes (exit 2)
  kNo,     // the row reads the evidence under judgement: malformed evidence is a "no" with the error's message
};

// A row of a check table: the check, what its errors are, and the name a
// "no" from an error carries (as reject_at's; "" for none).
template <class Ctx>
struct CheckRow {
  Check<Ctx> check;
  OnError on_error = OnError::kError;
  const char* name = "";
  CheckRow(Check<Ctx> c, OnError e = OnError::kError, const char* n = "") : check(c), on_error(e), name(n) {}
};

// Runs `rows` on `c` in order; the first that rejects ends the run and is
// returned. A wit::Error from a kNo row is that row's rejection; anything
// else a check throws (wit::Error elsewhere, std::bad_alloc) passes. A plain
// check in the list is a row whose errors pass.
template <class Ctx>
std::optional<Rejection> run_checks(Ctx& c, std::initializer_list<CheckRow<Ctx>> rows) {
  for (const CheckRow<Ctx>& row : rows) {
    try {
      row.check(c);
    } catch (Rejection& r) {
      return std::move(r);
    } catch (const Error& e) {
      if (row.on_error == OnError::kError) throw;
      return Rejection{row.name, e.what()};
    }
  }
  return std::nullopt;
}

}  // namespace wit
