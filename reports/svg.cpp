#include "reports/svg.hpp"

#include "reports/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace layerbench::reports::svg {
namespace {

// Okabe-Ito: distinguishable under the common colour-vision deficiencies.
constexpr const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                    "#E69F00", "#56B4E9", "#8C6D1F", "#000000"};
constexpr const char* kSpanPalette[] = {"#E69F00", "#009E73", "#CC79A7", "#56B4E9"};
constexpr const char* kRefPalette[] = {"#C00000", "#444444", "#7F3FBF", "#2F7F2F"};
constexpr double kWidth = 760, kHeight = 420;
constexpr double kCharPx = 6.6;  // approximate width of one 11-12 px sans-serif glyph

// The i-th colour of a palette; past its end, further distinct hues (golden-angle steps at two
// lightnesses), so that no two segments of one chart share a colour.
std::string colour(const char* const* palette, std::size_t n, std::size_t i) {
  if (i < n) return palette[i];
  const double h = std::fmod(37.0 + 137.508 * static_cast<double>(i - n), 360.0);
  const double l = (i - n) % 2 == 0 ? 0.42 : 0.60, sat = 0.62;
  const double c = (1 - std::fabs(2 * l - 1)) * sat, x = c * (1 - std::fabs(std::fmod(h / 60, 2) - 1)), m = l - c / 2;
  double r = 0, g = 0, b = 0;
  if (h < 60) r = c, g = x;
  else if (h < 120) r = x, g = c;
  else if (h < 180) g = c, b = x;
  else if (h < 240) g = x, b = c;
  else if (h < 300) r = x, b = c;
  else r = c, b = x;
  auto byte = [&](double v) { return static_cast<int>(std::lround(255 * (v + m))); };
  return fmt::format("#{:02X}{:02X}{:02X}", byte(r), byte(g), byte(b));
}

std::string series_colour(const Series& s, std::size_t i) {
  return s.colour.empty() ? std::string(colour(kPalette, std::size(kPalette), i)) : s.colour;
}

std::string axis_title(const Axis& a) { return a.unit.empty() ? a.label : a.label + " (" + a.unit + ")"; }

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

// Maps data values to pixels along one axis; also owns the ticks so ticks and data agree.
struct Mapper {
  Axis axis;
  double lo = 0, hi = 1;  // data range after tick rounding
  double px0 = 0, px1 = 1;
  std::vector<double> ticks;

  double t(double v) const {
    switch (axis.scale) {
      case Scale::log2: return std::log2(v);
      case Scale::log10: return std::log10(v);
      default: return v;
    }
  }
  double operator()(double v) const {
    const double span = t(hi) - t(lo);
    return px0 + (px1 - px0) * (span == 0 ? 0.5 : (t(v) - t(lo)) / span);
  }
  bool valid(double v) const { return std::isfinite(v) && (axis.scale == Scale::linear || v > 0); }
};

Mapper make_mapper(const Axis& axis, Range r, double px0, double px1) {
  Mapper m;
  m.axis = axis;
  m.px0 = px0;
  m.px1 = px1;
  if (axis.scale == Scale::linear && axis.include_zero) r.add(0.0);
  if (r.empty()) r = Range{0.0, 1.0};
  if (axis.scale == Scale::linear) {
    m.ticks = nice_ticks(r.lo, r.hi, 6);
  } else {
    m.ticks = log_ticks(r.lo, r.hi, axis.scale, 9);
  }
  m.lo = std::min(r.lo, m.ticks.front());
  m.hi = std::max(r.hi, m.ticks.back());
  return m;
}

std::string text(double x, double y, const std::string& s, const char* cls, const char* anchor,
                 const std::string& extra = "") {
  return fmt::format("<text class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\"{}>{}</text>\n", cls, x, y,
                     anchor, extra, html_escape(s));
}

struct LegendEntry {
  std::string name, colour;
  enum Kind { line, box, solid_box, dashed } kind;
};

