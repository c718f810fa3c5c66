#include "reports/result.hpp"
#include "common/json_text.hpp"
#include "common/json_number.hpp"
#include "common/text.hpp"
#include "common/usage.hpp"

#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace layerbench::reports {

namespace {
constexpr std::pair<Role, const char*> kRoles[] = {
    {Role::part, "part"},           {Role::total, "total"}, {Role::communication, "communication"},
    {Role::reference, "reference"}, {Role::stack, "stack"}, {Role::probe, "probe"},
};
}  // namespace

std::string to_string(Role r) {
  for (const auto& [role, name] : kRoles)
    if (role == r) return name;
  return "part";
}

Role parse_role(const std::string& s) {
  for (const auto& [role, name] : kRoles)
    if (s == name) return role;
  throw std::runtime_error(fmt::format("unknown measurement role '{}'", s));
}

double median_ms(const Measurement& m) {
  return m.samples_ms.empty() ? std::numeric_limits<double>::quiet_NaN() : stats::summarize(m.samples_ms).median;
}

Rates rates_of(const Measurement& m) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  Rates r;
  r.median_ms = median_ms(m) / std::max(1, m.instances);
  const double s = r.median_ms * 1e-3;
  const bool timed = std::isfinite(s) && s > 0;
  r.flop_per_s = timed && m.work.flops > 0 ? m.work.flops / s : nan;
  r.algbw_bytes_per_s = timed && m.work.bytes > 0 ? m.work.bytes / s : nan;
  r.busbw_bytes_per_s = timed && m.work.bytes > 0 && m.work.bus_factor > 0 ? r.algbw_bytes_per_s * m.work.bus_factor : nan;
  return r;
}

double Energy::per_instance_j(int instances) const {
  return present() ? joules / calls / std::max(1, instances) : std::numeric_limits<double>::quiet_NaN();
}

double Energy::mean_w() const {
  return present() && seconds > 0 ? joules / seconds / devices : std::numeric_limits<double>::quiet_NaN();
}

nlohmann::json to_json(const Measurement& m) {
  nlohmann::json j;
  j["name"] = m.name;
  if (!m.group.empty()) j["group"] = m.group;
  j["role"] = to_string(m.role);
  if (!m.parent.empty()) j["parent"] = m.parent;
  if (m.instances != 1) j["instances"] = m.instances;
  j["params"] = m.params;
  j["metrics"] = m.metrics;
  if (!m.work.empty()) {
    j["work"] = {{"flops", m.work.flops}, {"bytes", m.work.bytes}, {"bus_factor", m.work.bus_factor}};
    const Rates r = rates_of(m);
    j["rates"] = {{"flop_per_s", finite_or_null(r.flop_per_s)},
                  {"algbw_bytes_per_s", finite_or_null(r.algbw_bytes_per_s)},
                  {"busbw_bytes_per_s", finite_or_null(r.busbw_bytes_per_s)}};
  }
  if (m.energy.present())
    j["energy"] = {{"unit", "J"},
                   {"joules", m.energy.joules},
                   {"window_s", finite_or_null(m.energy.seconds)},
                   {"calls", m.energy.calls},
                   {"devices", m.energy.devices},
                   {"per_instance_j", finite_or_null(m.energy.per_instance_j(m.instances))},
                   {"mean_w_per_device", finite_or_null(m.energy.mean_w())}};
  else
    j["energy"] = nullptr;
  if (!m.reference.empty()) j["reference"] = {{"name", m.reference}, {"samples_ms", m.reference_samples_ms}};
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
    throw UsageError("measurement needs \"name\" and \"samples_ms\"");
  Measurement m;
  m.name = j.at("name").get<std::string>();
  m.group = j.value("group", std::string{});
  m.params = j.value("params", nlohmann::json::object());
  m.metrics = j.value("metrics", nlohmann::json::object());
  m.samples_ms = j.at("samples_ms").get<std::vector<double>>();
  if (j.contains("role")) m.role = parse_role(j.at("role").get<std::string>());
  m.parent = j.value("parent", std::string{});
  m.instances = std::max(1, j.value("instances", 1));
  if (j.contains("work") && j["work"].is_object()) {
    const auto& w = j["work"];
    m.work.flops = w.value("flops", 0.0);
    m.work.bytes = w.value("bytes", 0.0);
    m.work.bus_factor = w.value("bus_factor", 0.0);
  }
  if (j.contains("energy") && j["energy"].is_object()) {
    const auto& e = j["energy"];
    if (e.value("unit", std::string("J")) != "J") throw UsageError("measurement energy must be declared in J");
    m.energy.joules = e.contains("joules") && e["joules"].is_number() ? e["joules"].get<double>() : m.energy.joules;
    m.energy.seconds = e.contains("window_s") && e["window_s"].is_number() ? e["window_s"].get<double>() : m.energy.seconds;
    m.energy.calls = e.value("calls", 0);
    m.energy.devices = e.value("devices", 0);
  }
  if (j.contains("reference") && j["reference"].is_object()) {
    m.reference = j["reference"].value("name", std::string{});
    m.reference_samples_ms = j["reference"].value("samples_ms", std::vector<double>{});
  }
  return m;
}


