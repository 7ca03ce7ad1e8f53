// Shared plumbing for the thin tool mains: CLI11 set-up, the exit-status
// contract (0 yes, 1 no, 2 error) and one-line error messages.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

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
//    2^64 - 1 for an unsigned one);
//  - an unknown or missing subcommand is named, with the valid ones listed.
// Ctrl-C (SIGINT) ends the tool with exit 130 after one line on stderr:
// "TOOL: interrupted" and what set_interrupt_note says was kept.
int run(CLI::App& app, int argc, char** argv, const std::function<int()>& body);

// Marks an option whose value is a file the tool writes (besides --output).
CLI::Option* mark_output(CLI::Option* o);

// What Ctrl-C leaves and how to go on, said after "interrupted; " (e.g.
// "the run keeps its steps up to the last checkpoint; rerun the same
// command to resume"). Without one: "nothing was written".
void set_interrupt_note(const std::string& note);

// Prints "TOOL: <msg>" on stderr (summaries and notes; callers decide about --quiet).
void note(const std::string& msg);
// "1 record", "2 records": a count with its noun (plural by an s, or `many`).
std::string count_of(uint64_t n, const std::string& one, const std::string& many = "");
const std::string& tool_name();

}  // namespace wit::cli
