// Shared plumbing for the thin tool mains: CLI11 set-up, the exit-status
// contract (0 yes, 1 no, 2 error) and one-line error messages.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

#include "wit/base/check.h"
#include "wit/base/cli_base.h"

namespace wit::cli {

enum Exit : int { kOk = 0, kNegative = 1, kError = 2 };

// Creates the app with --version and the house formatting.
void setup(CLI::App& app, const std::string& tool);

// Parses argv and runs `body`. CLI11 parse errors, wit::Error and any other
// exception become "TOOL: error: ..." on stderr (plus a hint line) and exit 2.
// Before `body` runs, the rules every tool shares are checked once here:
//  - no output is one of the inputs (check_outputs_apart): an option named
//    --output, or marked with mark_output, is an output; every other value
//    given is an input;
//  - no numeric option takes a negative value (CLI11 would wrap -1 into
//    2^64 - 1 for an unsigned one), nor a whole number beyond its type's
//    range (CLI11 would saturate), nor a thread count above kMaxThreads,
//    nor NaN or an infinity ("--OPT must be a finite number: nan", checked
//    while parsing). A numeric option is one whose type name says so
//    (INT, UINT, FLOAT, NUMBER, N, K, P, F, STEP, SIZE): an option that
//    names a file is typed FILE, never F;
//  - every non-positional option takes one value per occurrence (a repeated
//    file option never swallows the positional argument after it);
//  - an unknown or missing subcommand is named, with the valid ones listed.
// After `body`, stdout is flushed and checked: a failed write is exit 2.
// Ctrl-C (SIGINT) ends the tool with exit 130 after one line on stderr:
// "TOOL: interrupted; " and what set_interrupt_note says was kept, or else
// "nothing was written" when no output was published, or "it had already
// written A and B" when some were; SIGTERM the same way ("TOOL: terminated;
// ...", exit 143). Both wait for any output being created or published
// (OutputSection, io.h) and remove the temporaries of unfinished outputs,
// whichever thread made them. A signal before main (while LibTorch loads:
// the first stage, tools/launch, holds it until the handler is in place)
// gets "TOOL: interrupted; nothing was written" too.
int run(CLI::App& app, int argc, char** argv, const std::function<int()>& body);

// Marks an option whose value is a file the tool writes (besides --output).
CLI::Option* mark_output(CLI::Option* o);

// What Ctrl-C leaves and how to go on, said after "interrupted; " (e.g.
// "the run keeps its steps up to the last checkpoint; rerun the same
// command to resume"). Without one: "nothing was written".
void set_interrupt_note(const std::string& note);

// Prints "TOOL: <msg>" on stderr (summaries and notes; callers decide about --quiet).
void note(const std::string& msg);

// Prints a verdict on stdout the one way every verifying tool does:
// {"valid","reason","summary"} with --json (plus the verifier's figures,
// `details`, an object: wit-log verify's counts, audit-leaves' n), else
// "valid: SUMMARY" or "invalid: REASON". Returns the exit status: kOk, or
// kNegative.
int print_verdict(const Verdict& v, bool json, const nlohmann::json& details);
int print_verdict(const Verdict& v, bool json);

}  // namespace wit::cli
