// Sections for layerbench result files: component profile, collective sweep, topology comparison.
#include "reports/sections.hpp"

#include "reports/svg.hpp"
#include "reports/units.hpp"
#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

namespace layerbench::reports {
namespace {

double median_of(const std::vector<double>& x) {
  return x.empty() ? stats::nan_value : stats::summarize(x).median;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_total_name(const std::string& name) {
  const auto n = lower(name);
  return n == "layer" || n == "whole_layer" || n == "whole layer" || n == "total" || n == "moe_layer" ||
         n == "layer_total";
}

std::string source_line(const ResultFile& f) {
  std::string s = fmt::format("Source: `{}`", f.path);
  if (!f.binary.empty()) s += fmt::format(", {}", f.binary);
  if (f.context.contains("backend")) s += fmt::format(", backend {}", f.context["backend"].dump());
  if (f.context.contains("world_size")) s += fmt::format(", world size {}", f.context["world_size"].dump());
  if (f.context.contains("git_sha") && f.context["git_sha"].is_string())
    s += fmt::format(", commit {}", f.context["git_sha"].get<std::string>().substr(0, 12));
  return s + ".";
}

double metric_or(const Measurement& m, const char* key, double fallback) {
  return m.metrics.contains(key) && m.metrics[key].is_number() ? m.metrics[key].get<double>() : fallback;
}

// Canonical order of the sequence-parallel attention components (layerbench-attn).
constexpr const char* kAttnOrder[] = {"qkv_all_to_all", "kv_all_gather", "length_exchange", "pad_pack",
                                      "attention",      "reverse_all_to_all"};

}  // namespace

bool is_comm_component(const std::string& name) {
  return name == "qkv_all_to_all" || name == "kv_all_gather" || name == "length_exchange" ||
         name == "reverse_all_to_all" || name.find("all_to_all") != std::string::npos ||
         name.find("all_gather") != std::string::npos || name.find("dispatch") != std::string::npos;
}

// A component the file marks "in_layer": false (a probe or a collective timed on its own), a
// multi-layer stack (the A/B's L-layer figures) or a reference kernel is not a part of one layer:
// it gets no share, and stays out of the share chart.
bool is_per_layer_component(const Component& c) {
  if (c.in_layer) return *c.in_layer;
  return c.name.rfind("stack_", 0) != 0 && c.name.find("reference") == std::string::npos;
}

Section component_profile(const ResultFile& file) {
  Section s;
  s.title = "Component profile" + (file.binary.empty() ? std::string{} : " — " + file.binary);
  std::vector<Component> parts;
  const Component* total = nullptr;
  for (const auto& c : file.components) {
    if (is_total_name(c.name) && total == nullptr) total = &c;
    else parts.push_back(c);
  }
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.median_ms > b.median_ms; });
  double layer_ms = 0;
  std::string layer_label = "whole layer";
  if (total != nullptr) {
    layer_ms = total->median_ms;
  } else {
    for (const auto& c : parts) layer_ms += c.median_ms;
    layer_label = "sum of components";
  }
  s.intro = source_line(file) + fmt::format(
      " Rank-max median per component; share is of the {} median ({} ms).", layer_label, fmt_fixed(layer_ms, 3));

