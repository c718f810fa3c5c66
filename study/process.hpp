#pragma once
// Running one shell command: fork/exec /bin/sh -c in its own process group, stdout and stderr
// captured, wall time on the monotonic clock, CPU times and peak RSS from wait4's rusage, timeout
// kills the group.
#include <csignal>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace layerbench::ab {

struct ProcessResult {
  int exit_code = 0;    // exit status, or 128 + signal
  bool timed_out = false;
  bool interrupted = false;  // stop flag raised while running: the group was killed
  double wall_seconds = 0;
  double user_seconds = 0;
  double sys_seconds = 0;
  // Largest peak resident set of the shell and the descendants it waited for (wait4's ru_maxrss:
  // the biggest single process of the tree, not a sum), in KiB.
  double peak_rss_kib = 0;
  std::string stdout_text;  // capped; the end is kept when the cap is hit
  std::string stderr_text;  // capped the same way
  std::string stderr_tail;  // its last 4 KiB, for messages
};

using Environment = std::vector<std::pair<std::string, std::string>>;

// Runs `command` through /bin/sh -c with `env` added to its environment. timeout_seconds <= 0 means
// none. When `stop` becomes non-zero (Ctrl-C), the command's process group is killed and
// `interrupted` is set.
// `tick`, when set, is called about every 100 ms with the seconds elapsed (a live progress line).
// `argv`, when given (--shell none), is executed directly (execvp) instead of /bin/sh -c `command`.
ProcessResult run_shell(const std::string& command, double timeout_seconds, const volatile std::sig_atomic_t* stop,
                        const Environment& env = {}, const std::function<void(double)>& tick = {},
                        const std::vector<std::string>* argv = nullptr);

// A command split into words as a shell would for a simple command: blanks separate words, single
// quotes keep everything, double quotes and backslashes escape; no expansion. Throws
// std::invalid_argument on an unterminated quote or an empty command.
std::vector<std::string> split_command(const std::string& command);

// Last `max_bytes` bytes of a text (for records and messages).
std::string tail_of(const std::string& text, std::size_t max_bytes);

}  // namespace layerbench::ab
