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
// with the error's message; in any other row an error stays an error, and so
// does a NotEvidenceError in any row (the tool's own record is wrong, not the
// evidence). A table whose checks say what they are reading (Reading) has the
// engine name it in the "no" a library's exception becomes there.
#pragma once
#include <exception>
#include <initializer_list>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "wit/base/error.h"

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

// An error that is never evidence, even met in a row that reads the evidence:
// the tool's own record is wrong (a board's folder that does not match its
// index or holds a document its key did not sign: BoardFolderError). The
// engine lets it pass from every row (exit 2, never a "no").
class NotEvidenceError : public Error {
 public:
  using Error::Error;
};

// What the engine makes of a wit::Error raised inside a row of a table.
enum class OnError {
  kError,  // the tool cannot do its work: the error passes (exit 2)
  kNo,     // the row reads the evidence under judgement: malformed evidence is a "no" with the error's message
};

// What the checks of a table are reading, for the engine to name (run_checks'
// last argument): `member` points at the name of the member being read, kept
// current by the checks as they go. In a kNo row, an exception that is not a
// wit::Error (a library's, the JSON library's, which does not say where) is a
// "no" "MEMBER: WHAT", and running out of memory a "no" "out of memory while
// reading WHOLE" (evidence that asks for more memory than there is). Without
// it (member null) those pass from every row.
struct Reading {
  const std::string* member = nullptr;
  const char* whole = "";
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
// returned. A wit::Error from a kNo row is that row's rejection, unless it is
// a NotEvidenceError; with `reading`, a library's exception or running out of
// memory in a kNo row is too (Reading). Anything else a check throws passes.
// A plain check in the list is a row whose errors pass.
template <class Ctx>
std::optional<Rejection> run_checks(Ctx& c, std::initializer_list<CheckRow<Ctx>> rows, Reading reading = {}) {
  for (const CheckRow<Ctx>& row : rows) {
    try {
      row.check(c);
    } catch (Rejection& r) {
      return std::move(r);
    } catch (const NotEvidenceError&) {
      throw;
    } catch (const Error& e) {
      if (row.on_error == OnError::kError) throw;
      return Rejection{row.name, e.what()};
    } catch (const std::bad_alloc&) {
      if (row.on_error == OnError::kError || !reading.member) throw;
      return Rejection{row.name, std::string("out of memory while reading ") + reading.whole};
    } catch (const std::exception& e) {
      if (row.on_error == OnError::kError || !reading.member) throw;
      return Rejection{row.name, *reading.member + ": " + e.what()};
    }
  }
  return std::nullopt;
}

}  // namespace wit
