// Exit-status and error-message contract shared by every tool (CLI.md).
#include "wit/cmd/cli.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/base/io.h"

namespace wit::cli {

namespace {
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

// What the interrupt line says was kept (set_interrupt_note), ready before
// any signal can come (a handler may only write(2) what already exists);
// empty: the handler says what was written, or that nothing was.
std::string g_interrupt_note[2];
volatile std::sig_atomic_t g_interrupt_slot = 0;
std::atomic<bool> g_handling{false};

void say(const char* s, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(2, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w;
    n -= size_t(w);
  }
}
void say(const char* s) { say(s, std::strlen(s)); }

void on_signal(int sig) {
  // A second signal, on another thread, waits for the first to end the process.
  if (g_handling.exchange(true)) for (;;) ::pause();
  remove_live_temporaries();  // an output half-written is no output; none is begun or published after this
  if (::isatty(2)) say("\r\033[K");  // the progress bar's line
  // "TOOL: interrupted; ..." for Ctrl-C, "TOOL: terminated; ..." for SIGTERM.
  say(tool_name().data(), tool_name().size());
  say(sig == SIGTERM ? ": terminated; " : ": interrupted; ");
  const std::string& note = g_interrupt_note[g_interrupt_slot];
  static char written[2048];
  if (!note.empty()) {
    say(note.data(), note.size());
  } else if (written_outputs(written, sizeof written) == 0) {
    say("nothing was written");
  } else {
    say("it had already written ");
    say(written);
  }
  say("\n");
  ::_exit(128 + sig);
}

// Installs `handler` for SIGINT and SIGTERM, unless the process was started
// with the signal ignored (a background job of a script keeps it so). Each
// blocks both while it runs, so one never interrupts the other on a thread.
void catch_signals(void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) ::sigaction(sig, &sa, nullptr);
  }
}

// Before main: a tool linked with LibTorch spends about half a second in its
// libraries' start-up before main runs, and a signal then would end it
// without a word. This runs first (.preinit_array, before any library's
// initialiser) and says the one true thing: nothing was written yet. The
// dynamic loader's part of the start-up, before this can run, is covered by
// the first stage (tools/launch), which holds the signals until here.
char g_early_line[256];
size_t g_early_len = 0;
void on_early_signal(int sig) {
  [[maybe_unused]] ssize_t w = ::write(2, g_early_line, g_early_len);
  const char* rest = sig == SIGTERM ? "terminated; nothing was written\n" : "interrupted; nothing was written\n";
  [[maybe_unused]] ssize_t r = ::write(2, rest, std::strlen(rest));
  ::_exit(128 + sig);
}
void early_signals(int argc, char** argv, char** envp) {
  bool silent = false;  // ranks started by a launcher stay silent (see run)
  for (char** e = envp; e && *e; e++)
    if (std::strncmp(*e, "WIT_LOCAL_LAUNCH=", 17) == 0 || (std::strncmp(*e, "RANK=", 5) == 0 && std::strcmp(*e, "RANK=0") != 0))
      silent = true;
  if (!silent && argc >= 1 && argv && argv[0]) {
    const char* base = std::strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    const size_t n = std::min(std::strlen(base), sizeof g_early_line - 3);
    std::memcpy(g_early_line, base, n);
    std::memcpy(g_early_line + n, ": ", 2);
    g_early_len = n + 2;
    catch_signals(on_early_signal);
  }
  // The signals a first stage held while LibTorch loaded (tools/launch,
  // exec_holding_signals), let through now that they are caught: one that
  // came meanwhile is handled at once. The variable leaves the environment
  // (no libc here that allocates: the array is shifted in place).
  for (char** e = envp; e && *e; e++) {
    if (std::strncmp(*e, "WIT_UNBLOCK=", 12) != 0) continue;
    sigset_t held;
    sigemptyset(&held);
    if (std::strstr(*e, "INT,")) sigaddset(&held, SIGINT);
    if (std::strstr(*e, "TERM,")) sigaddset(&held, SIGTERM);
    for (char** f = e; *f; f++) f[0] = f[1];
    ::sigprocmask(SIG_UNBLOCK, &held, nullptr);
    break;
  }
}
__attribute__((section(".preinit_array"), used)) void (*g_early_signals)(int, char**, char**) = early_signals;

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