// Legend as a wrapped row under the title; returns the height it took.
double legend(std::string& out, const std::vector<LegendEntry>& entries, double x0, double y0, double max_w) {
  out += "<g class=\"legend\">\n";
  double x = x0, y = y0;
  for (const auto& e : entries) {
    const double w = 26 + kCharPx * static_cast<double>(e.name.size()) + 14;
    if (x + w > x0 + max_w && x > x0) {
      x = x0;
      y += 18;
    }
    if (e.kind == LegendEntry::box || e.kind == LegendEntry::solid_box)
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"18\" height=\"10\" fill=\"{}\" fill-opacity=\"{}\"/>\n",
                         x, y - 9, e.colour, e.kind == LegendEntry::box ? "0.45" : "1");
    else
      out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2.5\"{}/>\n",
                         x, y - 4, x + 18, y - 4, e.colour, e.kind == LegendEntry::dashed ? " stroke-dasharray=\"6 3\"" : "");
    out += text(x + 24, y, e.name, "legend-label", "start");
    x += w;
  }
  out += "</g>\n";
  return y - y0 + 18;
}

double legend_height(const std::vector<LegendEntry>& entries, double max_w) {
  std::string sink;
  return legend(sink, entries, 0, 0, max_w);
}

std::string open_svg(const std::string& title, double w, double h) {
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" role=\"img\" font-family=\"sans-serif\" font-size=\"12\">\n",
      w, h);
  out += "<title>" + html_escape(title) + "</title>\n";
  out += fmt::format("<rect x=\"0\" y=\"0\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"#ffffff\"/>\n", w, h);
  out += text(w / 2, 22, title, "title", "middle", " font-size=\"15\" font-weight=\"bold\"");
  return out;
}

// Ticks, grid lines and the axis title for a numeric axis. `other0/other1` span the plot across the axis.
void numeric_axis(std::string& out, const Mapper& m, bool is_x, double other0, double other1) {
  out += fmt::format("<g class=\"axis {}\">\n", is_x ? "x" : "y");
  if (is_x)
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#000\"/>\n", m.px0, other0,
                       m.px1, other0);
  else
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#000\"/>\n", other0, m.px0,
                       other0, m.px1);
  for (double v : m.ticks) {
    const double p = m(v);
    const std::string label = tick_label(v, m.axis.format);
    if (is_x) {
      out += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#e4e4e4\"/>\n",
                         p, other0, other1);
      out += fmt::format("<line class=\"tick\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#000\"/>\n",
                         p, other0, other0 + 5);
      out += text(p, other0 + 18, label, "tick-label", "middle");
    } else {
      out += fmt::format("<line class=\"grid\" x1=\"{1:.1f}\" y1=\"{0:.1f}\" x2=\"{2:.1f}\" y2=\"{0:.1f}\" stroke=\"#e4e4e4\"/>\n",
                         p, other0, other1);
      out += fmt::format("<line class=\"tick\" x1=\"{1:.1f}\" y1=\"{0:.1f}\" x2=\"{2:.1f}\" y2=\"{0:.1f}\" stroke=\"#000\"/>\n",
                         p, other0 - 5, other0);
      out += text(other0 - 8, p + 4, label, "tick-label", "end");
    }
  }
  const double mid = (m.px0 + m.px1) / 2;
  if (is_x)
    out += text(mid, other0 + 40, axis_title(m.axis), "axis-label", "middle");
  else
    out += text(18, mid, axis_title(m.axis), "axis-label", "middle",
                fmt::format(" transform=\"rotate(-90 18 {:.1f})\"", mid));
  out += "</g>\n";
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target_count) {
  if (!(std::isfinite(lo) && std::isfinite(hi))) throw std::invalid_argument("nice_ticks: non-finite range");
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) {
    const double pad = lo == 0 ? 1.0 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / std::max(1, target_count - 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double f : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = f * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9) * step;
  for (double v = first; v <= hi + step * (1 - 1e-9); v += step) {
    ticks.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
    if (v >= hi - step * 1e-9) break;
  }
  if (ticks.size() < 2) ticks.push_back(ticks.back() + step);
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi, Scale scale, int max_count) {
  const double base = scale == Scale::log10 ? 10.0 : 2.0;
  if (!(lo > 0)) lo = hi > 0 ? hi / base : 1.0;
  if (!(hi > 0)) hi = lo * base;
  const auto e0 = static_cast<int>(std::floor(std::log(lo) / std::log(base) + 1e-9));
  auto e1 = static_cast<int>(std::ceil(std::log(hi) / std::log(base) - 1e-9));
  if (e1 <= e0) e1 = e0 + 1;
  const int stride = std::max(1, (e1 - e0 + max_count - 1) / max_count);
  std::vector<double> ticks;
  for (int e = e0; e <= e1 + stride - 1; e += stride) {
    ticks.push_back(std::pow(base, e));
    if (e >= e1) break;
  }
  if (ticks.size() < 2) ticks.push_back(ticks.back() * std::pow(base, stride));
  return ticks;
}

