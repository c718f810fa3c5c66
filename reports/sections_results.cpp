// Sections for layerbench result files, from the declared roles and work: compositions, totals compared,
// collective sweep, plain results.
#include "reports/sections.hpp"
#include "common/json_text.hpp"

#include "reports/derived.hpp"
#include "reports/gbench_json.hpp"
#include "reports/profile.hpp"
#include "reports/svg.hpp"
#include "reports/units.hpp"
#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace layerbench::reports {
namespace {

std::string source_line(const ResultFile& f) {
  std::string s = fmt::format("Source: `{}`", f.path);
  if (!f.binary.empty()) s += fmt::format(", {}", f.binary);
  if (f.context.contains("backend")) s += fmt::format(", backend {}", json_text(f.context["backend"]));
  if (f.context.contains("world_size")) s += fmt::format(", world size {}", json_text(f.context["world_size"]));
  if (f.context.contains("git_sha") && f.context["git_sha"].is_string())
    s += fmt::format(", commit {}", f.context["git_sha"].get<std::string>().substr(0, 12));
  return s + ".";
}

}  // namespace

std::string file_stem(const std::string& path) {
  const auto slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const auto dot = base.rfind('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

namespace {

bool has_total(const std::vector<Measurement>& ms, const std::string& group) {
  return std::any_of(ms.begin(), ms.end(), [&](const auto& m) { return m.group == group && m.role == Role::total; });
}

std::vector<std::string> total_groups(const ResultFile& f) {
  std::vector<std::string> out;
  for (const auto& g : groups_of(f.results))
    if (has_total(f.results, g)) out.push_back(g);
  return out;
}

void attach_csv(Section& s, const ResultFile& f, const std::string& title) {
  s.source = file_stem(f.path);
  s.csvs.push_back({title, results_to_csv(f.results)});
}

}  // namespace

Section component_profile(const ResultFile& file) {
  Section s;
  s.title = "Component profile" + (file.binary.empty() ? std::string{} : " — " + file.binary);
  s.intro = source_line(file) +
            " Rank-max medians. Each part is nested under the parent it declares and its share is of that parent; "
            "parts are timed on their own, so the \"other / unaccounted\" remainder is what the parts do not explain "
            "(negative where they overlap inside the parent, or by noise). Rates come from each measurement's "
            "declared work.";
  for (const auto& g : total_groups(file)) {
    const std::string title = g.empty() ? "Composition" : "Composition — " + g;
    auto c = composition(file.results, g, title);
    s.tables.push_back(std::move(c.table));
    for (auto& w : c.warnings) s.notes.push_back("Warning (" + (g.empty() ? std::string("profile") : g) + "): " + w);
    s.figures.push_back(svg::render(composition_chart(file.results, g, "Composition of " + (g.empty() ? std::string("the total") : g))));
  }
  attach_csv(s, file, "results");
  return s;
}

Section totals_comparison(const ResultFile& file, double confidence) {
  Section s;
  s.title = "Totals compared" + (file.binary.empty() ? std::string{} : " — " + file.binary);
  const int level = static_cast<int>(std::lround(100 * confidence));
  s.intro = source_line(file) + fmt::format(
      " The total of each group, its communication (parts with role communication) and, per sequence length, the "
      "ratio to the fastest total with a {}% interval (independent bootstraps of the two medians); a ratio whose "
      "interval contains 1 is unresolved.", level);
  auto split = [](const std::string& g) {
    const auto slash = g.rfind('/');
    return slash == std::string::npos ? std::make_pair(g, std::string{})
                                      : std::make_pair(g.substr(0, slash), g.substr(slash + 1));
  };
  struct Row { std::string group; const Measurement* total = nullptr; double comm = 0, parts = 0; };
  std::vector<Row> rows;
  std::map<std::string, const Measurement*> fastest;  // sequence -> the fastest total
  for (const auto& g : total_groups(file)) {
    Row r{g};
    for (const auto& m : file.results) {
      if (m.group != g) continue;
      if (m.role == Role::total && r.total == nullptr) r.total = &m;
      if (m.role == Role::communication) r.comm += median_ms(m);
    }
    rows.push_back(r);
    const auto seq = split(g).second;
    if (!fastest.count(seq) || median_ms(*r.total) < median_ms(*fastest[seq])) fastest[seq] = r.total;
  }
  Table t;
  t.title = "Totals";
  t.headers = {"group", "sequence", "total", "communication", "communication share",
               fmt::format("vs fastest ({}% CI)", level)};
  t.align = {Align::left, Align::left};
  svg::BarChart chart;
  chart.title = "Total per group: communication and the rest";
  chart.value = {"median time", "ms"};
  chart.value.include_zero = true;
  chart.category_label = "group";
  chart.segments = {"communication", "rest of the total"};
  chart.horizontal = true;
  for (const auto& r : rows) {
    const auto [name, seq] = split(r.group);
    const double tot = median_ms(*r.total);
    std::string vs = "fastest";
    if (fastest[seq] != r.total) {
      const auto e = ratio_of_medians(*r.total, *fastest[seq], confidence);
      vs = e.resolved ? fmt::format("{}x [{}, {}]", fmt_sig(e.value), fmt_sig(e.ci.low), fmt_sig(e.ci.high)) : e.text();
    }
    t.add_row({name, seq.empty() ? "—" : seq, fmt_time(tot), r.comm > 0 ? fmt_time(r.comm) : "—",
               r.comm > 0 && tot > 0 ? fmt_share(r.comm / tot) : "—", vs});
    chart.categories.push_back(r.group);
    chart.values.push_back({std::min(r.comm, tot), std::max(0.0, tot - r.comm)});
    chart.value_labels.push_back(fmt_time(tot));
  }
  s.tables.push_back(std::move(t));
  s.figures.push_back(svg::render(chart));
  return s;
}

Section collective_sweep(const ResultFile& file) {
  Section s;
  s.title = "Collective sweep" + (file.binary.empty() ? std::string{} : " — " + file.binary);
  const double link = file.config.contains("link_gbps") && file.config["link_gbps"].is_number()
                          ? file.config["link_gbps"].get<double>()
                          : stats::nan_value;
  const bool with_link = std::isfinite(link) && link > 0;
  s.intro = source_line(file) +
            " algbw = bytes / median time; busbw = algbw × the collective's declared bus factor (nccl-tests' "
            "convention), so it can be held against the per-rank link bandwidth" +
            (with_link ? fmt::format(" ({}).", fmt_quantity(link * 1e9, Unit::bytes_per_s))
                       : std::string(" (no link bandwidth given: --link-gbps)."));
  std::vector<const Measurement*> rows;
  for (const auto& m : file.results) rows.push_back(&m);
  auto op_of = [](const Measurement* m) { return m->params.value("op", m->name); };
  auto bytes_of = [](const Measurement* m) { return m->params.value("bytes", 0.0); };
  auto in_place = [](const Measurement* m) { return m->params.value("in_place", false); };
  std::stable_sort(rows.begin(), rows.end(), [&](const Measurement* a, const Measurement* b) {
    return std::make_tuple(op_of(a), in_place(a), bytes_of(a)) < std::make_tuple(op_of(b), in_place(b), bytes_of(b));
  });
  Table t;
  t.title = "Collective sweep";
  t.headers = {"op", "size", "bytes", "dtype", "placement", "time", "algbw", "busbw"};
  if (with_link) t.headers.push_back("busbw share of link");
  t.headers.push_back("#wrong");
  t.align = {Align::left, Align::right, Align::right, Align::left, Align::left};
  std::map<std::string, svg::Series> series;  // op + placement -> busbw vs size
  std::vector<std::string> order;
  for (const auto* m : rows) {
    const Rates r = rates_of(*m);
    const std::string placement = in_place(m) ? "in-place" : "out-of-place";
    std::vector<std::string> row = {op_of(m), fmt_bytes(bytes_of(m)), fmt::format("{:.0f}", bytes_of(m)),
                                    m->params.value("dtype", std::string{"—"}), placement, fmt_time(r.median_ms),
                                    fmt_quantity(r.algbw_bytes_per_s, Unit::bytes_per_s),
                                    fmt_quantity(r.busbw_bytes_per_s, Unit::bytes_per_s)};
    if (with_link) row.push_back(fmt_share(r.busbw_bytes_per_s / (link * 1e9)));
    row.push_back(m->metrics.contains("wrong") && m->metrics["wrong"].is_number()
                      ? fmt_sig(m->metrics["wrong"].get<double>()) : "—");
    t.add_row(std::move(row));
    const std::string key = op_of(m) + " (" + placement + ")";
    if (!series.count(key)) order.push_back(key);
    auto& ser = series[key];
    ser.name = key;
    ser.x.push_back(bytes_of(m));
    ser.y.push_back(r.busbw_bytes_per_s / 1e9);
  }
  s.tables.push_back(std::move(t));
  svg::XYPlot plot;
  plot.title = "Bus bandwidth vs message size";
  plot.x = {"message size", "bytes", svg::Scale::log2, svg::TickFormat::bytes};
  plot.y = {"busbw", "GB/s"};
  plot.y.include_zero = true;
  for (const auto& k : order) plot.series.push_back(series[k]);
  if (with_link) plot.ref_lines.push_back({link, "link ceiling " + fmt_quantity(link * 1e9, Unit::bytes_per_s), false});
  s.figures.push_back(svg::render(plot));
  attach_csv(s, file, "results");
  return s;
}

Section results_table(const ResultFile& file) {
  Section s;
  s.title = "Results" + (file.binary.empty() ? std::string{} : " — " + file.binary);
  s.intro = source_line(file) + " Per-iteration rank-max samples summarised.";
  Table t;
  t.title = "Results";
  t.headers = {"name", "group", "role", "params", "n", "median", "min", "max", "cv", "rate"};
  t.align = {Align::left, Align::left, Align::left, Align::left};
  for (const auto& m : file.results) {
    if (m.samples_ms.empty()) {
      t.add_row({m.name, m.group, to_string(m.role), params_text(m.params), "0", "—", "—", "—", "—", ""});
      continue;
    }
    const auto sum = stats::summarize(m.samples_ms);
    t.add_row({m.name, m.group, to_string(m.role), params_text(m.params),
               std::to_string(sum.n), fmt_time(sum.median), fmt_time(sum.min), fmt_time(sum.max), fmt_share(sum.cv),
               rate_text(m)});
  }
  s.tables.push_back(std::move(t));
  attach_csv(s, file, "results");
  return s;
}

Section results_csv_section(const std::string& text, const std::string& path) {
  Section s;
  s.title = "Results (CSV) — " + file_stem(path);
  s.source = file_stem(path);
  s.intro = fmt::format("Source: `{}`, a binary's --csv (reports::results_to_csv): summaries per measurement; rates "
                        "from the declared work in the file's numeric columns.", path);
  Table t;
  t.title = "Results";
  t.headers = {"name", "group", "role", "parent", "n", "median", "min", "max", "rate"};
  t.align = {Align::left, Align::left, Align::left, Align::left};
  for (const auto& r : parse_results_csv(text, path))
    t.add_row({r.name, r.group, r.role, r.parent, r.n, fmt_time(r.median_ms), fmt_time(r.min_ms), fmt_time(r.max_ms),
               rates_text(r.rates)});
  s.tables.push_back(std::move(t));
  s.csvs.push_back({"csv", text});  // the input again, numbers untouched
  return s;
}

std::vector<Section> result_sections(const ResultFile& file, double confidence) {
  std::vector<Section> out;
  for (const auto& g : file.advice) {
    const bool moe = file.binary == "layerbench-moe";
    std::string title = "Advice" + (file.binary.empty() ? std::string{} : " — " + file.binary);
    if (!g.title.empty()) title += ", " + g.title;
    Section s = advice_section(title, g.predictions, moe ? "layout" : "topology",
                               moe ? "predicted layer ms" : "predicted forward ms");
    s.intro = source_line(file) + " The advisor's ranked predictions (notes: where each figure comes from); the "
              "calibration it timed follows.";
    s.notes = collected_notes(g.predictions);
    out.push_back(std::move(s));
  }
  const auto totals = total_groups(file);
  const bool coll = !file.results.empty() && std::all_of(file.results.begin(), file.results.end(), [](const auto& m) {
    return m.params.contains("op") && m.params.contains("bytes");
  });
  if (!totals.empty()) {
    out.push_back(component_profile(file));
    if (totals.size() > 1) out.push_back(totals_comparison(file, confidence));
  } else if (coll) {
    out.push_back(collective_sweep(file));
  } else if (!file.results.empty()) {
    out.push_back(results_table(file));
  }
  return out;
}

Section gbench_section(const nlohmann::json& doc, const std::string& path) {
  Section s;
  s.title = "Google Benchmark results";
  const auto& ctx = doc.value("context", nlohmann::json::object());
  s.intro = fmt::format("Source: `{}`{}.", path,
                        ctx.contains("executable") && ctx["executable"].is_string()
                            ? ", " + ctx["executable"].get<std::string>()
                            : std::string());
  Table t;
  t.title = "Google Benchmark results";
  t.headers = {"benchmark", "run", "real time", "cpu time", "iterations", "bytes/s"};
  t.align = {Align::left, Align::left};
  for (const auto& e : read_gbench_entries(doc, path)) {
    const auto& b = *e.raw;
    const std::string run = e.aggregate ? (e.aggregate_name.empty() ? std::string("aggregate") : e.aggregate_name)
                                        : "repetition " + std::to_string(e.repetition_index);
    auto time_cell = [&](const char* key) {
      const auto v = e.value_ns(key);
      if (!v) return std::string("—");
      return e.percentage ? fmt_share(*v) : fmt_time(*v * 1e-6);
    };
    t.add_row({e.name, run, time_cell("real_time"), time_cell("cpu_time"),
               fmt::format("{}", b.value("iterations", 0)),
               b.contains("bytes_per_second") && b["bytes_per_second"].is_number()
                   ? fmt_quantity(b["bytes_per_second"].get<double>(), Unit::bytes_per_s)
                   : std::string("—")});
  }
  if (t.rows.empty()) throw std::runtime_error(path + ": no benchmarks to report");
  s.tables.push_back(std::move(t));
  return s;
}

}  // namespace layerbench::reports
