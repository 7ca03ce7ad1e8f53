// Exit-status and error-message contract shared by every tool (CLI.md).
#include "wit/cli.h"

#include <cstdio>
#include <iostream>

#include "wit/error.h"
#include "wit/hash.h"

namespace wit::cli {

namespace {
std::string g_tool = "wit";

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && (s.back() == ' ' || s.back() == '.')) s.pop_back();
  // Lowercase a capitalised first word ("Could not" -> "could not"), but leave
  // names and acronyms ("EVALFILE is required", "JSON") as they are.
  if (s.size() > 1 && s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'a' && s[1] <= 'z') s[0] = char(s[0] - 'A' + 'a');
  return s;
}
}  // namespace

const std::string& tool_name() { return g_tool; }

void setup(CLI::App& app, const std::string& tool) {
  g_tool = tool;
  app.name(tool);
  app.set_version_flag("--version", tool + " " WIT_VERSION);
  app.get_formatter()->column_width(34);
}

void note(const std::string& msg) { std::cerr << g_tool << ": " << msg << "\n"; }

int run(CLI::App& app, int argc, char** argv, const std::function<int()>& body) {
  init_crypto();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << g_tool << ": error: " << one_line(e.what()) << "\n"
              << "hint: run '" << g_tool << " --help' for usage\n";
    return kError;
  }
  try {
    return body();
  } catch (const Error& e) {
    std::cerr << g_tool << ": error: " << one_line(e.what()) << "\n";
    if (!e.hint().empty()) std::cerr << "hint: " << e.hint() << "\n";
    return kError;
  } catch (const std::bad_alloc&) {
    std::cerr << g_tool << ": error: out of memory\n";
    return kError;
  } catch (const std::exception& e) {
    // Foreign exceptions (LibTorch's carry a backtrace) are cut to their first line.
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    std::cerr << g_tool << ": error: " << one_line(what) << "\n";
    return kError;
  }
}

}  // namespace wit::cli
