#include "common/cli/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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

ProgressMode progress_mode(std::FILE* stream) {
  if (const char* mode = std::getenv("LAYERBENCH_PROGRESS")) {
    if (std::strcmp(mode, "tty") == 0) return ProgressMode::tty;
    if (std::strcmp(mode, "lines") == 0) return ProgressMode::lines;
    if (std::strcmp(mode, "off") == 0) return ProgressMode::off;
  }
  return ::isatty(::fileno(stream)) != 0 ? ProgressMode::tty : ProgressMode::lines;
}

Progress::Progress(std::string phase, std::size_t total, std::vector<double> weights, Lines lines, std::FILE* stream,
                   std::size_t already_done, Clock clock)
    : phase_(std::move(phase)), total_(total), weights_(std::move(weights)), stream_(stream),
      done_(std::min(already_done, total)), clock_(std::move(clock)) {
  if (!clock_) {
    clock_ = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
  }
  start_ = clock_();
  if (weights_.size() != total_) weights_.assign(total_, 1.0);
  total_weight_ = std::accumulate(weights_.begin(), weights_.end(), 0.0);
  done_weight_ = std::accumulate(weights_.begin(), weights_.begin() + static_cast<std::ptrdiff_t>(done_), 0.0);
  const auto mode = progress_mode(stream_);
  tty_ = mode == ProgressMode::tty;
  off_ = mode == ProgressMode::off;
  if (const char* env = std::getenv("LAYERBENCH_PROGRESS"); env && std::strcmp(env, "lines") == 0)
    lines = Lines::per_step;  // asked for
  lines_ = lines == Lines::per_step;
}

Progress::~Progress() { finish(); }

double Progress::eta_seconds() const {
  if (timed_weight_ <= 0) return -1;
  return since_start() / timed_weight_ * std::max(0.0, total_weight_ - done_weight_);
}

std::string Progress::status_line() const {
  constexpr int width = 20;
  const int filled = total_ ? static_cast<int>(width * static_cast<double>(std::min(done_, total_)) /
                                               static_cast<double>(total_))
                            : 0;
  return fmt::format("[{}] [{:#<{}}{:.<{}}] {}/{}{}{}  elapsed {}  ETA {}{}{}", phase_, "", filled, "", width - filled,
                     done_, total_, last_what_.empty() ? "" : " ", last_what_, format_duration(since_start()),
                     done_ >= total_ ? "0s" : format_duration(eta_seconds()), last_status_.empty() ? "" : "  ",
                     last_status_);
}

void Progress::draw(const std::string& tail) {
  fmt::print(stream_, "\r{}{}\x1b[K", status_line(), tail);
  drawn_ = true;
  std::fflush(stream_);
}

void Progress::step(const std::string& what, const std::string& status) {
  if (done_ < weights_.size()) {
    done_weight_ += weights_[done_];
    timed_weight_ += weights_[done_];
  }
  ++done_;
  last_what_ = what;
  last_status_ = status;
  run_label_.clear();
  if (off_) return;
  if (tty_) {
    draw("");
  } else if (lines_) {
    fmt::print(stream_, "[{}] {}/{} {} (elapsed {}, ETA {}){}{}\n", phase_, done_, total_, what,
               format_duration(since_start()), done_ >= total_ ? "0s" : format_duration(eta_seconds()),
               status.empty() ? "" : ": ", status);
    std::fflush(stream_);
  }
}

void Progress::running(const std::string& label, double elapsed) {
  if (off_) return;
  if (label != run_label_) {
    run_label_ = label;
    run_shown_ = -1;
  }
  if (tty_) {
    const auto second = static_cast<long long>(elapsed);
    if (second == run_shown_) return;
    run_shown_ = second;
    draw(fmt::format("  | {}: {}", label, format_duration(elapsed)));
    return;
  }
  // 30 s, then every 60 s: enough to tell a slow run from a hung one in a log.
  const long long report = elapsed < 30 ? -1 : static_cast<long long>((elapsed + 30) / 60);
  if (report <= run_shown_) return;
  run_shown_ = report;
  fmt::print(stream_, "{}: running for {}\n", label, format_duration(elapsed));
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
