// run_command: fork, /bin/sh -c, poll() over the two pipes until the deadline.
#include "wit/cmd/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "wit/base/error.h"
#include "wit/base/io.h"

namespace wit {

CommandResult run_command(const std::string& cmd, const std::string& input, double timeout_s, uint64_t max_out) {
  // Each pipe's read end [0] and write end [1].
  auto make_pipe = [&cmd]() {
    int p[2];
    if (::pipe(p) != 0) throw Error("cannot create a pipe: " + errno_text(), cmd);
    return std::array<Fd, 2>{Fd(p[0]), Fd(p[1])};
  };
  std::array<Fd, 2> in = make_pipe(), out = make_pipe();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("cannot start the command: " + errno_text(), cmd);
  if (pid == 0) {
    // Not the tool's handlers: a signal here must not remove the parent's
    // temporaries or speak for it (exec would reset them; this comes first).
    for (int sig : {SIGINT, SIGTERM}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) ::signal(sig, SIG_DFL);
    }
    ::setpgid(0, 0);  // its own group, so a timeout ends everything it started
    ::dup2(in[0].get(), 0);
    ::dup2(out[1].get(), 1);
    for (std::array<Fd, 2>* p : {&in, &out})
      for (Fd& f : *p) f.reset();
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  in[0].reset();
  out[1].reset();
  ::signal(SIGPIPE, SIG_IGN);  // a command that stops reading must not end us
  ::fcntl(in[1].get(), F_SETFL, O_NONBLOCK);
  CommandResult r;
  size_t written = 0;
  Fd& wfd = in[1];
  Fd& rfd = out[0];
  if (input.empty()) wfd.reset();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[65536];
  while (rfd.ok()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd fds[2];
    int n = 0;
    fds[n++] = {rfd.get(), POLLIN, 0};
    if (wfd.ok()) fds[n++] = {wfd.get(), POLLOUT, 0};
    const int rc = ::poll(fds, nfds_t(n), int(std::min<int64_t>(left.count(), 1000)));
    if (rc < 0 && errno != EINTR) break;
    if (rc <= 0) continue;
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t k = ::read(rfd.get(), buf, sizeof buf);
      if (k <= 0) {
        rfd.reset();
      } else if (r.out.size() + size_t(k) > max_out) {
        r.out_truncated = true;
        break;
      } else {
        r.out.append(buf, size_t(k));
      }
    }
    if (n == 2 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t k = ::write(wfd.get(), input.data() + written, input.size() - written);
      if (k > 0) written += size_t(k);
      if (k < 0 && errno != EAGAIN) written = input.size();  // it stopped reading
      if (written == input.size()) wfd.reset();
    }
  }
  wfd.reset();
  rfd.reset();
  if (r.timed_out || r.out_truncated) ::kill(-pid, SIGKILL);
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (w == 0 && std::chrono::steady_clock::now() >= deadline) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
    }
    if (w == 0) ::usleep(5000);
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

}  // namespace wit
