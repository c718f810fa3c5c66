#include "reports/result.hpp"

#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace layerbench::reports {

nlohmann::json to_json(const Measurement& m) {
  nlohmann::json j;
  j["name"] = m.name;
  if (!m.group.empty()) j["group"] = m.group;
  j["params"] = m.params;
  j["metrics"] = m.metrics;
  j["samples_ms"] = m.samples_ms;
  if (!m.samples_ms.empty()) {
    const auto s = stats::summarize(m.samples_ms);
    j["n"] = s.n;
    j["median_ms"] = s.median;
    j["min_ms"] = s.min;
    j["max_ms"] = s.max;
    j["mean_ms"] = s.mean;
    j["p10_ms"] = s.p10;
    j["p90_ms"] = s.p90;
    j["cv"] = s.cv;
  }
  return j;
}

Measurement measurement_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("name") || !j.contains("samples_ms"))
    throw std::runtime_error("measurement needs \"name\" and \"samples_ms\"");
  Measurement m;
  m.name = j.at("name").get<std::string>();
  m.group = j.value("group", std::string{});
  m.params = j.value("params", nlohmann::json::object());
  m.metrics = j.value("metrics", nlohmann::json::object());
  m.samples_ms = j.at("samples_ms").get<std::vector<double>>();
  return m;
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

namespace {
std::string scalar_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }
}  // namespace

std::string results_to_csv(const std::vector<Measurement>& results) {
  // Metric columns: the union over all measurements, in first-seen order.
  std::vector<std::string> metric_keys;
  for (const auto& m : results)
    for (auto it = m.metrics.begin(); it != m.metrics.end(); ++it)
      if (std::find(metric_keys.begin(), metric_keys.end(), it.key()) == metric_keys.end())
        metric_keys.push_back(it.key());
  std::string out = "name,group,params,n,median_ms,min_ms,max_ms,mean_ms,p10_ms,p90_ms,cv";
  for (const auto& k : metric_keys) out += "," + csv_cell(k);
  out += "\n";
  for (const auto& m : results) {
    std::string params;
    for (auto it = m.params.begin(); it != m.params.end(); ++it)
      params += (params.empty() ? "" : ";") + it.key() + "=" + scalar_text(it.value());
    out += csv_cell(m.name) + "," + csv_cell(m.group) + "," + csv_cell(params);
    if (m.samples_ms.empty()) {
      out += ",0,,,,,,,";
    } else {
      const auto s = stats::summarize(m.samples_ms);
      out += fmt::format(",{},{},{},{},{},{},{},{}", s.n, s.median, s.min, s.max, s.mean, s.p10, s.p90, s.cv);
    }
    for (const auto& k : metric_keys) out += "," + (m.metrics.contains(k) ? csv_cell(scalar_text(m.metrics.at(k))) : "");
    out += "\n";
  }
  return out;
}

}  // namespace layerbench::reports
