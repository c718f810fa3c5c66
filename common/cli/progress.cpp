#include "common/cli/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>

namespace layerbench::cli {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

Progress::Progress(std::string phase, std::size_t total, std::vector<double> weights, Lines lines, std::FILE* stream)
    : phase_(std::move(phase)), total_(total), weights_(std::move(weights)), stream_(stream),
      start_(std::chrono::steady_clock::now()) {
  if (weights_.size() != total_) weights_.assign(total_, 1.0);
  total_weight_ = std::accumulate(weights_.begin(), weights_.end(), 0.0);
  const auto mode = progress_mode(stream_);
  tty_ = mode == ProgressMode::tty;
  off_ = mode == ProgressMode::off;
  if (const char* env = std::getenv("LAYERBENCH_PROGRESS"); env && std::strcmp(env, "lines") == 0)
    lines = Lines::per_step;
  lines_ = lines == Lines::per_step;
}

ProgressMode progress_mode(std::FILE* stream) {
  if (const char* mode = std::getenv("LAYERBENCH_PROGRESS")) {
    if (std::strcmp(mode, "tty") == 0) return ProgressMode::tty;
    if (std::strcmp(mode, "lines") == 0) return ProgressMode::lines;
    if (std::strcmp(mode, "off") == 0) return ProgressMode::off;
  }
  return ::isatty(::fileno(stream)) != 0 ? ProgressMode::tty : ProgressMode::lines;
}

Progress::~Progress() { finish(); }

double Progress::eta_seconds() const {
  if (done_weight_ <= 0) return -1;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return elapsed / done_weight_ * std::max(0.0, total_weight_ - done_weight_);
}

void Progress::step(const std::string& what) {
  if (done_ < weights_.size()) done_weight_ += weights_[done_];
  ++done_;
  if (off_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string eta = done_ >= total_ ? "0s" : format_duration(eta_seconds());
  if (tty_) {
    fmt::print(stream_, "\r[{}] {}/{} {}  elapsed {}  ETA {}\x1b[K", phase_, done_, total_, what,
               format_duration(elapsed), eta);
    drawn_ = true;
  } else if (lines_) {
    fmt::print(stream_, "[{}] {}/{} {} (elapsed {}, ETA {})\n", phase_, done_, total_, what, format_duration(elapsed),
               eta);
  }
  std::fflush(stream_);
}

void Progress::message(const std::string& text) {
  if (drawn_) fmt::print(stream_, "\r\x1b[K");
  drawn_ = false;
  fmt::print(stream_, "{}\n", text);
  std::fflush(stream_);
}

void Progress::finish() {
  if (drawn_) {
    fmt::print(stream_, "\r\x1b[K");
    std::fflush(stream_);
  }
  drawn_ = false;
}

}  // namespace layerbench::cli
