// Shared plumbing for the thin tool mains: CLI11 set-up, the exit-status
// contract (0 yes, 1 no, 2 error) and one-line error messages.
#pragma once
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace wit::cli {

enum Exit : int { kOk = 0, kNegative = 1, kError = 2 };

// Creates the app with --version and the house formatting.
void setup(CLI::App& app, const std::string& tool);

// Parses argv and runs `body`. CLI11 parse errors, wit::Error and any other
// exception become "TOOL: error: ..." on stderr (plus a hint line) and exit 2.
int run(CLI::App& app, int argc, char** argv, const std::function<int()>& body);

// Prints "TOOL: <msg>" on stderr (summaries and notes; callers decide about --quiet).
void note(const std::string& msg);
const std::string& tool_name();

}  // namespace wit::cli
