#include "bench/ab/process.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <poll.h>
#include <stdexcept>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

namespace layerbench::ab {
namespace {

constexpr std::size_t output_cap = 64u << 20;  // regex/json metrics read stdout and stderr; keep them bounded
constexpr std::size_t stderr_tail_cap = 4096;

void append_capped(std::string& s, const char* data, std::size_t n, std::size_t cap) {
  s.append(data, n);
  if (s.size() > cap) s.erase(0, s.size() - cap);
}

double seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + 1e-6 * static_cast<double>(tv.tv_usec); }

}  // namespace

std::string tail_of(const std::string& text, std::size_t max_bytes) {
  return text.size() <= max_bytes ? text : text.substr(text.size() - max_bytes);
}

ProcessResult run_shell(const std::string& command, double timeout_seconds, const volatile std::sig_atomic_t* stop,
                        const Environment& env, const std::function<void(double)>& tick) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // Child: own process group so a timeout can kill everything the shell started.
    ::setpgid(0, 0);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also in the parent: no race with the kill below
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  ProcessResult r;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  const bool has_timeout = timeout_seconds > 0;
  const auto deadline = start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_seconds));
  bool killed = false;
  auto kill_group = [&] {
    if (!killed) ::kill(-pid, SIGKILL);
    killed = true;
  };
  clock::time_point kill_time{};
  char buffer[65536];
  while (open_fds > 0) {
    int wait_ms = 100;  // wake up regularly to look at the stop flag
    if (has_timeout && !killed) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
      wait_ms = static_cast<int>(std::clamp<long long>(left, 0, 100));
    }
    const int ready = ::poll(fds, 2, wait_ms);
    if (ready < 0 && errno != EINTR) break;
    for (auto& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(f.fd, buffer, sizeof buffer);
      if (n > 0) {
        append_capped(f.fd == out_pipe[0] ? r.stdout_text : r.stderr_text, buffer, static_cast<std::size_t>(n),
                      output_cap);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(f.fd);
        f.fd = -1;
        --open_fds;
      }
    }
    if (tick) tick(std::chrono::duration<double>(clock::now() - start).count());
    if (!killed && stop && *stop) {
      r.interrupted = true;
      kill_group();
      kill_time = clock::now();
    }
    if (!killed && has_timeout && clock::now() >= deadline) {
      r.timed_out = true;
      kill_group();
      kill_time = clock::now();
    }
    // A daemonised grandchild may hold the pipe open past the kill: stop reading after 1 s.
    if (killed && clock::now() - kill_time > std::chrono::seconds(1)) break;
  }
  for (auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  r.wall_seconds = std::chrono::duration<double>(clock::now() - start).count();
  r.user_seconds = seconds(usage.ru_utime);
  r.sys_seconds = seconds(usage.ru_stime);
  r.peak_rss_kib = static_cast<double>(usage.ru_maxrss);  // Linux: KiB
  r.stderr_tail = tail_of(r.stderr_text, stderr_tail_cap);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  if (!killed) ::kill(-pid, SIGKILL);  // leftovers of the group (background jobs) do not outlive the run
  return r;
}

}  // namespace layerbench::ab
