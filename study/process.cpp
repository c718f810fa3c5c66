#include "study/process.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <fcntl.h>
#include <poll.h>
#include <stdexcept>
#include <cstring>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

namespace layerbench::ab {
namespace {

constexpr std::size_t output_cap = 16u << 20;  // regex/json metrics read the last 16 MB of stdout and of stderr
constexpr std::size_t stderr_tail_cap = 4096;

// Keeps the last `cap` bytes; trims only at twice the cap, so a huge output costs linear time.
void append_capped(std::string& s, const char* data, std::size_t n, std::size_t cap) {
  s.append(data, n);
  if (s.size() > 2 * cap) s.erase(0, s.size() - cap);
}

void trim_to(std::string& s, std::size_t cap) {
  if (s.size() > cap) s.erase(0, s.size() - cap);
}

// The arm guard: a small process forked once, before the first run, that outlives a SIGKILLed
// layerbench-ab long enough to kill the arm it was running. It reads the process group of each
// run from a pipe; when the pipe reports end-of-file (layerbench-ab is gone, however it ended)
// it kills the last group it was told about. Each run's shell waits for a byte on a second pipe
// until the guard knows its group, so no run can start unguarded.
class ArmGuard {
 public:
  static ArmGuard& get() {
    static ArmGuard guard;
    return guard;
  }
  // Tells the guard that `pgid` runs now (0: nothing runs).
  void running(pid_t pgid) {
    if (fd_ < 0) return;
    const std::int32_t v = pgid;
    (void)!::write(fd_, &v, sizeof v);
  }

 private:
  ArmGuard() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return;
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(p[0]);
      ::close(p[1]);
      return;
    }
    if (pid == 0) watch(p[0], p[1]);
    ::close(p[0]);
    fd_ = p[1];
  }
  [[noreturn]] static void watch(int in, int out) {
    ::close(out);
    // Never holds what layerbench-ab holds: the study lock, the caller's pipes, the terminal.
    const int devnull = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) ::dup2(devnull, fd);
    for (int fd = 3; fd < 1024; ++fd)
      if (fd != in) ::close(fd);
    ::signal(SIGINT, SIG_IGN);  // Ctrl-C reaches layerbench-ab, which ends its runs itself
    ::signal(SIGTERM, SIG_IGN);
    ::signal(SIGHUP, SIG_IGN);
    ::setpgid(0, 0);  // out of layerbench-ab's group: a signal to that group does not end the guard
    std::int32_t current = 0, v = 0;
    for (;;) {
      const ssize_t n = ::read(in, &v, sizeof v);
      if (n == static_cast<ssize_t>(sizeof v)) {
        current = v;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      break;  // end-of-file: layerbench-ab is gone
    }
    if (current > 0) ::kill(-current, SIGKILL);
    ::_exit(0);
  }
  int fd_ = -1;
};

double seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + 1e-6 * static_cast<double>(tv.tv_usec); }

}  // namespace

std::string tail_of(const std::string& text, std::size_t max_bytes) {
  return text.size() <= max_bytes ? text : text.substr(text.size() - max_bytes);
}

std::vector<std::string> split_command(const std::string& command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (quote == '\'') {
      if (c == '\'') quote = 0;
      else word += c;
    } else if (quote == '"') {
      if (c == '"') quote = 0;
      else if (c == '\\' && i + 1 < command.size() && std::strchr("\"\\$`", command[i + 1])) word += command[++i];
      else word += c;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word)), word.clear();
      in_word = false;
    } else {
      in_word = true;
      if (c == '\'' || c == '"') quote = c;
      else if (c == '\\' && i + 1 < command.size()) word += command[++i];
      else word += c;
    }
  }
  if (quote) throw std::invalid_argument("unterminated quote in '" + command + "'");
  if (in_word) words.push_back(std::move(word));
  if (words.empty()) throw std::invalid_argument("empty command");
  return words;
}

ProcessResult run_shell(const std::string& command, double timeout_seconds, const volatile std::sig_atomic_t* stop,
                        const Environment& env, const std::function<void(double)>& tick,
                        const std::vector<std::string>* argv) {
  ArmGuard& guard = ArmGuard::get();
  std::vector<char*> args;  // built before fork: nothing allocates in the child
  if (argv) {
    for (const auto& a : *argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
  }
  int out_pipe[2], err_pipe[2], go_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 || ::pipe2(go_pipe, O_CLOEXEC) != 0) {
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
    // Start only once the guard knows this group; end-of-file instead means the parent died.
    ::close(go_pipe[1]);
    char go = 0;
    ssize_t got = 0;
    while ((got = ::read(go_pipe[0], &go, 1)) < 0 && errno == EINTR) {
    }
    if (got != 1) ::_exit(127);
    if (argv) ::execvp(args[0], args.data());
    else ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also in the parent: no race with the kill below
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(go_pipe[0]);
  guard.running(pid);
  (void)!::write(go_pipe[1], "g", 1);
  ::close(go_pipe[1]);

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
  trim_to(r.stdout_text, output_cap);
  trim_to(r.stderr_text, output_cap);
  r.wall_seconds = std::chrono::duration<double>(clock::now() - start).count();
  r.user_seconds = seconds(usage.ru_utime);
  r.sys_seconds = seconds(usage.ru_stime);
  r.peak_rss_kib = static_cast<double>(usage.ru_maxrss);  // Linux: KiB
  r.stderr_tail = tail_of(r.stderr_text, stderr_tail_cap);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  if (!killed) ::kill(-pid, SIGKILL);  // leftovers of the group (background jobs) do not outlive the run
  guard.running(0);
  return r;
}

}  // namespace layerbench::ab
