#pragma once
// Running one shell command: fork/exec /bin/sh -c in its own process group, stdout captured,
// wall time on the monotonic clock, user CPU time from wait4's rusage, timeout kills the group.
#include <csignal>
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
  std::string stdout_text;  // capped; the end is kept when the cap is hit
  std::string stderr_tail;
};

using Environment = std::vector<std::pair<std::string, std::string>>;

// Runs `command` through /bin/sh -c with `env` added to its environment. timeout_seconds <= 0 means
// none. When `stop` becomes non-zero (Ctrl-C), the command's process group is killed and
// `interrupted` is set.
ProcessResult run_shell(const std::string& command, double timeout_seconds, const volatile std::sig_atomic_t* stop,
                        const Environment& env = {});

// Last `max_bytes` bytes of a text (for records and messages).
std::string tail_of(const std::string& text, std::size_t max_bytes);

}  // namespace layerbench::ab
