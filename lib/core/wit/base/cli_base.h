// What every layer may say the way the tools do (the part of cli.h below
// the command layer, docs/design.md §13): the tool's name that messages
// start with, a count in words, and the most threads any count of threads
// takes. cli.h includes it; the namespace is cli's, so callers spell these
// cli::count_of and so on wherever they include them from.
#pragma once
#include <cstdint>
#include <string>

namespace wit::cli {

// The most threads any -j/--threads option takes (docs/design.md, "Thread
// counts"): more than any machine wit runs on has cores, and few enough that
// a typo (-j 10000) cannot start thousands of LibTorch threads.
inline constexpr unsigned kMaxThreads = 1024;

// "1 record", "2 records": a count with its noun (plural by an s, or `many`).
std::string count_of(uint64_t n, const std::string& one, const std::string& many = "");

// The tool's name, as messages begin ("wit-commit: ..."): "wit" until
// cli::setup sets it.
const std::string& tool_name();
void set_tool_name(const std::string& tool);

}  // namespace wit::cli
