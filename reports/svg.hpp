#pragma once
// Self-contained SVG plots for the HTML report: no scripts, no fonts, no network.
// Every plot carries a title, both axes with ticks and "label (unit)", and a legend, so a figure pasted
// on its own still says what it shows. Class names (title, axis x/y, tick, axis-label, legend) are stable:
// the output tests look for them.
#include <string>
#include <vector>

namespace layerbench::reports::svg {

enum class Scale { linear, log2, log10 };
enum class TickFormat { number, bytes };

struct Axis {
  std::string label;                      // e.g. "message size"
  std::string unit;                       // e.g. "bytes"; rendered as "label (unit)"
  Scale scale = Scale::linear;
  TickFormat format = TickFormat::number;
  bool include_zero = false;              // linear only: force 0 into the range (bars, counts)
};

enum class Mark { line, points, line_points, bars };

struct Series {
  std::string name;                       // legend entry
  std::vector<double> x, y;
  Mark mark = Mark::line_points;
  double bar_width = 0;                   // data units, Mark::bars only (histogram bins)
  std::string colour;                     // empty: the next palette colour
};

// A shaded band over an x range, e.g. a confidence interval.
struct Span {
  double from = 0, to = 0;
  std::string name;
};

// A dashed reference line: horizontal (a ceiling such as link bandwidth) or vertical (zero, a mean).
struct RefLine {
  double value = 0;
  std::string name;
  bool vertical = false;
};

struct XYPlot {
  std::string title;
  Axis x, y;
  std::vector<Series> series;
  std::vector<Span> x_spans;
  std::vector<RefLine> ref_lines;
};

struct BarChart {
  std::string title;
  Axis value;                               // the measured (linear) axis
  std::string category_label;               // e.g. "component", "topology"
  std::vector<std::string> categories;      // one bar (or stack) each
  std::vector<std::string> segments;        // legend; one entry for unstacked bars
  std::vector<std::vector<double>> values;  // [category][segment]
  std::vector<std::string> value_labels;    // optional text at the end of each bar
  bool horizontal = false;                  // long category names read better on a horizontal chart
};

// A timeline (a trace): one row per track, one bar per slice over its time span; a slice inside
// another on the same row is drawn as a thinner bar below it (depth).
struct TimelineBar {
  std::size_t row = 0;
  double from = 0, to = 0;  // x axis units
  int depth = 0;            // 0 for a top-level slice
  std::size_t kind = 0;     // index into Timeline::kinds (its colour and legend entry)
  std::string label;        // shown inside the bar when it fits, and as its tooltip
};

struct Timeline {
  std::string title;
  Axis time;                       // linear
  std::vector<std::string> rows;   // e.g. "rank 0 compute stream"
  std::vector<std::string> kinds;  // legend entries (component, collective, wait)
  std::vector<std::string> kind_colours;  // empty entries: the palette's
  std::vector<TimelineBar> bars;
};

std::string render(const XYPlot& plot);
std::string render(const BarChart& chart);
std::string render(const Timeline& timeline);

// "Nice" linear ticks (1, 2, 5 x 10^k steps) covering [lo, hi]; at least two ticks.
std::vector<double> nice_ticks(double lo, double hi, int target_count);
// Powers of 2 (log2) or 10 (log10) covering [lo, hi], thinned to at most max_count.
std::vector<double> log_ticks(double lo, double hi, Scale scale, int max_count);
std::string tick_label(double v, TickFormat format);

}  // namespace layerbench::reports::svg
