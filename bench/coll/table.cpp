// The nccl-tests-like text table, printed a row at a time as the sweep goes. Every number is
// fitted to its column's width whatever its magnitude (fewer decimals, then exponent form), so
// the columns stay aligned from 8 B to 16 GB and from 1 us to hours.
#include "bench/coll/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace layerbench::coll {

namespace {
constexpr int kTime = 10, kBw = 8, kPct = 6, kWrong = 6;
}  // namespace

std::string fit_number(double v, int width) {
  for (int decimals = 2; decimals >= 0; --decimals) {
    auto s = fmt::format("{:.{}f}", v, decimals);
    if (static_cast<int>(s.size()) <= width) return fmt::format("{:>{}}", s, width);
  }
  for (int precision = std::max(0, width - 6); precision >= 0; --precision) {
    auto s = fmt::format("{:.{}e}", v, precision);
    if (static_cast<int>(s.size()) <= width || precision == 0) return fmt::format("{:>{}}", s, width);
  }
  return std::string(static_cast<std::size_t>(width), '#');
}

TablePrinter::TablePrinter(const Config& c) : link_(c.link_gbps > 0), link_gbps_(c.link_gbps) {}

int TablePrinter::cell_width() const {
  return kTime + 1 + kBw + 1 + kBw + 1 + (link_ ? kPct + 1 : 0) + kWrong + 1 + kTime;
}

std::string TablePrinter::header() const {
  const int w = cell_width();
  std::string cols = fmt::format("{:>{}} {:>{}} {:>{}} ", "time(us)", kTime, "algbw", kBw, "busbw", kBw);
  if (link_) cols += fmt::format("{:>{}} ", "%link", kPct);
  cols += fmt::format("{:>{}} {:>{}}", "#wrong", kWrong, "agg(us)", kTime);
  std::string out = fmt::format("# {:>22} {:>12} {:>6}  | {:^{}} | {:^{}}", "", "", "", "out-of-place", w,
                                "in-place", w);
  out.erase(out.find_last_not_of(' ') + 1);
  out += "\n";
  out += fmt::format("# {:<22} {:>12} {:>6}  | {} | {}\n", "op", "size(B)", "type", cols, cols);
  return out;
}

std::string TablePrinter::cell(const reports::Measurement* m) const {
  const int w = cell_width();
  if (!m) return fmt::format("{:>{}}{:{}}", "N/A", kTime, "", w - kTime);
  const auto& x = m->metrics;
  // Time, algbw and busbw from the declared work (reports::rates_of), in nccl-tests' units
  // (us, GB/s = 1e9 B/s).
  const auto r = reports::rates_of(*m);
  const auto dash = [](int width) { return fmt::format("{:>{}}", "-", width); };
  std::string s = fit_number(r.median_ms * 1e3, kTime) + " ";
  const bool bw = std::isfinite(r.busbw_bytes_per_s);
  s += bw ? fit_number(r.algbw_bytes_per_s / 1e9, kBw) + " " + fit_number(r.busbw_bytes_per_s / 1e9, kBw) + " "
          : dash(kBw) + " " + dash(kBw) + " ";
  if (link_) s += (bw ? fit_number(100.0 * r.busbw_bytes_per_s / 1e9 / link_gbps_, kPct) : dash(kPct)) + " ";
  s += fmt::format("{:>{}} ", static_cast<unsigned long long>(x.value("wrong", 0.0)), kWrong);
  s += x.contains("agg_time_us") ? fit_number(x.value("agg_time_us", 0.0), kTime) : dash(kTime);
  return s;
}

std::string TablePrinter::row(const reports::Measurement* out_of_place, const reports::Measurement* in_place) const {
  const reports::Measurement* any = out_of_place ? out_of_place : in_place;
  if (!any) return {};
  auto line = fmt::format("  {:<22} {:>12} {:>6}  | {} | {}", any->name, any->params.value("bytes", std::uint64_t{0}),
                          any->params.value("dtype", std::string{}), cell(out_of_place), cell(in_place));
  line.erase(line.find_last_not_of(' ') + 1);
  return line + "\n";
}

std::string TablePrinter::rows(std::span<const reports::Measurement> step) const {
  // Pair the out-of-place and in-place measurements of one (op, size); ops without a pair (the
  // scalar exchange's two variants) get a row each.
  std::string out;
  for (std::size_t i = 0; i < step.size(); ++i) {
    const auto& m = step[i];
    const reports::Measurement* next = i + 1 < step.size() ? &step[i + 1] : nullptr;
    const bool in = m.params.value("in_place", false);
    if (!in && next && next->name == m.name && next->params.value("in_place", false)) {
      out += row(&m, next);
      ++i;
    } else {
      out += in ? row(nullptr, &m) : row(&m, nullptr);
    }
  }
  return out;
}

double average_busbw(const std::vector<reports::Measurement>& results) {
  double sum = 0;
  int n = 0;
  for (const auto& m : results) {
    const double busbw = reports::rates_of(m).busbw_bytes_per_s;
    if (std::isfinite(busbw)) {
      sum += busbw / 1e9;
      ++n;
    }
  }
  return n ? sum / n : 0.0;
}

std::string TablePrinter::footer(const SweepResult& r) const {
  std::string out = "# time: median of per-iteration rank-max samples; agg: nccl-tests-style host-clock mean of "
                    "back-to-back ops (rank-max); bandwidth in GB/s (1e9 B/s)\n";
  out += fmt::format("# out of bounds values : {} {}\n", r.total_wrong, r.total_wrong ? "ERROR" : "OK");
  out += fmt::format("# Avg bus bandwidth    : {:g}\n", average_busbw(r.results));
  return out;
}

std::string format_table(const Config& c, const SweepResult& r) {
  const TablePrinter t(c);
  return t.header() + t.rows(r.results) + t.footer(r);
}

}  // namespace layerbench::coll