std::string tick_label(double v, TickFormat format) {
  if (format == TickFormat::bytes) return fmt_bytes(v);
  if (v == 0) return "0";
  return fmt::format("{:.6g}", v);
}

std::string render(const XYPlot& plot) {
  std::vector<LegendEntry> entries;
  for (std::size_t i = 0; i < plot.series.size(); ++i)
    entries.push_back({plot.series[i].name, series_colour(plot.series[i], i),
                       plot.series[i].mark == Mark::bars ? LegendEntry::solid_box : LegendEntry::line});
  for (std::size_t i = 0; i < plot.x_spans.size(); ++i)
    entries.push_back({plot.x_spans[i].name, colour(kSpanPalette, std::size(kSpanPalette), i), LegendEntry::box});
  for (std::size_t i = 0; i < plot.ref_lines.size(); ++i)
    entries.push_back({plot.ref_lines[i].name, colour(kRefPalette, std::size(kRefPalette), i), LegendEntry::dashed});

  const double left = 86, right = 24, bottom = 64;
  const double plot_w = kWidth - left - right;
  const double top = 40 + legend_height(entries, plot_w) + 8;

  Range xr, yr;
  for (const auto& s : plot.series) {
    for (std::size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (plot.x.scale != Scale::linear && !(s.x[i] > 0)) continue;
      xr.add(s.x[i] - (s.mark == Mark::bars ? s.bar_width / 2 : 0));
      xr.add(s.x[i] + (s.mark == Mark::bars ? s.bar_width / 2 : 0));
      yr.add(s.y[i]);
    }
    if (s.mark == Mark::bars) yr.add(0.0);
  }
  for (const auto& sp : plot.x_spans) {
    xr.add(sp.from);
    xr.add(sp.to);
  }
  for (const auto& r : plot.ref_lines) (r.vertical ? xr : yr).add(r.value);

  const Mapper mx = make_mapper(plot.x, xr, left, kWidth - right);
  const Mapper my = make_mapper(plot.y, yr, kHeight - bottom, top);

  std::string out = open_svg(plot.title, kWidth, kHeight);
  legend(out, entries, left, 42, plot_w);
  numeric_axis(out, my, false, left, kWidth - right);
  numeric_axis(out, mx, true, kHeight - bottom, top);

  out += "<g class=\"series\">\n";
  for (std::size_t si = 0; si < plot.series.size(); ++si) {
    const auto& s = plot.series[si];
    const std::string c = series_colour(s, si);
    std::string points;
    for (std::size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (!mx.valid(s.x[i]) || !my.valid(s.y[i])) continue;
      const double px = mx(s.x[i]), py = my(s.y[i]);
      if (s.mark == Mark::bars) {
        const double x0 = mx(s.x[i] - s.bar_width / 2), x1 = mx(s.x[i] + s.bar_width / 2), y0 = my(0.0);
        out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\" fill-opacity=\"0.85\" stroke=\"#ffffff\"/>\n",
                           x0, std::min(py, y0), std::max(1.0, x1 - x0), std::fabs(y0 - py), c);
        continue;
      }
      points += fmt::format("{:.1f},{:.1f} ", px, py);
      if (s.mark != Mark::line)
        out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", px, py, c);
    }
    if ((s.mark == Mark::line || s.mark == Mark::line_points) && !points.empty())
      out += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", points, c);
  }
  out += "</g>\n";
  out += "<g class=\"spans\">\n";
  for (std::size_t i = 0; i < plot.x_spans.size(); ++i) {
    const double a = mx(std::min(plot.x_spans[i].from, plot.x_spans[i].to));
    const double b = mx(std::max(plot.x_spans[i].from, plot.x_spans[i].to));
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\" fill-opacity=\"0.3\" stroke=\"{}\" stroke-width=\"1\"/>\n",
                       a, top, std::max(1.0, b - a), kHeight - bottom - top,
                       colour(kSpanPalette, std::size(kSpanPalette), i), colour(kSpanPalette, std::size(kSpanPalette), i));
  }
  out += "</g>\n<g class=\"ref-lines\">\n";
  for (std::size_t i = 0; i < plot.ref_lines.size(); ++i) {
    const auto& r = plot.ref_lines[i];
    const std::string c = colour(kRefPalette, std::size(kRefPalette), i);
    if (r.vertical && mx.valid(r.value))
      out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>\n",
                         mx(r.value), top, kHeight - bottom, c);
    else if (!r.vertical && my.valid(r.value))
      out += fmt::format("<line x1=\"{1:.1f}\" y1=\"{0:.1f}\" x2=\"{2:.1f}\" y2=\"{0:.1f}\" stroke=\"{3}\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>\n",
                         my(r.value), left, kWidth - right, c);
  }
  out += "</g>\n</svg>\n";
  return out;
}

