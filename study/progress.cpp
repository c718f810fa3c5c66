#include "study/progress.hpp"

#include <cmath>
#include <fmt/format.h>

namespace layerbench::ab {

Progress::Progress(std::FILE* stream, cli::ProgressMode mode, std::size_t total_pairs, std::size_t already_done)
    : stream_(stream), tty_(mode == cli::ProgressMode::tty), off_(mode == cli::ProgressMode::off), total_(total_pairs),
      done_(already_done), start_(std::chrono::steady_clock::now()) {}

std::string Progress::eta_text() const {
  if (done_here_ == 0) return "?";
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double remaining = static_cast<double>(total_ > done_ ? total_ - done_ : 0);
  return format_duration(elapsed / static_cast<double>(done_here_) * remaining);
}

std::string Progress::bar_text() const {
  constexpr int width = 30;
  const int filled = total_ ? static_cast<int>(width * static_cast<double>(done_) / static_cast<double>(total_)) : 0;
  return fmt::format("[{:#<{}}{:.<{}}] {}/{} pairs  ETA {}{}", "", filled, "", width - filled, done_, total_,
                     eta_text(), have_mean_ ? fmt::format("  mean delta {:+.5g}", last_mean_) : "");
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
    fmt::print(stream_, "\r{}  | {}: {}\x1b[K", bar_text(), label, format_duration(elapsed));
    bar_drawn_ = true;
  } else {
    // 30 s, then every 60 s: enough to tell a slow run from a hung one in a log.
    const long long step = elapsed < 30 ? -1 : static_cast<long long>((elapsed + 30) / 60);
    if (step <= run_shown_) return;
    run_shown_ = step;
    fmt::print(stream_, "{}: running for {}\n", label, format_duration(elapsed));
  }
  std::fflush(stream_);
}

void Progress::pair_done(std::size_t pair, double base, double candidate, double running_mean, std::size_t completed) {
  ++done_;
  ++done_here_;
  last_mean_ = running_mean;
  have_mean_ = true;
  if (off_) return;
  if (tty_) {
    fmt::print(stream_, "\r{}\x1b[K", bar_text());
    bar_drawn_ = true;
  } else {
    fmt::print(stream_, "pair {} done ({}/{}): base {:.6g} candidate {:.6g} delta {:+.5g}; running mean delta {:+.5g} "
               "over {} pairs; ETA {}\n", pair, done_, total_, base, candidate, candidate - base, running_mean,
               completed, eta_text());
  }
  std::fflush(stream_);
}

void Progress::message(const std::string& text) {
  if (tty_ && bar_drawn_) fmt::print(stream_, "\r\x1b[K");
  fmt::print(stream_, "{}\n", text);
  bar_drawn_ = false;
  std::fflush(stream_);
}

void Progress::finish() {
  if (tty_ && bar_drawn_) fmt::print(stream_, "\n");
  bar_drawn_ = false;
  std::fflush(stream_);
}

}  // namespace layerbench::ab
