#include "common/numeric.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace layerbench::num {
namespace {

std::string shown(std::string_view text) { return text.empty() ? "''" : std::string(text); }

std::string bound_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:g}", v);
}

[[noreturn]] void fail(std::string_view what, std::string_view text, std::string_view why) {
  throw UsageError(fmt::format("{} {}: {}", what, shown(text), why));
}

std::string int_range_text(std::int64_t lo, std::int64_t hi) {
  if (hi == std::numeric_limits<std::int64_t>::max()) return fmt::format(">= {}", lo);
  return fmt::format("in [{}, {}]", lo, hi);
}
std::string uint_range_text(std::uint64_t lo, std::uint64_t hi) {
  if (hi == std::numeric_limits<std::uint64_t>::max() || hi == std::numeric_limits<std::uint32_t>::max())
    return fmt::format(">= {}", lo);
  return fmt::format("in [{}, {}]", lo, hi);
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

bool RealRange::contains(double v) const {
  if (std::isnan(v)) return false;
  if (lo_open ? !(v > lo) : !(v >= lo)) return false;
  if (hi_open ? !(v < hi) : !(v <= hi)) return false;
  return true;
}

std::string RealRange::text() const {
  if (std::isinf(lo) && std::isinf(hi)) return "finite";
  if (std::isinf(hi)) return fmt::format("{} {}", lo_open ? ">" : ">=", bound_text(lo));
  if (std::isinf(lo)) return fmt::format("{} {}", hi_open ? "<" : "<=", bound_text(hi));
  return fmt::format("in {}{}, {}{}", lo_open ? '(' : '[', bound_text(lo), bound_text(hi), hi_open ? ')' : ']');
}

namespace detail {

std::int64_t parse_signed(std::string_view text, std::string_view what, std::int64_t lo, std::int64_t hi) {
  std::string_view digits = text;
  const bool negative = !digits.empty() && digits.front() == '-';
  if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) digits.remove_prefix(1);
  if (!all_digits(digits)) fail(what, text, fmt::format("must be a whole number {}", int_range_text(lo, hi)));
  std::int64_t v = 0;
  const std::string s = (negative ? "-" : "") + std::string(digits);
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v < lo || v > hi)
    fail(what, text, fmt::format("must be a whole number {}", int_range_text(lo, hi)));
  return v;
}

std::uint64_t parse_unsigned(std::string_view text, std::string_view what, std::uint64_t lo, std::uint64_t hi) {
  std::string_view digits = text;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  if (!digits.empty() && digits.front() == '-' && all_digits(digits.substr(1)))
    fail(what, text, fmt::format("must not be negative (a whole number {})", uint_range_text(lo, hi)));
  if (!all_digits(digits)) fail(what, text, fmt::format("must be a whole number {}", uint_range_text(lo, hi)));
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || v < lo || v > hi)
    fail(what, text, fmt::format("must be a whole number {}", uint_range_text(lo, hi)));
  return v;
}

}  // namespace detail

double parse_real(std::string_view text, std::string_view what, const RealRange& range) {
  std::string_view s = text;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ptr != s.data() + s.size()) fail(what, text, fmt::format("must be a number {}", range.text()));
  if (ec == std::errc::result_out_of_range) fail(what, text, fmt::format("out of range: must be {}", range.text()));
  if (ec != std::errc()) fail(what, text, fmt::format("must be a number {}", range.text()));
  check_real(v, what, range);
  return v;
}

void check_real(double v, std::string_view what, const RealRange& range) {
  if (!std::isfinite(v)) throw UsageError(fmt::format("{} {}: must be a finite number {}", what, v, range.text()));
  if (!range.contains(v)) throw UsageError(fmt::format("{} {:g}: must be {}", what, v, range.text()));
}

std::uint64_t parse_bytes(std::string_view text, std::string_view what, std::uint64_t lo, std::uint64_t hi) {
  std::string_view s = text;
  std::size_t n = 0;
  while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) ++n;
  std::string unit(s.substr(n));
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();             // KB, MB
  if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();             // KiB -> K
  if (unit == "B") unit.clear();
  const std::string expected = fmt::format("a byte count with an optional unit K, M, G or T, {}", uint_range_text(lo, hi));
  if (!s.empty() && s.front() == '-') fail(what, text, "must not be negative (" + expected + ")");
  if (n == 0) fail(what, text, "must be " + expected);
  int shift = 0;
  if (unit.empty()) shift = 0;
  else if (unit == "K") shift = 10;
  else if (unit == "M") shift = 20;
  else if (unit == "G") shift = 30;
  else if (unit == "T") shift = 40;
  else fail(what, text, "must be " + expected);
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + n, v);
  if (ec != std::errc() || (shift > 0 && v > (std::numeric_limits<std::uint64_t>::max() >> shift)))
    fail(what, text, "too large: must be " + expected);
  v <<= shift;
  if (v < lo || v > hi) fail(what, text, "must be " + expected);
  return v;
}

double parse_fraction(std::string_view text, std::string_view what, const RealRange& range) {
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  const bool percent = !s.empty() && s.back() == '%';
  if (percent) s.remove_suffix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  const std::string expected = fmt::format("a percentage (2%) or a fraction (0.02) {}", range.text());
  double v = 0;
  std::string_view d = s;
  if (!d.empty() && d.front() == '+') d.remove_prefix(1);
  const auto [ptr, ec] = std::from_chars(d.data(), d.data() + d.size(), v);
  if (d.empty() || ec != std::errc() || ptr != d.data() + d.size() || !std::isfinite(v))
    fail(what, text, "must be " + expected);
  if (percent) v /= 100;
  else if (v >= 1 && !range.contains(v))
    fail(what, text, fmt::format("a bare number is a fraction; for {}% write '{}%'", bound_text(v), std::string(s)));
  if (!range.contains(v)) fail(what, text, "must be " + expected);
  return v;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (bytes >= 1000 && u < 6) {
    bytes /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, units[u]);
}

std::optional<std::uint64_t> mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<std::uint64_t> add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::uint64_t physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

int ranks_on_this_machine() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}) {
    if (const char* v = std::getenv(var)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  }
  return 1;
}

void check_memory(std::optional<std::uint64_t> bytes_per_rank, int ranks_on_machine, std::string_view what,
                  std::string_view hint) {
  const std::uint64_t have = physical_memory();
  const int ranks = ranks_on_machine < 1 ? 1 : ranks_on_machine;
  const auto total = bytes_per_rank ? mul(*bytes_per_rank, static_cast<std::uint64_t>(ranks)) : std::nullopt;
  if (total && *total <= have) return;
  const std::string need =
      bytes_per_rank ? fmt::format("about {} per rank ({} for {} rank{} on this machine)", format_bytes(static_cast<double>(*bytes_per_rank)),
                                   total ? format_bytes(static_cast<double>(*total)) : "more than 2^64 bytes", ranks, ranks == 1 ? "" : "s")
                     : std::string("more than 2^64 bytes");
  throw UsageError(fmt::format("{} needs {}, but this machine has {}{}{}", what, need,
                               format_bytes(static_cast<double>(have)), hint.empty() ? "" : "; ", hint));
}

}  // namespace layerbench::num
