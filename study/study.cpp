#include "study/study.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <limits>

#include "study/errors.hpp"
#include "common/text.hpp"

namespace layerbench::ab {

nlohmann::json sequential_design_json(const stats::SequentialDesign& d) {
  return {{"alpha", d.alpha},
          {"tau", d.effective_tau()},
          {"tune_pairs", d.tune_pairs},
          {"min_pairs", d.min_pairs},
          {"equivalence", d.equivalence},
          {"equivalence_relative", d.equivalence_relative}};
}

stats::SequentialDesign sequential_design_from_json(const nlohmann::json& j, std::size_t max_pairs) {
  stats::SequentialDesign d;
  d.alpha = j.at("alpha").get<double>();
  d.tune_pairs = j.value("tune_pairs", d.tune_pairs);
  d.tau = j.at("tau").get<double>();
  d.min_pairs = j.value("min_pairs", d.min_pairs);
  d.equivalence = j.value("equivalence", 0.0);
  d.equivalence_relative = j.value("equivalence_relative", true);
  d.max_pairs = max_pairs;
  return d;
}

std::vector<Arm> arms_of(const StudyConfig& c) {
  std::vector<Arm> arms{{"base", "base", c.base}, {"candidate", "candidate", c.candidate}};
  for (std::size_t i = 0; i < c.more_candidates.size(); ++i) {
    const auto key = fmt::format("candidate{}", i + 2);
    arms.push_back({key, key, c.more_candidates[i]});
  }
  for (std::size_t i = 0; i < arms.size() && i < c.names.size(); ++i) {
    if (!c.names[i].empty()) arms[i].name = c.names[i];
  }
  return arms;
}

nlohmann::json header_json(const StudyConfig& c) {
  nlohmann::json j = {{"type", "study"},          {"version", 1},          {"base", c.base},
                      {"candidate", c.candidate}, {"prepare", c.prepare},  {"pairs", c.pairs},
                      {"warmup", c.warmup},       {"order", c.order},      {"metric", c.metric},
                      {"timeout", c.timeout},     {"retries", c.retries},  {"seed", c.seed},
                      {"check_output", c.check_output}, {"telemetry", c.telemetry},
                      {"telemetry_period_ms", c.telemetry_period_ms}, {"telemetry_status", c.telemetry_status}};
  if (c.sequential) j["sequential"] = sequential_design_json(*c.sequential);
  if (!c.more_candidates.empty()) j["more_candidates"] = c.more_candidates;
  if (!c.names.empty()) j["names"] = c.names;
  if (!c.metrics.empty()) j["metrics"] = c.metrics;
  if (c.ignore_failure) j["ignore_failure"] = true;
  if (c.shell != "sh") j["shell"] = c.shell;
  if (c.spawn_wall > 0 || c.spawn_user > 0 || c.spawn_sys > 0)
    j["shell_spawn"] = {{"wall_s", c.spawn_wall}, {"user_s", c.spawn_user}, {"sys_s", c.spawn_sys}};
  if (std::isfinite(c.load_avg)) j["load"] = {{"load_avg_1m", c.load_avg}, {"cpus", c.cpus}};
  return j;
}

nlohmann::json run_json(const RunRecord& r) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [name, v] : r.metrics) metrics[name] = v;
  nlohmann::json j = {{"type", "run"},     {"pair", r.pair},       {"attempt", r.attempt},
                      {"arm", r.arm},      {"position", r.position}, {"start", r.start},
                      {"metric", nullptr}, {"wall", r.wall},       {"user", r.user},
                      {"sys", r.sys},      {"peak_rss_kib", r.peak_rss_kib}, {"metrics", metrics},
                      {"exit", r.exit_code}, {"status", r.status}, {"stdout_tail", r.stdout_tail}};
  if (r.metric) j["metric"] = *r.metric;
  if (!r.output_hash.empty()) j["output_hash"] = r.output_hash;
  if (!r.telemetry.is_null()) j["telemetry"] = r.telemetry;
  return j;
}

nlohmann::json excluded_json(std::size_t pair) { return {{"type", "pair_excluded"}, {"pair", pair}}; }

