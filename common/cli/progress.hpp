#pragma once
// Progress of a long phase (sweep sizes, profile components, A/B pairs, what-if levels) on
// stderr: the one progress display of every binary. On a terminal: one status line redrawn in
// place with a bar, the step count, the elapsed time, an ETA and the caller's status (e.g. the
// A/B's running paired delta). Elsewhere (logs, CI): one plain line per finished step, or nothing
// when the caller already prints a line per step (Lines::when_tty_only).
// LAYERBENCH_PROGRESS=tty|lines|off overrides the terminal detection.
#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace layerbench::cli {

std::string format_duration(double seconds);  // "42s", "3m07s", "2h05m"; "?" when unknown

// How progress is shown on `stream`: a redrawn line on a terminal, plain lines elsewhere, or
// nothing; LAYERBENCH_PROGRESS=tty|lines|off overrides the detection.
enum class ProgressMode { tty, lines, off };
ProgressMode progress_mode(std::FILE* stream);

class Progress {
 public:
  enum class Lines { per_step, when_tty_only };
  // `weights` (optional, one per step) make the ETA proportional to expected cost, e.g. bytes.
  // `already_done` steps finished before this process (a resumed study): counted as done, and
  // the ETA's rate is taken from the steps timed here only. `clock`: seconds on a monotonic
  // clock (empty: std::chrono::steady_clock; tests pass their own, so their lines are exact).
  using Clock = std::function<double()>;
  Progress(std::string phase, std::size_t total, std::vector<double> weights = {}, Lines lines = Lines::per_step,
           std::FILE* stream = stderr, std::size_t already_done = 0, Clock clock = {});
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // One step finished. `status` (optional): the caller's running state, shown after the ETA on
  // the terminal line and after the step's line elsewhere; it stays on the terminal line until
  // the next step.
  void step(const std::string& what, const std::string& status = {});
  // While a step's work is in flight (called often): its elapsed time at the end of the terminal
  // line (redrawn once a second); elsewhere a line after 30 s and every minute after that, so a
  // log tells a slow run from a hung one (printed with Lines::when_tty_only too).
  void running(const std::string& label, double elapsed_seconds);
  void message(const std::string& text);  // a line the status line must not overwrite (shown in every mode)
  void finish();                          // clears the status line (idempotent)

  double eta_seconds() const;  // negative when unknown
  std::size_t done() const { return done_; }

 private:
  std::string status_line() const;  // the terminal line without the in-flight part
  double since_start() const { return clock_() - start_; }
  void draw(const std::string& tail);
  std::string phase_;
  std::size_t total_;
  std::vector<double> weights_;
  std::FILE* stream_;
  bool tty_ = false, lines_ = true, off_ = false, drawn_ = false;
  std::size_t done_ = 0;
  double done_weight_ = 0, timed_weight_ = 0, total_weight_ = 0;  // timed: the steps done in this process
  std::string last_what_, last_status_;
  std::string run_label_;
  long long run_shown_ = -1;  // last whole second (terminal) or report step (lines) shown for the run
  Clock clock_;
  double start_ = 0;
};

}  // namespace layerbench::cli
