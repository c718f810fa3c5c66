#pragma once
// Progress of a long phase (sweep sizes, profile components, A/B pairs, what-if levels) on
// stderr. On a terminal: one status line redrawn in place with the step count, the elapsed
// time and an ETA. Elsewhere (logs, CI): one plain line per finished step, or nothing when the
// caller already prints a line per step (Lines::when_tty_only).
// LAYERBENCH_PROGRESS=tty|lines|off overrides the terminal detection.
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace layerbench::cli {

std::string format_duration(double seconds);  // "42s", "3m07s", "2h05m"; "?" when unknown

// How progress is shown on `stream`: a redrawn line on a terminal, plain lines elsewhere, or
// nothing; LAYERBENCH_PROGRESS=tty|lines|off overrides the detection. The one rule every
// progress display follows (this class and layerbench-ab's per-pair display).
enum class ProgressMode { tty, lines, off };
ProgressMode progress_mode(std::FILE* stream);

class Progress {
 public:
  enum class Lines { per_step, when_tty_only };
  // `weights` (optional, one per step) make the ETA proportional to expected cost, e.g. bytes.
  Progress(std::string phase, std::size_t total, std::vector<double> weights = {}, Lines lines = Lines::per_step,
           std::FILE* stream = stderr);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void step(const std::string& what);    // one step finished
  void message(const std::string& text);  // a line the status line must not overwrite
  void finish();                          // clears the status line (idempotent)

  double eta_seconds() const;  // negative when unknown
  std::size_t done() const { return done_; }

 private:
  std::string phase_;
  std::size_t total_;
  std::vector<double> weights_;
  std::FILE* stream_;
  bool tty_ = false, lines_ = true, off_ = false, drawn_ = false;
  std::size_t done_ = 0;
  double done_weight_ = 0, total_weight_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace layerbench::cli