// Every option that names things (a file, a record) takes one value per
// occurrence, as the man pages say: "--eval a.txt cert.json" must leave
// cert.json to the positional argument, not swallow it. CLI11 lets a vector
// option take every following word unless told otherwise.
void one_value_each(CLI::App& app) {
  for (CLI::Option* o : app.get_options({})) {
    if (o->get_positional() || !o->get_allow_extra_args()) continue;
    if (o->get_expected_max() > 1 || o->get_items_expected_max() > 1) {
      o->expected(1);  // and repeated for more: every occurrence's value is kept
      o->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    }
    o->allow_extra_args(false);
  }
  for (CLI::App* s : app.get_subcommands({})) one_value_each(*s);
}

std::string option_words(const CLI::Option* o) {
  return o->get_lnames().empty() ? o->get_name() : "--" + o->get_lnames()[0];
}

// A whole number too large for its option is an error, never the largest
// value (CLI11 saturates: 2^64 became 2^64 - 1, 2^63 became 2^63 - 1).
// Unsigned options ("UINT") hold up to 2^64 - 1; every other integer option
// up to 2^63 - 1 (none needs more).
void check_range(const CLI::Option* o, const std::string& v) {
  size_t i = v[0] == '+' ? 1 : 0;
  if (i >= v.size() || v.find_first_not_of("0123456789", i) != std::string::npos) return;  // not a plain integer
  const std::string digits = v.substr(std::min(v.find_first_not_of('0', i), v.size() - 1));
  const std::string max = o->get_type_name() == "UINT" ? "18446744073709551615" : "9223372036854775807";
  if (digits.size() > max.size() || (digits.size() == max.size() && digits > max))
    throw Error(option_words(o) + " is out of range (at most " + max + ")", v);
}

// NaN and the infinities are no value any option means (a tolerance of nan
// accepts everything; an infinite fraction or timeout means nothing), yet
// CLI11 takes "nan", "inf" and "1e999" (which overflows to inf). Every
// numeric option checks its values as they are parsed, before CLI11 says
// that a required option is missing, so the message names the real fault.
class NotFinite : public CLI::ParseError {
 public:
  explicit NotFinite(const std::string& msg) : CLI::ParseError("NotFinite", msg, CLI::ExitCodes::ValidationError) {}
};

void finite_numbers(CLI::App& app) {
  for (CLI::Option* o : app.get_options({})) {
    if (!numeric_type(o->get_type_name())) continue;
    o->check(CLI::Validator(
        [o](std::string& v) -> std::string {
          char* end = nullptr;
          const double d = std::strtod(v.c_str(), &end);
          // Not a ValidationError, which CLI11 would prefix with the option's name: this is the whole line.
          if (!v.empty() && end == v.c_str() + v.size() && !std::isfinite(d))
            throw NotFinite(option_words(o) + " must be a finite number: " + v);
          return "";
        },
        ""));
  }
  for (CLI::App* s : app.get_subcommands({})) finite_numbers(*s);
}

void check_threads(const CLI::Option* o, const std::string& v) {
  if (v.find_first_not_of("0123456789") != std::string::npos || v.size() > 9) return;  // check_range speaks
  if (std::stoul(v) > kMaxThreads)
    throw Error(option_words(o) + " " + v + " is more than " + std::to_string(kMaxThreads) + " threads", option_words(o),
                "use -j 0 for all cores, or a count up to " + std::to_string(kMaxThreads));
}

void shared_checks(const CLI::App& app) {
  std::vector<std::string> inputs, outputs;
  for (const CLI::App* a : parsed_chain(app))
    for (const CLI::Option* o : a->get_options({})) {
      if (o->count() == 0) continue;
      const bool out = g_outputs.count(o) || o->check_lname("output");
      const bool numeric = numeric_type(o->get_type_name());
      for (const std::string& v : o->results()) {
        if (numeric && v.size() > 1 && v[0] == '-' &&
            (std::isdigit(static_cast<unsigned char>(v[1])) || v[1] == '.'))
          throw Error(option_words(o) + " must not be negative", v);
        if (numeric && !v.empty()) check_range(o, v);
        if (numeric && !o->get_lnames().empty() && o->get_lnames()[0].rfind("threads", 0) == 0) check_threads(o, v);
        (out ? outputs : inputs).push_back(v);
      }
    }
  check_outputs_apart(inputs, outputs);
}

