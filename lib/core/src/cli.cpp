// Exit-status and error-message contract shared by every tool (CLI.md).
#include "wit/cli.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>
#include <vector>

#include "wit/error.h"
#include "wit/hash.h"
#include "wit/io.h"

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

namespace {

std::set<const CLI::Option*> g_outputs;

// The interrupt line, ready before any signal can come (a handler may only
// write(2) what already exists).
std::string g_interrupt_line[2];
volatile std::sig_atomic_t g_interrupt_slot = 0;

void on_sigint(int) {
  remove_live_temporaries();  // an output half-written is no output
  const std::string& line = g_interrupt_line[g_interrupt_slot];
  if (::isatty(2)) {
    [[maybe_unused]] ssize_t w = ::write(2, "\r\033[K", 4);  // the progress bar's line
  }
  [[maybe_unused]] ssize_t w = ::write(2, line.data(), line.size());
  ::_exit(128 + SIGINT);
}

// Every parsed command on the path from the app down (app, subcommand, ...).
std::vector<const CLI::App*> parsed_chain(const CLI::App& app) {
  std::vector<const CLI::App*> out{&app};
  for (const CLI::App* a = &app;;) {
    const CLI::App* next = nullptr;
    for (const CLI::App* s : a->get_subcommands({}))
      if (s->parsed()) next = s;
    if (!next) break;
    out.push_back(next);
    a = next;
  }
  return out;
}

bool numeric_type(const std::string& t) {
  static const std::set<std::string> names = {"INT", "UINT", "FLOAT", "NUMBER", "N", "K", "P", "F", "STEP", "SIZE"};
  return names.count(t) != 0;
}

void shared_checks(const CLI::App& app) {
  std::vector<std::string> inputs, outputs;
  for (const CLI::App* a : parsed_chain(app))
    for (const CLI::Option* o : a->get_options({})) {
      if (o->count() == 0) continue;
      const bool out = g_outputs.count(o) || o->check_lname("output");
      for (const std::string& v : o->results()) {
        if (numeric_type(o->get_type_name()) && v.size() > 1 && v[0] == '-' &&
            (std::isdigit(static_cast<unsigned char>(v[1])) || v[1] == '.'))
          throw Error((o->get_lnames().empty() ? o->get_name() : "--" + o->get_lnames()[0]) + " must not be negative", v);
        (out ? outputs : inputs).push_back(v);
      }
    }
  check_outputs_apart(inputs, outputs);
}

// "A subcommand is required" and "The following arguments were not
// expected: foo" say neither which subcommand was wrong nor which exist.
std::string subcommand_problem(const CLI::App& app, int argc, char** argv) {
  const CLI::App* a = parsed_chain(app).back();
  const auto subs = a->get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); });
  if (subs.empty()) return "";
  std::string valid;
  for (const CLI::App* s : subs) valid += (valid.empty() ? "" : ", ") + s->get_name();
  // The word after the deepest parsed command's own name.
  int i = 1;
  if (a != &app)
    while (i < argc && a->get_name() != argv[i]) i++;
  for (i = a == &app ? 1 : i + 1; i < argc; i++) {
    if (argv[i][0] == '-') continue;
    return "unknown subcommand '" + std::string(argv[i]) + "' (valid: " + valid + ")";
  }
  return "missing subcommand (one of: " + valid + ")";
}

// std::filesystem's "filesystem error: cannot create directories: Not a
// directory [a/b]" as the house style says it.
std::string filesystem_message(const std::filesystem::filesystem_error& e) {
  std::string what = e.what();
  const std::string prefix = "filesystem error: ";
  if (what.compare(0, prefix.size(), prefix) == 0) what = what.substr(prefix.size());
  const size_t br = what.find(" [");
  if (br != std::string::npos) what.resize(br);
  // Drop the system's own text after the operation; it is said once, lowercased.
  const std::string sys = e.code().message();
  const size_t at = what.rfind(": " + sys);
  if (at != std::string::npos) what.resize(at);
  std::string reason = sys;
  if (!reason.empty()) reason[0] = char(std::tolower(static_cast<unsigned char>(reason[0])));
  std::string where = e.path1().string();
  if (!e.path2().empty()) where += " -> " + e.path2().string();
  return what + ": " + reason + (where.empty() ? "" : ": " + where);
}

}  // namespace

CLI::Option* mark_output(CLI::Option* o) {
  g_outputs.insert(o);
  return o;
}

void set_interrupt_note(const std::string& note) {
  const std::sig_atomic_t next = 1 - g_interrupt_slot;
  g_interrupt_line[next] = g_tool + ": interrupted; " + note + "\n";
  g_interrupt_slot = next;
}

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
  // Ranks started by a launcher stay silent: the launcher speaks for them.
  const char* rank = std::getenv("RANK");
  if (!std::getenv("WIT_LOCAL_LAUNCH") && (!rank || std::strcmp(rank, "0") == 0)) {
    g_interrupt_line[0] = g_tool + ": interrupted; nothing was written\n";
    g_interrupt_line[1] = g_interrupt_line[0];
    // A process started with SIGINT ignored (a background job of a script) keeps it so.
    struct sigaction old {};
    if (::sigaction(SIGINT, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) std::signal(SIGINT, on_sigint);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = one_line(e.what());
    if (msg.find("subcommand is required") != std::string::npos || msg.find("were not expected") != std::string::npos) {
      const std::string sub = subcommand_problem(app, argc, argv);
      if (!sub.empty()) msg = sub;
    }
    std::cerr << g_tool << ": error: " << msg << "\n"
              << "hint: run '" << g_tool << " --help' for usage\n";
    return kError;
  }
  try {
    shared_checks(app);
    return body();
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << g_tool << ": error: " << filesystem_message(e) << "\n";
    return kError;
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

std::string count_of(uint64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many.empty() ? one + "s" : many);
}

}  // namespace wit::cli