  Table t;
  t.title = "Component profile";
  t.headers = {"Component", "median ms/layer", "min ms", "max ms", "share of layer"};
  t.align = {Align::left};
  if (total != nullptr)
    t.add_row({layer_label, fmt_fixed(total->median_ms, 3), fmt_fixed(total->min_ms, 3), fmt_fixed(total->max_ms, 3),
               "100.0%"});
  else
    t.add_row({layer_label, fmt_fixed(layer_ms, 3), "—", "—", "100.0%"});
  svg::BarChart chart;
  chart.title = "Share of layer time per component";
  chart.value = {"share of layer", "%"};
  chart.category_label = "component";
  chart.segments = {"median share of layer"};
  chart.horizontal = true;
  for (const auto& c : parts) {
    const double share = layer_ms > 0 ? c.median_ms / layer_ms : stats::nan_value;
    const bool per_layer = is_per_layer_component(c);
    t.add_row({c.name, fmt_fixed(c.median_ms, 3), fmt_fixed(c.min_ms, 3), fmt_fixed(c.max_ms, 3),
               per_layer ? fmt_percent(share) : std::string("—")});
    if (!per_layer) continue;
    chart.categories.push_back(c.name);
    chart.values.push_back({100.0 * share});
    chart.value_labels.push_back(fmt_percent(share) + fmt::format(" ({} ms)", fmt_fixed(c.median_ms, 3)));
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
  s.intro = source_line(file) +
            " busbw = algbw × the nccl-tests factor for the collective (all_reduce 2(n-1)/n, all_gather / "
            "reduce_scatter / all_to_all (n-1)/n), so it can be held against the per-rank link bandwidth" +
            (std::isfinite(link) ? fmt::format(" ({} GB/s).", fmt_fixed(link, 1)) : std::string(" (no link_gbps given)."));

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
  t.headers = {"op", "size", "bytes", "dtype", "placement", "time us", "algbw GB/s", "busbw GB/s"};
  if (std::isfinite(link)) t.headers.push_back("busbw % of link");
  t.headers.push_back("#wrong");
  t.align = {Align::left, Align::right, Align::right, Align::left, Align::left};
  std::map<std::string, svg::Series> series;  // op + placement -> busbw vs size
  std::vector<std::string> order;
  for (const auto* m : rows) {
    const double time_us = metric_or(*m, "time_us", median_of(m->samples_ms) * 1000.0);
    const double busbw = metric_or(*m, "busbw_gbps", stats::nan_value);
    const std::string placement = in_place(m) ? "in-place" : "out-of-place";
    std::vector<std::string> row = {op_of(m), fmt_bytes(bytes_of(m)), fmt::format("{:.0f}", bytes_of(m)),
                                    m->params.value("dtype", std::string{"—"}), placement, fmt_fixed(time_us, 2),
                                    fmt_fixed(metric_or(*m, "algbw_gbps", stats::nan_value), 2), fmt_fixed(busbw, 2)};
    if (std::isfinite(link)) row.push_back(fmt_percent(busbw / link));
    row.push_back(m->metrics.contains("wrong") ? m->metrics["wrong"].dump() : "—");
    t.add_row(std::move(row));
    const std::string key = op_of(m) + " (" + placement + ")";
    if (!series.count(key)) order.push_back(key);
    auto& ser = series[key];
    ser.name = key;
    ser.x.push_back(bytes_of(m));
    ser.y.push_back(busbw);
  }
  s.tables.push_back(std::move(t));

  svg::XYPlot plot;
  plot.title = "Bus bandwidth vs message size";
  plot.x = {"message size", "bytes", svg::Scale::log2, svg::TickFormat::bytes};
  plot.y = {"busbw", "GB/s"};
  plot.y.include_zero = true;
  for (const auto& k : order) plot.series.push_back(series[k]);
  if (std::isfinite(link)) plot.ref_lines.push_back({link, fmt::format("link ceiling {} GB/s", fmt_fixed(link, 0)), false});
  s.figures.push_back(svg::render(plot));
  return s;
}

Section topology_comparison(const ResultFile& file) {
  Section s;
  s.title = "Topology comparison" + (file.binary.empty() ? std::string{} : " — " + file.binary);
  s.intro = source_line(file) +
            " Median ms per component; comm = the collectives (all-to-alls, K/V all-gather, length exchange); "
            "\"vs fastest\" compares totals at the same sequence length.";
  std::vector<std::string> groups;
  std::map<std::string, std::map<std::string, double>> med;  // group -> name -> median ms
  std::vector<std::string> extra_names;
  for (const auto& m : file.results) {
    if (!med.count(m.group)) groups.push_back(m.group);
    med[m.group][m.name] = median_of(m.samples_ms);
    const bool known = m.name == "total" || std::find(std::begin(kAttnOrder), std::end(kAttnOrder), m.name) != std::end(kAttnOrder);
    if (!known && std::find(extra_names.begin(), extra_names.end(), m.name) == extra_names.end()) extra_names.push_back(m.name);
  }
  std::vector<std::string> names(std::begin(kAttnOrder), std::end(kAttnOrder));
  names.insert(names.end(), extra_names.begin(), extra_names.end());
  auto split = [](const std::string& g) {
    const auto slash = g.rfind('/');
    return slash == std::string::npos ? std::make_pair(g, std::string{"—"})
                                      : std::make_pair(g.substr(0, slash), g.substr(slash + 1));
  };
  struct Parts { double comm = 0, kernel = 0, other = 0, total = 0; };
  std::map<std::string, Parts> parts;
  std::map<std::string, double> fastest;  // sequence -> fastest total
  for (const auto& g : groups) {
    Parts p;
    for (const auto& [name, v] : med[g]) {
      if (name == "total") continue;
      if (is_comm_component(name)) p.comm += v;
      else if (name == "attention") p.kernel += v;
      else p.other += v;
    }
    p.total = med[g].count("total") ? med[g]["total"] : p.comm + p.kernel + p.other;
    parts[g] = p;
    const auto seq = split(g).second;
    fastest[seq] = fastest.count(seq) ? std::min(fastest[seq], p.total) : p.total;
  }

  Table t;
  t.title = "Topology comparison (median ms)";
  t.headers = {"topology", "sequence"};
  for (const auto& n : names) t.headers.push_back(n);
  for (const char* h : {"total", "comm", "comm share", "vs fastest"}) t.headers.push_back(h);
  t.align = {Align::left, Align::left};
  svg::BarChart chart;
  chart.title = "Communication vs kernel time per topology";
  chart.value = {"median time", "ms"};
  chart.category_label = "topology / sequence";
  chart.segments = {"communication", "attention kernel", "other (pad/pack)"};
  for (const auto& g : groups) {
    const auto [topo, seq] = split(g);
    std::vector<std::string> row = {topo, seq};
    for (const auto& n : names) row.push_back(med[g].count(n) ? fmt_fixed(med[g][n], 3) : "—");
    const Parts& p = parts[g];
    row.push_back(fmt_fixed(p.total, 3));
    row.push_back(fmt_fixed(p.comm, 3));
    row.push_back(fmt_percent(p.total > 0 ? p.comm / p.total : stats::nan_value));
    const double best = fastest[seq];
    row.push_back(p.total == best ? "fastest" : fmt_signed(100.0 * (p.total / best - 1.0), 1, "%"));
    t.add_row(std::move(row));
    chart.categories.push_back(g);
    chart.values.push_back({p.comm, p.kernel, p.other});
    chart.value_labels.push_back(fmt_fixed(p.total, 2));
  }
  s.tables.push_back(std::move(t));
  s.figures.push_back(svg::render(chart));
  return s;
}

Section results_table(const ResultFile& file) {
  Section s;
  s.title = "Results" + (file.binary.empty() ? std::string{} : " — " + file.binary);
  s.intro = source_line(file) + " Per-iteration rank-max samples summarised.";
  Table t;
  t.title = "Results";
  t.headers = {"name", "group", "params", "n", "median ms", "min ms", "max ms", "cv"};
  t.align = {Align::left, Align::left, Align::left};
  for (const auto& m : file.results) {
    if (m.samples_ms.empty()) {
      t.add_row({m.name, m.group, m.params.dump(), "0", "—", "—", "—", "—"});
      continue;
    }
    const auto sum = stats::summarize(m.samples_ms);
    t.add_row({m.name, m.group, m.params.empty() ? std::string{} : m.params.dump(), std::to_string(sum.n),
               fmt_fixed(sum.median, 3), fmt_fixed(sum.min, 3), fmt_fixed(sum.max, 3), fmt_percent(sum.cv, 2)});
  }
  s.tables.push_back(std::move(t));
  return s;
}

std::vector<Section> result_sections(const ResultFile& file) {
  std::vector<Section> out;
  if (!file.components.empty()) out.push_back(component_profile(file));
  const bool coll = !file.results.empty() && std::all_of(file.results.begin(), file.results.end(), [](const auto& m) {
    return m.params.contains("op") && m.params.contains("bytes");
  });
  const bool attn = !file.results.empty() &&
                    std::any_of(file.results.begin(), file.results.end(), [](const auto& m) { return m.name == "total"; }) &&
                    std::all_of(file.results.begin(), file.results.end(),
                                [](const auto& m) { return m.group.find('/') != std::string::npos; });
  if (coll) out.push_back(collective_sweep(file));
  else if (attn) out.push_back(topology_comparison(file));
  else if (!file.results.empty() && file.components.empty()) out.push_back(results_table(file));
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
  auto scale_of = [](const std::string& u) { return u == "ns" ? 1e-6 : u == "us" ? 1e-3 : u == "s" ? 1e3 : 1.0; };
  for (const auto& b : doc["benchmarks"]) {
    if (!b.is_object()) continue;
    const std::string run = b.value("run_type", std::string("iteration")) == "aggregate"
                                ? b.value("aggregate_name", std::string("aggregate"))
                                : "repetition " + std::to_string(b.value("repetition_index", 0));
    const std::string unit = b.value("time_unit", std::string("ns"));
    const bool pct = b.value("aggregate_unit", std::string("time")) == "percentage";
    auto time_cell = [&](const char* key) {
      if (!b.contains(key) || !b[key].is_number()) return std::string("—");
      const double v = b[key].get<double>();
      return pct ? fmt_share(v) : fmt_time(v * scale_of(unit));
    };
    t.add_row({b.value("name", std::string("?")), run, time_cell("real_time"), time_cell("cpu_time"),
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
