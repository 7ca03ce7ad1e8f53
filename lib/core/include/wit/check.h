// The one way wit says "no", and the one engine for checks run in order
// (docs/design.md, "Code rules").
//
// - A Verdict is the answer of a verifier that can also say what it showed:
//   ok with a summary, or not ok with the reason (one line). Proofs, log
//   proofs and certificates answer with it; tools print it with
//   cli::print_verdict.
// - A Problem is the answer of a check with nothing to summarise: the reason
//   why not, or nothing.
// - Checks run in order, the first failure wins: each check of a verifier is a
//   function of its context that says no by calling reject() (a helper deep in
//   it may too); run_checks runs the verifier's table, which reads as the
//   numbered list of its doc page, and returns the first Rejection.
// A wit::Error is not a "no": it is a tool that could not do its work (exit 2).
#pragma once
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

namespace wit {

struct Verdict {
  bool ok = false;
  std::string reason;   // why not, one line, when !ok
  std::string summary;  // what was shown, when ok
  static Verdict pass(std::string summary) { return {true, {}, std::move(summary)}; }
  static Verdict fail(std::string reason) { return {false, std::move(reason), {}}; }
};

// Why not, or nothing.
using Problem = std::optional<std::string>;

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

// Runs `checks` on `c` in order; the first that rejects ends the run and is
// returned. Anything else a check throws (wit::Error, std::bad_alloc) passes.
template <class Ctx>
std::optional<Rejection> run_checks(Ctx& c, std::initializer_list<Check<Ctx>> checks) {
  try {
    for (Check<Ctx> check : checks) check(c);
  } catch (Rejection& r) {
    return std::move(r);
  }
  return std::nullopt;
}

}  // namespace wit
