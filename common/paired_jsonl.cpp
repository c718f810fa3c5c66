#include "common/paired_jsonl.hpp"

#include "common/json_record.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>
#include <stdexcept>
#include <tuple>

namespace layerbench::jsonl {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
using json_record::Record;
using json_record::Value;

double number(const Value* v) { return v && v->is_number() ? v->number() : kNan; }

long long whole(const Value& v) {
  return v.kind == Value::Kind::integer ? static_cast<long long>(v.integer) : static_cast<long long>(v.unsigned_integer);
}

bool run_failed(const Record& rec) {
  const auto* ok = rec.find("ok");
  if (ok && ok->kind == Value::Kind::boolean && !ok->boolean) return true;
  const auto* status = rec.find("status");
  if (status && status->is_string()) return status->string != "ok" && status->string != "success";
  const auto* error = rec.find("error");
  return error && !error->is_null();
}

// The value a run carries for `metric`; NaN when absent. `primary` is the name of the study's own
// metric (a layerbench-ab header's), whose value is the run's "metric"; empty for a file without
// one, where a numeric "metric" is the value whatever was asked. `line` is the record's text, read
// as a document only where a value's type makes nlohmann::json's own lookup throw (the same error).
double run_value(const Record& rec, const std::string& metric, const std::string& primary, std::string_view line) {
  const auto* own = rec.find("metric");
  if (own && own->is_number() && (primary.empty() || metric.empty() || metric == primary)) return own->number();
  if (!metric.empty()) {
    if (const auto* v = rec.find("metrics", metric)) return number(v);
    if (const auto* v = rec.find(metric)) return number(v);
    if (!primary.empty()) return kNan;  // a layerbench-ab run: its "metric" is the primary metric's value
    if (own && !own->is_string()) (void)nlohmann::json::parse(line).value("metric", std::string{});  // throws
    if (own && own->string == metric && rec.find("value")) return number(rec.find("value"));
    return kNan;
  }
  return number(rec.find("value"));
}

// The name of the study's own metric: a layerbench-ab header's --metric spec, named.
std::string primary_metric(const nlohmann::json& header) {
  if (header.value("type", std::string{}) != "study" || !header.contains("metric") || !header["metric"].is_string())
    return {};
  return metric_spec_name(header["metric"].get<std::string>()).name;
}

// The metric a study measures when the caller did not name one.
std::string default_metric(const nlohmann::json& header, const nlohmann::json& first_run) {
  if (auto primary = primary_metric(header); !primary.empty()) return primary;
  for (const char* key : {"metric", "metric_name"}) {
    if (header.contains(key) && header[key].is_string()) return header[key].get<std::string>();
    if (first_run.contains(key) && first_run[key].is_string()) return first_run[key].get<std::string>();
  }
  if (first_run.contains("metrics") && first_run["metrics"].is_object() && first_run["metrics"].size() == 1)
    return first_run["metrics"].begin().key();
  return {};
}

struct Run {
  long long pair, attempt;
  int arm;  // 0 base, 1 candidate, N candidateN
  double value;  // NaN: failed or without the metric
  std::size_t line;
  auto key() const { return std::tie(pair, attempt, arm, line); }
};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Every metric name a study carries (the primary and each run's "metrics"), for a message.
std::string known_metrics(const nlohmann::json& header, const std::optional<nlohmann::json>& first_run) {
  std::vector<std::string> names;
  if (auto primary = primary_metric(header); !primary.empty()) names.push_back(primary);
  if (header.contains("metrics") && header["metrics"].is_array())
    for (const auto& m : header["metrics"])
      if (m.is_string()) names.push_back(metric_spec_name(m.get<std::string>()).name);
  if (first_run && first_run->contains("metrics") && (*first_run)["metrics"].is_object())
    for (const auto& [k, v] : (*first_run)["metrics"].items()) names.push_back(k);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// base -> 0, candidate -> 1, candidateN -> N (N >= 2); -1 for anything else.
int arm_index(const std::string& arm) {
  if (arm == "base") return 0;
  if (arm == "candidate") return 1;
  if (arm.size() > 9 && arm.size() < 15 && arm.rfind("candidate", 0) == 0 &&
      arm.find_first_not_of("0123456789", 9) == std::string::npos) {
    const int n = std::stoi(arm.substr(9));
    return n >= 2 ? n : -1;
  }
  return -1;
}

std::string arm_name(int arm) { return arm == 0 ? "base" : arm == 1 ? "candidate" : fmt::format("candidate{}", arm); }

}  // namespace

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

PairedRuns read_paired_runs(std::string_view text, const std::string& path, const std::string& metric_in,
                            const std::string& candidate_arm) {
  const int target = arm_index(lower(candidate_arm));
  if (target < 1) throw std::invalid_argument("read_paired_runs: the candidate arm is candidate or candidateN");
  PairedRuns out;
  Record rec;
  std::vector<Run> runs;
  std::optional<nlohmann::json> first_run;
  std::string metric = metric_in;
  std::string primary;  // the name of a layerbench-ab study's own metric
  // The first record that fails the run checks (after the whole file parses: a parse error anywhere
  // comes first); the runs after it are not checked.
  std::exception_ptr failure;
  std::size_t runs_seen = 0;
  bool metric_seen = false;
  std::size_t pos = 0;
  for (std::size_t line_no = 1; pos < text.size(); ++line_no) {
    const auto nl = text.find('\n', pos);
    const auto line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    if (line.find_first_not_of(" \t\r\n") == std::string_view::npos) continue;
    if (!rec.parse(line)) {
      // A study killed mid-write ends in a torn line without a newline: skip it, only there
      // (layerbench-ab analyze does the same).
      if (text.find_first_not_of(" \t\r\n", pos) == std::string_view::npos) break;
      throw std::runtime_error(fmt::format("{}:{}: invalid or truncated JSON record", path, line_no));
    }
    if (!rec.is_object()) throw std::runtime_error(fmt::format("{}:{}: record is not a JSON object", path, line_no));
    const auto* pair = rec.find("pair");
    const auto* arm_value = rec.find("arm");
    if (!pair || !arm_value) {
      if (out.header.empty()) out.header = nlohmann::json::parse(line);  // the header (a summary record carries no pair)
      continue;
    }
    if (++runs_seen == 1) {
      first_run = nlohmann::json::parse(line);
      if (metric.empty()) metric = default_metric(out.header, *first_run);
      primary = primary_metric(out.header);
      // The spec as written ("lat=regex:...") names the primary metric too.
      if (!primary.empty() && metric == out.header["metric"].get<std::string>()) metric = primary;
    }
    if (failure) continue;
    try {
      const auto where = [&] { return fmt::format("{}:{}", path, line_no); };
      if (!pair->is_whole()) throw std::runtime_error(where() + ": \"pair\" is not an integer");
      const int arm = arm_index(lower(arm_value->is_string() ? arm_value->string : std::string{}));
      if (arm < 0)
        throw std::runtime_error(where() + ": \"arm\" must be \"base\", \"candidate\" or \"candidateN\"");
      const auto* attempt = rec.find("attempt");
      runs.push_back({whole(*pair), attempt && attempt->is_whole() ? whole(*attempt) : 0, arm, kNan,
                      line_no});  // before its value: a duplicate is the earlier error
      // The other arms count only for the pairing rule: an attempt is complete when all its arms succeeded.
      if (arm == 0 || arm == target) {
        runs.back().value = run_failed(rec) ? kNan : run_value(rec, metric, primary, line);
        metric_seen |= !std::isnan(runs.back().value);
      } else {
        runs.back().value = run_failed(rec) ? kNan : 0.0;
      }
    } catch (...) {
      failure = std::current_exception();
    }
  }
  if (runs_seen == 0) throw std::runtime_error(path + ": no study runs (records with \"pair\" and \"arm\")");
  // The header came after the first run and names another metric: read again with that one.
  if (metric_in.empty() && default_metric(out.header, *first_run) != metric)
    return read_paired_runs(text, path, default_metric(out.header, *first_run), candidate_arm);

  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.key() < b.key(); });
  // A duplicate run before the first failed record is the earlier error.
  const Run* duplicate = nullptr;
  for (std::size_t i = 1; i < runs.size(); ++i) {
    const auto& a = runs[i - 1];
    const auto& b = runs[i];
    if (a.pair == b.pair && a.attempt == b.attempt && a.arm == b.arm && (!duplicate || b.line < duplicate->line))
      duplicate = &b;
  }
  if (duplicate)
    throw std::runtime_error(fmt::format("{}:{}: pair {} attempt {} has a second {} run (duplicate record)", path,
                                         duplicate->line, duplicate->pair, duplicate->attempt,
                                         arm_name(duplicate->arm)));
  if (failure) std::rethrow_exception(failure);
  if (!metric_seen) {
    const auto known = known_metrics(out.header, first_run);
    throw std::runtime_error(fmt::format("{}: no run carries metric '{}'{}", path, metric.empty() ? "value" : metric,
                                         known.empty() ? "" : " (the study records " + known + ")"));
  }