namespace {
std::string scalar_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  return json_text(v);
}
}  // namespace

std::string params_text(const nlohmann::json& params) {
  if (!params.is_object()) return params.is_null() ? std::string{} : json_text(params);
  std::string out;
  for (auto it = params.begin(); it != params.end(); ++it)
    out += (out.empty() ? "" : ";") + it.key() + "=" + scalar_text(it.value());
  return out;
}

std::string results_to_csv(const std::vector<Measurement>& results) {
  // Metric columns: the union over all measurements, in first-seen order.
  std::vector<std::string> metric_keys;
  for (const auto& m : results)
    for (auto it = m.metrics.begin(); it != m.metrics.end(); ++it)
      if (it.value().is_number() && std::find(metric_keys.begin(), metric_keys.end(), it.key()) == metric_keys.end())
        metric_keys.push_back(it.key());
  std::string out =
      "name,group,role,parent,instances,params,n,median_ms,min_ms,max_ms,mean_ms,p10_ms,p90_ms,cv,"
      "work_flop,work_bytes,bus_factor,rate_flop_per_s,algbw_bytes_per_s,busbw_bytes_per_s";
  for (const auto& k : metric_keys) out += "," + text::csv_cell(k);
  out += "\n";
  auto cell = [](double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string(); };
  for (const auto& m : results) {
    const std::string params = params_text(m.params);
    out += text::csv_cell(m.name) + "," + text::csv_cell(m.group) + "," + to_string(m.role) + "," + text::csv_cell(m.parent) + "," +
           std::to_string(m.instances) + "," + text::csv_cell(params);
    if (m.samples_ms.empty()) {
      out += ",0,,,,,,,";
    } else {
      const auto s = stats::summarize(m.samples_ms);
      out += fmt::format(",{},{},{},{},{},{},{},{}", s.n, s.median, s.min, s.max, s.mean, s.p10, s.p90, s.cv);
    }
    const Rates r = rates_of(m);
    out += "," + (m.work.flops > 0 ? cell(m.work.flops) : "") + "," + (m.work.bytes > 0 ? cell(m.work.bytes) : "") + "," +
           (m.work.bus_factor > 0 ? cell(m.work.bus_factor) : "") + "," + cell(r.flop_per_s) + "," +
           cell(r.algbw_bytes_per_s) + "," + cell(r.busbw_bytes_per_s);
    for (const auto& k : metric_keys)
      out += "," + (m.metrics.contains(k) && m.metrics.at(k).is_number() ? cell(m.metrics.at(k).get<double>()) : "");
    out += "\n";
  }
  return out;
}

}  // namespace layerbench::reports
