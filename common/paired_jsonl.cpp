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

// The value a run carries for `metric`; NaN when absent. `line` is the record's text, read as a
// document only where a value's type makes nlohmann::json's own lookup throw (the same error).
double run_value(const Record& rec, const std::string& metric, std::string_view line) {
  const auto* own = rec.find("metric");
  if (own && own->is_number()) return own->number();  // layerbench-ab run
  if (!metric.empty()) {
    if (const auto* v = rec.find("metrics", metric)) return number(v);
    if (const auto* v = rec.find(metric)) return number(v);
    if (own && !own->is_string()) (void)nlohmann::json::parse(line).value("metric", std::string{});  // throws
    if (own && own->string == metric && rec.find("value")) return number(rec.find("value"));
    return kNan;
  }
  return number(rec.find("value"));
}

// The metric a study measures when the caller did not name one.
std::string default_metric(const nlohmann::json& header, const nlohmann::json& first_run) {
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
  int arm;  // 0 base, 1 candidate
  double value;  // NaN: failed or without the metric
  std::size_t line;
  auto key() const { return std::tie(pair, attempt, arm, line); }
};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

PairedRuns read_paired_runs(std::string_view text, const std::string& path, const std::string& metric_in) {
  PairedRuns out;
  Record rec;
  std::vector<Run> runs;
  std::optional<nlohmann::json> first_run;
  std::string metric = metric_in;
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
    }
    if (failure) continue;
    try {
      const auto where = [&] { return fmt::format("{}:{}", path, line_no); };
      if (!pair->is_whole()) throw std::runtime_error(where() + ": \"pair\" is not an integer");
      const auto arm = lower(arm_value->is_string() ? arm_value->string : std::string{});
      // A study of more arms ("candidate2", ...) is read as base against the first candidate.
      if (arm.size() > 9 && arm.rfind("candidate", 0) == 0 && arm.find_first_not_of("0123456789", 9) == std::string::npos)
        continue;
      if (arm != "base" && arm != "candidate")
        throw std::runtime_error(where() + ": \"arm\" must be \"base\" or \"candidate\"");
      const auto* attempt = rec.find("attempt");
      runs.push_back({whole(*pair), attempt && attempt->is_whole() ? whole(*attempt) : 0, arm == "base" ? 0 : 1, kNan,
                      line_no});  // before its value: a duplicate is the earlier error
      runs.back().value = run_failed(rec) ? kNan : run_value(rec, metric, line);
      metric_seen |= !std::isnan(runs.back().value);
    } catch (...) {
      failure = std::current_exception();
    }
  }
  if (runs_seen == 0) throw std::runtime_error(path + ": no study runs (records with \"pair\" and \"arm\")");
  // The header came after the first run and names another metric: read again with that one.
  if (metric_in.empty() && default_metric(out.header, *first_run) != metric)
    return read_paired_runs(text, path, default_metric(out.header, *first_run));

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
                                         duplicate->arm == 0 ? "base" : "candidate"));
  if (failure) std::rethrow_exception(failure);
  if (!metric_seen)
    throw std::runtime_error(fmt::format("{}: no run carries metric '{}'", path, metric.empty() ? "value" : metric));

  out.metric = metric;
  for (std::size_t g = 0; g < runs.size();) {
    // One (pair, attempt): its base and candidate (sorted base first).
    double v[2] = {kNan, kNan};
    std::size_t end = g;
    for (; end < runs.size() && runs[end].pair == runs[g].pair && runs[end].attempt == runs[g].attempt; ++end)
      v[runs[end].arm] = runs[end].value;
    const long long id = runs[g].pair;
    g = end;
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