std::vector<CompletedPair> completed_pairs(const Study& study, const std::string& candidate_key) {
  const auto arms = arms_of(study.config);
  // The runs in (pair, attempt) order; records of one attempt stay in file order, so a later
  // record of an arm stands for it (records arrive in this order, so the sort is rarely needed).
  std::vector<std::size_t> order(study.runs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto before = [&](std::size_t a, std::size_t b) {
    const auto& x = study.runs[a];
    const auto& y = study.runs[b];
    return x.pair != y.pair ? x.pair < y.pair : x.attempt < y.attempt;
  };
  if (!std::is_sorted(order.begin(), order.end(), before)) std::stable_sort(order.begin(), order.end(), before);
  std::vector<CompletedPair> out;
  std::size_t last_pair = SIZE_MAX;
  std::vector<const RunRecord*> of_arm(arms.size());
  for (std::size_t g = 0; g < order.size();) {
    const auto& first = study.runs[order[g]];
    std::size_t end = g;
    const RunRecord* b = nullptr;
    const RunRecord* c = nullptr;
    std::fill(of_arm.begin(), of_arm.end(), nullptr);
    for (; end < order.size() && !before(order[g], order[end]); ++end) {  // one (pair, attempt)
      const auto& r = study.runs[order[end]];
      for (std::size_t a = 0; a < arms.size(); ++a) {
        if (arms[a].key == r.arm) of_arm[a] = &r;
      }
      if (r.arm == "base") b = &r;
      if (r.arm == candidate_key) c = &r;
    }
    g = end;
    const bool complete =
        std::all_of(of_arm.begin(), of_arm.end(), [](const RunRecord* r) { return r && r->status == "ok"; });
    if (!complete || !c) continue;
    if (first.pair == last_pair) continue;  // keep the first complete attempt of a pair
    last_pair = first.pair;
    constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
    out.push_back({first.pair, b->metric.value_or(kNan), c->metric.value_or(kNan), b->position < c->position,
                   std::min(b->start, c->start),
                   b->output_hash, c->output_hash, b->telemetry, c->telemetry, b, c});
  }
  return out;
}

std::optional<stats::SequentialResult> sequential_state(const Study& study) {
  if (!study.config.sequential) return std::nullopt;
  std::vector<double> base, candidate;
  for (const auto& p : completed_pairs(study)) {
    base.push_back(p.base);
    candidate.push_back(p.candidate);
  }
  auto design = *study.config.sequential;
  design.max_pairs = study.config.pairs;
  return stats::sequential_decision(base, candidate, design);
}

Study truncated_at_stop(const Study& study, const stats::SequentialResult& state) {
  const auto pairs = completed_pairs(study);
  if (state.stop == stats::SequentialStop::running || state.pairs == 0 || state.pairs >= pairs.size()) return study;
  const std::size_t last = pairs[state.pairs - 1].pair;
  Study out = study;
  std::erase_if(out.runs, [&](const RunRecord& r) { return r.pair > last; });
  std::erase_if(out.excluded, [&](std::size_t p) { return p > last; });
  return out;
}

std::vector<PairState> pair_states(const Study& study, std::size_t num_pairs) {
  std::vector<PairState> states(num_pairs);
  std::vector<std::pair<std::size_t, std::size_t>> failed;  // (pair, attempt) of each failed run (few)
  for (const auto& r : study.runs) {
    if (r.pair >= num_pairs) continue;
    states[r.pair].next_attempt = std::max(states[r.pair].next_attempt, r.attempt + 1);
    if (r.status != "ok") failed.emplace_back(r.pair, r.attempt);
  }
  std::sort(failed.begin(), failed.end());
  failed.erase(std::unique(failed.begin(), failed.end()), failed.end());  // an attempt fails once
  for (const auto& key : failed) ++states[key.first].failed_attempts;
  for (const auto& p : completed_pairs(study)) {
    if (p.pair < num_pairs) states[p.pair].completed = true;
  }
  for (auto p : study.excluded) {
    if (p < num_pairs) states[p].excluded = true;
  }
  return states;
}

MetricName metric_spec_name(std::string_view spec) {
  // NAME[(UNIT)]= at the front; NAME is [A-Za-z_][A-Za-z0-9_.-]* (no ':', so never a source keyword).
  std::size_t i = 0;
  auto name_char = [](char c, bool first) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
           (!first && (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-'));
  };
  while (i < spec.size() && name_char(spec[i], i == 0)) ++i;
  if (i > 0 && i < spec.size()) {
    MetricName m{std::string(spec.substr(0, i)), {}, false};
    if (spec[i] == '=') return m;
    if (spec[i] == '(') {
      const auto close = spec.find(')', i);
      if (close != std::string_view::npos && close + 1 < spec.size() && spec[close + 1] == '=' &&
          spec.substr(i + 1, close - i - 1).find('(') == std::string_view::npos) {
        m.unit = std::string(spec.substr(i + 1, close - i - 1));
        m.unit_declared = true;
        return m;
      }
    }
  }
  if (spec == "wall" || spec == "user" || spec == "sys") return {std::string(spec), "s", false};
  if (spec == "peak_rss") return {"peak_rss", "KiB", false};
  return {"metric", "", false};
}

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// A run's value of `metric` (NaN where it has none). `own`: the metric is the study's own.
double value_of(const Study& study, const RunRecord& r, const std::string& metric, bool own) {
  if (r.metric && (own || !study.journal)) return *r.metric;
  const auto key = !study.journal && metric.empty() ? std::string("value") : metric;
  if (const auto it = r.metrics.find(key); it != r.metrics.end()) return it->second;
  if (!study.journal) return kNan;
  // A journal's resource columns, whether or not --metric named them.
  if (metric == "wall") return r.wall;
  if (metric == "user") return r.user;
  if (metric == "sys") return r.sys;
  if (metric == "peak_rss" || metric == "peak_rss_kib") return r.peak_rss_kib;
  return kNan;
}

// Every metric name a study carries (its own, its --metric specs and the first run's), for a message.
std::string known_metrics(const Study& study) {
  std::vector<std::string> names;
  if (!study.metric.empty()) names.push_back(study.metric);
  for (const auto& spec : study.config.metrics) names.push_back(metric_spec_name(spec).name);
  if (!study.runs.empty())
    for (const auto& [k, v] : study.runs.front().metrics) names.push_back(k);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

PairedStudy paired_values(const Study& study, const std::string& path, const std::string& metric_in,
                          const std::string& candidate_key) {
  PairedStudy out;
  out.path = path;
  out.header = study.header;
  out.candidate_arm = candidate_key;
  // The arms' display names (layerbench-ab run --name: base first, then each candidate).
  for (const auto& arm : arms_of(study.config)) {
    if (arm.key == "base" && study.journal) out.base_label = arm.name;
    if (arm.key == candidate_key) out.candidate_label = arm.name;
  }
  if (study.runs.empty()) throw InputError(path + ": no study runs (records with \"pair\" and \"arm\")");
  // The spec as written ("lat=regex:...") names the study's own metric too.
  out.metric = metric_in.empty() || (study.journal && metric_in == study.config.metric) ? study.metric : metric_in;
  const bool own = study.journal && out.metric == study.metric;
  bool carried = false;
  for (const auto& r : study.runs) {
    if (r.status == "ok" && (r.arm == "base" || r.arm == candidate_key))
      carried = carried || std::isfinite(value_of(study, r, out.metric, own));
  }
  if (!carried) {
    const auto known = study.journal ? known_metrics(study) : std::string{};
    throw InputError(fmt::format("{}: no run carries metric '{}'{}", path, out.metric.empty() ? "value" : out.metric,
                                 known.empty() ? "" : " (the study records " + known + ")"));
  }
  if (own) {
    out.unit = metric_spec_name(study.config.metric).unit;
  } else if (study.journal) {
    for (const auto& spec : study.config.metrics)
      if (const auto m = metric_spec_name(spec); m.name == out.metric) out.unit = m.unit;
    if (out.unit.empty()) out.unit = out.metric == "peak_rss" || out.metric == "peak_rss_kib" ? "KiB"
                                     : out.metric == "wall" || out.metric == "user" || out.metric == "sys" ? "s"
                                                                                                             : "";
  }
  for (const auto& p : completed_pairs(study, candidate_key)) {
    const double b = value_of(study, *p.base_run, out.metric, own);
    const double c = value_of(study, *p.candidate_run, out.metric, own);
    if (!std::isfinite(b) || !std::isfinite(c)) continue;
    out.pair_ids.push_back(static_cast<long long>(p.pair));
    out.base.push_back(b);
    out.candidate.push_back(c);
  }
  return out;
}

void require_non_negative(const PairedStudy& v, const std::string& path) {
  for (std::size_t i = 0; i < v.base.size(); ++i) {
    if (v.base[i] < 0 || v.candidate[i] < 0)
      throw InputError(fmt::format("{}: pair {}: negative value {} (relative changes need non-negative measurements)",
                                   path, v.pair_ids[i], v.base[i] < 0 ? v.base[i] : v.candidate[i]));
  }
}

}  // namespace layerbench::ab