std::string render(const BarChart& chart) {
  std::vector<LegendEntry> entries;
  for (std::size_t i = 0; i < chart.segments.size(); ++i)
    entries.push_back({chart.segments[i], colour(kPalette, std::size(kPalette), i), LegendEntry::solid_box});

  std::size_t longest = 0;
  for (const auto& c : chart.categories) longest = std::max(longest, c.size());
  const double n = static_cast<double>(std::max<std::size_t>(1, chart.categories.size()));
  const double left = chart.horizontal ? std::clamp(kCharPx * static_cast<double>(longest) + 40, 90.0, 300.0) : 86;
  // Horizontal bars carry their value label past the bar end: leave room for the longest.
  std::size_t longest_label = 0;
  for (const auto& l : chart.value_labels) longest_label = std::max(longest_label, l.size());
  const double right =
      chart.horizontal ? std::clamp(kCharPx * static_cast<double>(longest_label) + 16, 70.0, 240.0) : 24;
  const double bottom = chart.horizontal ? 64 : 84;
  const double band_px = chart.horizontal ? 26 : 0;
  const double plot_w = kWidth - left - right;
  const double top = 40 + legend_height(entries, plot_w) + 8;
  const double height = chart.horizontal ? top + band_px * n + bottom : kHeight;

  Range vr;
  for (const auto& row : chart.values) {
    double sum = 0;
    for (double v : row) sum += std::isfinite(v) ? v : 0;
    vr.add(sum);
  }
  Axis value_axis = chart.value;
  value_axis.scale = Scale::linear;
  value_axis.include_zero = true;
  const Mapper mv = chart.horizontal ? make_mapper(value_axis, vr, left, kWidth - right)
                                     : make_mapper(value_axis, vr, height - bottom, top);

  std::string out = open_svg(chart.title, kWidth, height);
  legend(out, entries, left, 42, plot_w);
  if (chart.horizontal)
    numeric_axis(out, mv, true, height - bottom, top);
  else
    numeric_axis(out, mv, false, left, kWidth - right);

  // Category axis: one band per category, label centred on it.
  const double c0 = chart.horizontal ? top : left;
  const double c1 = chart.horizontal ? height - bottom : kWidth - right;
  const double band = (c1 - c0) / n;
  out += fmt::format("<g class=\"axis {}\">\n", chart.horizontal ? "y" : "x");
  if (chart.horizontal)
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#000\"/>\n", left, c0, c1);
  else
    out += fmt::format("<line x1=\"{1:.1f}\" y1=\"{0:.1f}\" x2=\"{2:.1f}\" y2=\"{0:.1f}\" stroke=\"#000\"/>\n", height - bottom, c0, c1);
  for (std::size_t i = 0; i < chart.categories.size(); ++i) {
    const double mid = c0 + band * (static_cast<double>(i) + 0.5);
    if (chart.horizontal) {
      out += fmt::format("<line class=\"tick\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#000\"/>\n",
                         left - 5, mid, left, mid);
      out += text(left - 8, mid + 4, chart.categories[i], "tick-label", "end");
    } else {
      out += fmt::format("<line class=\"tick\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#000\"/>\n",
                         mid, height - bottom, mid, height - bottom + 5);
      out += text(mid, height - bottom + 18, chart.categories[i], "tick-label", "end",
                  fmt::format(" transform=\"rotate(-20 {:.1f} {:.1f})\"", mid, height - bottom + 18));
    }
  }
  if (chart.horizontal)
    out += text(14, (c0 + c1) / 2, chart.category_label, "axis-label", "middle",
                fmt::format(" transform=\"rotate(-90 14 {:.1f})\"", (c0 + c1) / 2));
  else
    out += text((c0 + c1) / 2, height - 12, chart.category_label, "axis-label", "middle");
  out += "</g>\n<g class=\"bars\">\n";

  for (std::size_t i = 0; i < chart.categories.size() && i < chart.values.size(); ++i) {
    const double b0 = c0 + band * static_cast<double>(i) + band * 0.15, bw = band * 0.7;
    double acc = 0;
    for (std::size_t s = 0; s < chart.values[i].size(); ++s) {
      const double v = std::isfinite(chart.values[i][s]) ? chart.values[i][s] : 0;
      const double p0 = mv(acc), p1 = mv(acc + v);
      acc += v;
      const std::string c = colour(kPalette, std::size(kPalette), s);
      if (chart.horizontal)
        out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n",
                           std::min(p0, p1), b0, std::fabs(p1 - p0), bw, c);
      else
        out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", b0,
                           std::min(p0, p1), bw, std::fabs(p1 - p0), c);
    }
    if (i < chart.value_labels.size()) {
      if (chart.horizontal)
        out += text(mv(acc) + 5, b0 + bw / 2 + 4, chart.value_labels[i], "value-label", "start");
      else
        out += text(b0 + bw / 2, mv(acc) - 5, chart.value_labels[i], "value-label", "middle");
    }
  }
  out += "</g>\n</svg>\n";
  return out;
}

