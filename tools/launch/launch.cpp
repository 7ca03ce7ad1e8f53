// The first stage of every tool (WIT_TOOL names it): a static program that
// blocks SIGINT and SIGTERM and executes the tool itself (libexec/wit/TOOL
// beside bin/). Before any of a dynamically linked tool's code can run, the
// dynamic loader maps its libraries: a few milliseconds, and half a second
// for LibTorch. A signal then used to end the tool without a word (exit 130
// or 143 and nothing said). Blocked, it waits until the tool's first
// instructions catch it (cli.cpp, early_signals), which say "TOOL:
// interrupted; nothing was written". The process stays the same (exec keeps
// the pid). Uses libc only, linked statically: nothing is loaded before main.
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef WIT_TOOL
#error "WIT_TOOL must name the tool"
#endif

int main(int argc, char** argv) {
  (void)argc;
  sigset_t ending, before;
  sigemptyset(&ending);
  sigaddset(&ending, SIGINT);
  sigaddset(&ending, SIGTERM);
  sigprocmask(SIG_BLOCK, &ending, &before);
  // Only what this program blocked is unblocked by the tool (a signal its
  // caller blocked stays blocked).
  char unblock[32] = "";
  if (!sigismember(&before, SIGINT)) strcat(unblock, "INT,");
  if (!sigismember(&before, SIGTERM)) strcat(unblock, "TERM,");
  if (unblock[0]) setenv("WIT_UNBLOCK", unblock, 1);
  // This program's folder: /proc/self/exe (links resolved), else argv[0]'s.
  char self[PATH_MAX], exe[PATH_MAX + 64];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0 && argv[0] && strchr(argv[0], '/')) n = (ssize_t)snprintf(self, sizeof self, "%s", argv[0]);
  if (n > 0 && (size_t)n < sizeof self) {
    self[n] = 0;
    char* slash = strrchr(self, '/');
    if (slash) *slash = 0;
    snprintf(exe, sizeof exe, "%s/../libexec/wit/%s", self, WIT_TOOL);
    execv(exe, argv);
  } else {
    snprintf(exe, sizeof exe, "/proc/self/exe");
  }
  char why[256];
  snprintf(why, sizeof why, "%s", strerror(errno));
  if (why[0] >= 'A' && why[0] <= 'Z' && why[1] >= 'a' && why[1] <= 'z') why[0] = (char)(why[0] - 'A' + 'a');
  sigprocmask(SIG_SETMASK, &before, NULL);
  fprintf(stderr, "%s: error: cannot start the tool: %s: %s\n", WIT_TOOL, why, exe);
  return 2;
}
