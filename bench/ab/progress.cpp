#include "bench/ab/progress.hpp"

#include <cmath>
#include <fmt/format.h>

namespace layerbench::ab {

Progress::Progress(std::FILE* stream, bool tty, std::size_t total_pairs, std::size_t already_done)
    : stream_(stream), tty_(tty), total_(total_pairs), done_(already_done), start_(std::chrono::steady_clock::now()) {}

std::string Progress::eta_text() const {
  if (done_here_ == 0) return "?";
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double remaining = static_cast<double>(total_ > done_ ? total_ - done_ : 0);
  return format_duration(elapsed / static_cast<double>(done_here_) * remaining);
}

void Progress::pair_done(std::size_t pair, double base, double candidate, double running_mean, std::size_t completed) {
  ++done_;
  ++done_here_;
  if (tty_) {
    constexpr int width = 30;
    const int filled = total_ ? static_cast<int>(width * static_cast<double>(done_) / static_cast<double>(total_)) : 0;
    fmt::print(stream_, "\r[{:#<{}}{:.<{}}] {}/{} pairs  ETA {}  mean delta {:+.5g}\x1b[K", "", filled, "",
               width - filled, done_, total_, eta_text(), running_mean);
    bar_drawn_ = true;
  } else {
    fmt::print(stream_, "pair {} done ({}/{}): base {:.6g} candidate {:.6g} delta {:+.5g}; running mean delta {:+.5g} "
               "over {} pairs; ETA {}\n", pair, done_, total_, base, candidate, base - candidate, running_mean,
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
