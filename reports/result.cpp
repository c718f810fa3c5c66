#include "reports/result.hpp"

#include "stats/summary.hpp"

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

}  // namespace layerbench::reports