  out.metric = metric;
  if (!primary.empty() && metric == primary) {
    out.unit = metric_spec_name(out.header["metric"].get<std::string>()).unit;
  } else if (out.header.contains("metrics") && out.header["metrics"].is_array()) {
    for (const auto& m : out.header["metrics"])
      if (m.is_string() && metric_spec_name(m.get<std::string>()).name == metric)
        out.unit = metric_spec_name(m.get<std::string>()).unit;
  }
  // A layerbench-ab header names its arms; an attempt is complete when every one of them succeeded.
  std::size_t arms = 0;
  if (out.header.value("type", std::string{}) == "study")
    arms = 2 + (out.header.contains("more_candidates") && out.header["more_candidates"].is_array()
                    ? out.header["more_candidates"].size()
                    : 0);
  for (std::size_t g = 0; g < runs.size();) {
    // One (pair, attempt): its base and candidate (sorted base first), and whether every arm succeeded.
    double v[2] = {kNan, kNan};
    bool all_ok = true;
    std::size_t present = 0;
    std::size_t end = g;
    for (; end < runs.size() && runs[end].pair == runs[g].pair && runs[end].attempt == runs[g].attempt; ++end) {
      const auto& r = runs[end];
      if (r.arm == 0 || r.arm == target) v[r.arm == 0 ? 0 : 1] = r.value;
      all_ok &= !std::isnan(r.value);
      ++present;
    }
    const long long id = runs[g].pair;
    g = end;
    if (!all_ok || (arms && present < arms)) continue;
    if (!std::isfinite(v[0]) || !std::isfinite(v[1]) || (!out.pair_ids.empty() && out.pair_ids.back() == id)) continue;
    if (v[0] < 0 || v[1] < 0)
      throw std::runtime_error(fmt::format("{}: pair {}: negative value {} (relative changes need non-negative "
                                           "measurements)", path, id, v[0] < 0 ? v[0] : v[1]));
    out.pair_ids.push_back(id);
    out.base.push_back(v[0]);
    out.candidate.push_back(v[1]);
  }
  if (out.base.empty()) throw std::runtime_error(path + ": no complete base/candidate pairs");
  return out;
}

}  // namespace layerbench::jsonl
