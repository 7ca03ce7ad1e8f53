// The tool's name and counts in words (cli_base.h).
#include "wit/base/cli_base.h"

namespace wit::cli {

namespace {
std::string g_tool = "wit";
}  // namespace

const std::string& tool_name() { return g_tool; }
void set_tool_name(const std::string& tool) { g_tool = tool; }

std::string count_of(uint64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many.empty() ? one + "s" : many);
}

}  // namespace wit::cli
