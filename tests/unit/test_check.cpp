// The one check engine (check.h): checks run in order, the first rejection
// is the answer and ends the run, a wit::Error is not a rejection.
#include <catch2/catch.hpp>

#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "wit/base/check.h"
#include "wit/base/error.h"

using namespace wit;

namespace {

struct Trail {
  std::vector<std::string> ran;
  int fail_at = -1;  // the check that rejects, or none
  bool error_at_two = false;
};

template <int N>
void step(Trail& t) {
  t.ran.push_back(std::to_string(N));
  if (N == 2 && t.error_at_two) throw Error("cannot read", "x.json");
  if (t.fail_at == N) {
    if (N == 3) reject_at("third", "check 3 says no");
    reject("check " + std::to_string(N) + " says no");
  }
  reject_if(std::nullopt, "never: ");  // nothing to say: no rejection
}

std::optional<Rejection> run_all(Trail& t) { return run_checks<Trail>(t, {step<1>, step<2>, step<3>, step<4>}); }

}  // namespace

TEST_CASE("check: every check runs in order when none rejects", "[check]") {
  Trail t;
  CHECK_FALSE(run_all(t));
  CHECK(t.ran == std::vector<std::string>{"1", "2", "3", "4"});
}

TEST_CASE("check: the first rejection is the answer and later checks do not run", "[check]") {
  Trail t;
  t.fail_at = 2;
  const auto r = run_all(t);
  REQUIRE(r);
  CHECK(r->reason == "check 2 says no");
  CHECK(r->check.empty());
  CHECK(t.ran == std::vector<std::string>{"1", "2"});
  Trail named;
  named.fail_at = 3;
  const auto n = run_all(named);
  REQUIRE(n);
  CHECK(n->check == "third");
  CHECK(n->reason == "check 3 says no");
}

TEST_CASE("check: a wit::Error is not a rejection: it passes through the engine", "[check]") {
  Trail t;
  t.error_at_two = true;
  t.fail_at = 3;
  CHECK_THROWS_AS(run_all(t), Error);
  CHECK(t.ran == std::vector<std::string>{"1", "2"});
}

TEST_CASE("check: reject_if rejects with its prefix only when there is a problem", "[check]") {
  CHECK_NOTHROW(reject_if(std::nullopt));
  try {
    reject_if(Problem("the head is not signed"), "heads.jsonl:2: ");
    FAIL("no rejection");
  } catch (const Rejection& r) {
    CHECK(r.reason == "heads.jsonl:2: the head is not signed");
  }
  CHECK(Verdict::pass("shown").ok);
  CHECK(Verdict::pass("shown").summary == "shown");
  CHECK_FALSE(Verdict::fail("why").ok);
  CHECK(Verdict::fail("why").reason == "why");
}

TEST_CASE("check: a Problem is a no with its reason, or nothing", "[check]") {
  const Problem none, none2 = std::nullopt, no("the seed is wrong");
  CHECK_FALSE(none);
  CHECK_FALSE(none2);
  CHECK(none == none2);
  REQUIRE(no);
  CHECK(*no == "the seed is wrong");
  CHECK(no->size() == 17);
  CHECK(no == Problem("the seed is wrong"));
  CHECK(no != Problem("another reason"));
  CHECK(no != none);
  CHECK(none.value_or("ok") == "ok");
  CHECK(no.value_or("ok") == "the seed is wrong");
}

namespace {

void reads_bad_evidence(Trail& t) {
  t.ran.push_back("read");
  throw Error("invalid entry: truncated", "run.wlog at byte 7");
}
void cannot_work(Trail& t) {
  t.ran.push_back("tool");
  throw Error("cannot list: permission denied", "ckpt");
}
void own_record_wrong(Trail& t) {
  t.ran.push_back("own");
  throw NotEvidenceError("the index lists a missing member", "runs/a/bundle.json");
}
// What a library throws without saying where (the JSON library's type errors).
void library_throws(Trail& t) {
  t.ran.push_back("lib");
  throw std::invalid_argument("type must be string, but is number");
}
void out_of_memory(Trail& t) {
  t.ran.push_back("oom");
  throw std::bad_alloc();
}

}  // namespace