// Whatever the tool printed must have reached stdout: a full disk or a
// closed pipe is an error (exit 2), not a success with a lost report.
void check_stdout() {
  errno = 0;
  std::cout.flush();
  if (!std::cout.good() || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int err = errno;
    const std::string why = err ? errno_text(err) : "write error";  // errno is gone when an earlier flush failed
    throw Error("cannot write: " + why, "stdout");
  }
}

// "A subcommand is required" and "The following arguments were not
// expected: foo" say neither which subcommand was wrong nor which exist:
// this says both, or nothing when the command has no subcommands.
Problem subcommand_problem(const CLI::App& app, int argc, char** argv) {
  const CLI::App* a = parsed_chain(app).back();
  const auto subs = a->get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); });
  if (subs.empty()) return std::nullopt;
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
  g_interrupt_note[next] = note;
  g_interrupt_slot = next;
}

void setup(CLI::App& app, const std::string& tool) {
  set_tool_name(tool);
  app.name(tool);
  app.set_version_flag("--version", tool + " " WIT_VERSION);
  app.get_formatter()->column_width(34);
}

void note(const std::string& msg) { std::cerr << tool_name() << ": " << msg << "\n"; }

int run(CLI::App& app, int argc, char** argv, const std::function<int()>& body) {
  init_crypto();
  // Ranks started by a launcher stay silent: the launcher speaks for them.
  const char* rank = std::getenv("RANK");
  if (!std::getenv("WIT_LOCAL_LAUNCH") && (!rank || std::strcmp(rank, "0") == 0)) catch_signals(on_signal);
  one_value_each(app);
  finite_numbers(app);
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
      if (const Problem sub = subcommand_problem(app, argc, argv)) msg = *sub;
    }
    std::cerr << tool_name() << ": error: " << msg << "\n"
              << "hint: run '" << tool_name() << " --help' for usage\n";
    return kError;
  }
  try {
    shared_checks(app);
    const int rc = body();
    check_stdout();
    return rc;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << tool_name() << ": error: " << filesystem_message(e) << "\n";
    return kError;
  } catch (const Error& e) {
    std::cerr << tool_name() << ": error: " << one_line(e.what()) << "\n";
    if (!e.hint().empty()) std::cerr << "hint: " << e.hint() << "\n";
    return kError;
  } catch (const nlohmann::json::exception& e) {
    // A JSON value of the wrong type that no reader caught: said without the library's "[json.exception...]" tag.
    std::string what = e.what();
    const size_t tag = what.find("] ");
    if (what.rfind("[json.exception", 0) == 0 && tag != std::string::npos) what = what.substr(tag + 2);
    std::cerr << tool_name() << ": error: invalid json value: " << one_line(what) << "\n";
    return kError;
  } catch (const std::bad_alloc&) {
    std::cerr << tool_name() << ": error: out of memory\n";
    return kError;
  } catch (const std::exception& e) {
    // Foreign exceptions (LibTorch's carry a backtrace) are cut to their first line.
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    std::cerr << tool_name() << ": error: " << one_line(what) << "\n";
    return kError;
  }
}

int print_verdict(const Verdict& v, bool json, const nlohmann::json& details) {
  if (json) {
    nlohmann::json j = details;
    j["valid"] = v.ok;
    j["reason"] = v.reason;
    j["summary"] = v.summary;
    std::cout << j.dump() << "\n";
  } else {
    std::cout << (v.ok ? "valid: " + v.summary : "invalid: " + v.reason) << "\n";
  }
  return v.ok ? kOk : kNegative;
}

int print_verdict(const Verdict& v, bool json) { return print_verdict(v, json, nlohmann::json::object()); }

}  // namespace wit::cli