std::string render(const Timeline& tl) {
  std::vector<LegendEntry> entries;
  std::vector<std::string> colours;
  for (std::size_t i = 0; i < tl.kinds.size(); ++i) {
    const bool given = i < tl.kind_colours.size() && !tl.kind_colours[i].empty();
    colours.push_back(given ? tl.kind_colours[i] : colour(kPalette, std::size(kPalette), i));
    entries.push_back({tl.kinds[i], colours.back(), LegendEntry::solid_box});
  }
  std::size_t label_chars = 8;
  for (const auto& r : tl.rows) label_chars = std::max(label_chars, r.size());
  const double left = 16 + kCharPx * static_cast<double>(label_chars), right = 24, bottom = 64;
  const double plot_w = kWidth - left - right;
  const double top = 40 + legend_height(entries, plot_w) + 8;
  constexpr double kRowH = 26;
  const double h = top + kRowH * static_cast<double>(std::max<std::size_t>(tl.rows.size(), 1)) + bottom;
  Range xr;
  for (const auto& b : tl.bars) {
    xr.add(b.from);
    xr.add(b.to);
  }
  Axis axis = tl.time;
  axis.scale = Scale::linear;
  const Mapper x = make_mapper(axis, xr, left, left + plot_w);
  std::string out = open_svg(tl.title, kWidth, h);
  legend(out, entries, left, 40, plot_w);
  const double bottom_y = top + kRowH * static_cast<double>(tl.rows.size());
  numeric_axis(out, x, true, bottom_y, top);
  out += "<g class=\"rows\">\n";
  for (std::size_t r = 0; r < tl.rows.size(); ++r) {
    const double y = top + kRowH * static_cast<double>(r);
    if (r % 2 == 1)
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#f4f4f4\"/>\n", left, y,
                         plot_w, kRowH);
    out += text(left - 6, y + kRowH / 2 + 4, tl.rows[r], "row-label", "end");
  }
  out += "</g>\n<g class=\"slices\">\n";
  for (const auto& b : tl.bars) {
    if (b.row >= tl.rows.size()) continue;
    const double x0 = x(b.from), x1 = std::max(x(b.to), x0 + 0.6);  // the shortest slice stays visible
    // Depth 0 fills the row; each level inside is drawn lower and thinner.
    const double inset = 3 + 5 * std::min(b.depth, 3);
    const double y = top + kRowH * static_cast<double>(b.row) + inset, bh = std::max(kRowH - 3 - inset, 4.0);
    const std::string& c = b.kind < colours.size() ? colours[b.kind] : colours.front();
    out += fmt::format("<rect class=\"slice\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\" "
                       "stroke=\"#ffffff\" stroke-width=\"0.4\"><title>{}</title></rect>\n",
                       x0, y, x1 - x0, bh, c, html_escape(b.label));
    if (b.depth == 0 && x1 - x0 > kCharPx * static_cast<double>(b.label.size()) + 6)
      out += text(x0 + 3, y + bh / 2 + 4, b.label, "slice-label", "start", " fill=\"#ffffff\" font-size=\"10\"");
  }
  out += "</g>\n</svg>\n";
  return out;
}

}  // namespace layerbench::reports::svg
