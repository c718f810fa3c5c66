#include "reports/units.hpp"

#include "common/number_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace layerbench::reports {
namespace {

struct Scale {
  double factor;  // value in the base unit / factor = value in this unit
  const char* symbol;
};

// Prefix ladders, smallest first. Times are in ms.
constexpr std::array<Scale, 4> kTime{{{1e-6, "ns"}, {1e-3, "µs"}, {1.0, "ms"}, {1e3, "s"}}};
constexpr std::array<Scale, 6> kFlopRate{{{1.0, "FLOP/s"}, {1e3, "kFLOP/s"}, {1e6, "MFLOP/s"},
                                          {1e9, "GFLOP/s"}, {1e12, "TFLOP/s"}, {1e15, "PFLOP/s"}}};
constexpr std::array<Scale, 5> kByteRate{{{1.0, "B/s"}, {1e3, "kB/s"}, {1e6, "MB/s"}, {1e9, "GB/s"}, {1e12, "TB/s"}}};
constexpr std::array<Scale, 5> kBytes{{{1.0, "B"}, {1e3, "kB"}, {1e6, "MB"}, {1e9, "GB"}, {1e12, "TB"}}};
constexpr std::array<Scale, 6> kFlop{{{1.0, "FLOP"}, {1e3, "kFLOP"}, {1e6, "MFLOP"}, {1e9, "GFLOP"}, {1e12, "TFLOP"},
                                      {1e15, "PFLOP"}}};

template <std::size_t N>
Scale pick(const std::array<Scale, N>& ladder, double magnitude) {
  Scale s = ladder.front();
  for (const auto& c : ladder)
    if (magnitude >= c.factor) s = c;
  return s;
}

Scale scale_for(Unit u, double magnitude) {
  switch (u) {
    case Unit::ms: return pick(kTime, magnitude);
    case Unit::flop_per_s: return pick(kFlopRate, magnitude);
    case Unit::bytes_per_s: return pick(kByteRate, magnitude);
    case Unit::bytes: return pick(kBytes, magnitude);
    case Unit::flop: return pick(kFlop, magnitude);
    default: return {1.0, ""};
  }
}

// Digits after the decimal point that show `sig` significant digits of v (v != 0).
int decimals_for(double v, int sig) {
  const int exponent = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  return std::clamp(sig - 1 - exponent, 0, 15);
}

std::string fixed(double v, int sig, bool sign) {
  if (!std::isfinite(v)) return text::kNotAvailable;
  if (v == 0) return sign ? "±0" : "0";
  // Decimals for the value as rounded (0.9999 at 3 digits reads 1.00, not 1.000).
  const double step = std::pow(10.0, std::floor(std::log10(std::fabs(v))) - sig + 1);
  const int d = decimals_for(std::round(v / step) * step, sig);
  return sign ? fmt::format("{:+.{}f}", v, d) : fmt::format("{:.{}f}", v, d);
}

std::string quantity(double v, Unit u, int sig, bool sign) {
  if (!std::isfinite(v)) return text::kNotAvailable;
  if (u == Unit::fraction) return sign ? fmt_share_signed(v, sig) : fmt_share(v, sig);
  if (u == Unit::count) return sign ? fmt::format("{:+.0f}", v) : fmt::format("{:.0f}", v);
  // The unit is chosen for the value as printed (999.96 ms reads 1.00 s, not 1000 ms).
  double mag = std::fabs(v);
  if (mag > 0) {
    const double step = std::pow(10.0, std::floor(std::log10(mag)) - sig + 1);
    mag = std::round(mag / step) * step;
  }
  const Scale s = scale_for(u, mag);
  const std::string num = fixed(v / s.factor, sig, sign);
  return *s.symbol ? num + " " + s.symbol : num;
}

}  // namespace

std::string unit_symbol(Unit u) {
  switch (u) {
    case Unit::none: return "";
    case Unit::ms: return "ms";
    case Unit::flop: return "FLOP";
    case Unit::bytes: return "B";
    case Unit::flop_per_s: return "FLOP/s";
    case Unit::bytes_per_s: return "B/s";
    case Unit::fraction: return "fraction";
    case Unit::count: return "count";
  }
  return "";
}

std::string unit_csv_suffix(Unit u) {
  switch (u) {
    case Unit::ms: return "ms";
    case Unit::flop: return "flop";
    case Unit::bytes: return "bytes";
    case Unit::flop_per_s: return "flop_per_s";
    case Unit::bytes_per_s: return "bytes_per_s";
    case Unit::fraction: return "fraction";
    case Unit::count: return "count";
    case Unit::none: return "";
  }
  return "";
}

Unit unit_from_symbol(const std::string& s) {
  for (Unit u : {Unit::ms, Unit::flop, Unit::bytes, Unit::flop_per_s, Unit::bytes_per_s, Unit::fraction, Unit::count})
    if (s == unit_symbol(u) || s == unit_csv_suffix(u)) return u;
  return Unit::none;
}

std::string fmt_sig(double v, int sig) { return fixed(v, sig, false); }
std::string fmt_sig_signed(double v, int sig) { return fixed(v, sig, true); }
std::string fmt_quantity(double v, Unit u, int sig) { return quantity(v, u, sig, false); }
std::string fmt_quantity_signed(double v, Unit u, int sig) { return quantity(v, u, sig, true); }
std::string fmt_time(double ms, int sig) { return quantity(ms, Unit::ms, sig, false); }

std::string fmt_share(double fraction, int sig) {
  if (!std::isfinite(fraction)) return text::kNotAvailable;
  const double pct = 100.0 * fraction;
  // At least one decimal for shares, more when the share is small.
  if (pct == 0) return "0%";
  return fmt::format("{:.{}f}%", pct, std::max(1, decimals_for(pct, sig)));
}

std::string fmt_share_signed(double fraction, int sig) {
  if (!std::isfinite(fraction)) return text::kNotAvailable;
  const double pct = 100.0 * fraction;
  if (pct == 0) return "±0%";
  return fmt::format("{:+.{}f}%", pct, std::max(1, decimals_for(pct, sig)));
}

std::string fmt_interval(double low, double high, Unit u, int sig) {
  if (!std::isfinite(low) || !std::isfinite(high)) return text::kNotAvailable;
  if (u == Unit::fraction) return fmt::format("[{}, {}]", fmt_share_signed(low, sig), fmt_share_signed(high, sig));
  const Scale s = scale_for(u, std::max(std::fabs(low), std::fabs(high)));
  const std::string tail = *s.symbol ? std::string(" ") + s.symbol : std::string();
  return fmt::format("[{}, {}]{}", fixed(low / s.factor, sig, true), fixed(high / s.factor, sig, true), tail);
}

}  // namespace layerbench::reports
