#pragma once
// Progress on stderr: a redrawn bar with ETA and the running paired mean delta on a terminal,
// one plain line per pair otherwise (logs, CI).
#include "common/cli/progress.hpp"

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>

namespace layerbench::ab {

class Progress {
 public:
  // `mode`: cli::progress_mode(stream), the one rule (LAYERBENCH_PROGRESS=tty|lines|off included);
  // off shows only messages.
  Progress(std::FILE* stream, cli::ProgressMode mode, std::size_t total_pairs, std::size_t already_done);
  // After each finished pair: its delta and the running mean of all completed deltas.
  void pair_done(std::size_t pair, double base, double candidate, double running_mean, std::size_t completed);
  // While a run is in flight (called often): its elapsed time in the bar on a terminal (redrawn once a
  // second), a line after 30 s and every minute after that elsewhere.
  void running(const std::string& label, double elapsed_seconds);
  void message(const std::string& text);  // a line that must not be overwritten by the bar
  void finish();

 private:
  std::string eta_text() const;
  std::string bar_text() const;
  std::FILE* stream_;
  bool tty_, off_;
  std::size_t total_;
  std::size_t done_;
  std::size_t done_here_ = 0;  // pairs finished in this process: the ETA rate
  std::chrono::steady_clock::time_point start_;
  bool bar_drawn_ = false;
  double last_mean_ = 0;
  bool have_mean_ = false;
  std::string run_label_;
  long long run_shown_ = -1;  // last whole second (tty) or report step (otherwise) shown for the run
};

using cli::format_duration;  // "42s", "3m07s", "2h05m"

}  // namespace layerbench::ab