TEST_CASE("check: only the engine turns an error into a no, in rows that read the evidence", "[check]") {
  Trail t;
  // A kNo row: the malformed evidence is that row's no, with the error's message and the row's name.
  auto r = run_checks<Trail>(t, {step<1>, {reads_bad_evidence, OnError::kNo, "log"}, step<3>});
  REQUIRE(r);
  CHECK(r->reason == "invalid entry: truncated: run.wlog at byte 7");
  CHECK(r->check == "log");
  CHECK(t.ran == std::vector<std::string>{"1", "read"});
  // A plain row (kError): the error passes, the run stops.
  Trail u;
  CHECK_THROWS_WITH(run_checks<Trail>(u, {{cannot_work, OnError::kError}, step<2>}), "cannot list: permission denied: ckpt");
  CHECK(u.ran == std::vector<std::string>{"tool"});
  // A rejection from a kNo row is itself, not rewritten.
  Trail v;
  v.fail_at = 3;
  r = run_checks<Trail>(v, {{step<3>, OnError::kNo, "ignored"}});
  REQUIRE(r);
  CHECK(r->check == "third");
}

TEST_CASE("check: a NotEvidenceError stays an error even in a row that reads the evidence", "[check]") {
  Trail t;
  CHECK_THROWS_AS(run_checks<Trail>(t, {step<1>, {own_record_wrong, OnError::kNo, "log"}, step<3>}), NotEvidenceError);
  CHECK(t.ran == std::vector<std::string>{"1", "own"});
  Trail u;  // with a Reading too
  const std::string at = "final.json";
  CHECK_THROWS_WITH(run_checks<Trail>(u, {{own_record_wrong, OnError::kNo}}, Reading{&at, "the bundle"}),
                    "the index lists a missing member: runs/a/bundle.json");
}

TEST_CASE("check: with a Reading, a library's exception in a kNo row is a no naming the member read", "[check]") {
  std::string at = "manifest.json";
  const Reading reading{&at, "the bundle"};
  Trail t;
  auto r = run_checks<Trail>(t, {step<1>, {library_throws, OnError::kNo, "m"}, step<3>}, reading);
  REQUIRE(r);
  CHECK(r->reason == "manifest.json: type must be string, but is number");
  CHECK(r->check == "m");
  CHECK(t.ran == std::vector<std::string>{"1", "lib"});
  // The member is read when the exception comes, not when the table starts.
  at = "eval.json";
  Trail t2;
  r = run_checks<Trail>(t2, {{library_throws, OnError::kNo}}, reading);
  REQUIRE(r);
  CHECK(r->reason == "eval.json: type must be string, but is number");
  // Running out of memory there is a no, in the table's words.
  Trail u;
  r = run_checks<Trail>(u, {{out_of_memory, OnError::kNo}, step<2>}, reading);
  REQUIRE(r);
  CHECK(r->reason == "out of memory while reading the bundle");
  CHECK(u.ran == std::vector<std::string>{"oom"});
  // In a kError row both pass, Reading or not.
  Trail v;
  CHECK_THROWS_AS(run_checks<Trail>(v, {{library_throws, OnError::kError}}, reading), std::invalid_argument);
  CHECK_THROWS_AS(run_checks<Trail>(v, {{out_of_memory, OnError::kError}}, reading), std::bad_alloc);
}

TEST_CASE("check: without a Reading, a library's exception and out of memory pass every row", "[check]") {
  Trail t;
  CHECK_THROWS_AS(run_checks<Trail>(t, {{library_throws, OnError::kNo}}), std::invalid_argument);
  CHECK_THROWS_AS(run_checks<Trail>(t, {{out_of_memory, OnError::kNo}}), std::bad_alloc);
  CHECK(t.ran == std::vector<std::string>{"lib", "oom"});
}
