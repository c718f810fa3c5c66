#include "reports/gbench_json.hpp"
#include "common/json_text.hpp"

#include "common/usage.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace layerbench::reports {

double gbench_ns_per_unit(const std::string& unit, const std::string& where) {
  if (unit == "ns") return 1;
  if (unit == "us") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  throw UsageError(fmt::format("{}: unknown time_unit '{}' (Google Benchmark writes ns, us, ms or s)", where, unit));
}

bool is_gbench_time_field(const std::string& key) { return key == "real_time" || key == "cpu_time"; }

std::optional<double> GbenchEntry::value_ns(const std::string& key) const {
  if (raw == nullptr || !raw->contains(key) || !(*raw)[key].is_number()) return std::nullopt;
  const double v = (*raw)[key].get<double>();
  return is_gbench_time_field(key) && !percentage ? v * ns_per_unit : v;
}

std::vector<GbenchEntry> read_gbench_entries(const nlohmann::json& doc, const std::string& path) {
  if (!doc.is_object() || !doc.contains("benchmarks") || !doc["benchmarks"].is_array())
    throw std::runtime_error(path + ": not Google Benchmark JSON (no benchmarks[] array)");
  std::vector<GbenchEntry> out;
  for (const auto& b : doc["benchmarks"]) {
    if (!b.is_object()) throw std::runtime_error(path + ": a benchmarks[] entry is not an object");
    GbenchEntry e;
    e.raw = &b;
    e.name = b.contains("name") && b["name"].is_string() ? b["name"].get<std::string>() : std::string{};
    e.run_name = b.contains("run_name") && b["run_name"].is_string() ? b["run_name"].get<std::string>() : e.name;
    if (e.run_name.empty()) throw std::runtime_error(path + ": a benchmark has no name");
    if (e.name.empty()) e.name = e.run_name;
    e.aggregate = b.value("run_type", std::string{"iteration"}) == "aggregate";
    e.aggregate_name = b.value("aggregate_name", std::string{});
    e.repetition_index = b.contains("repetition_index") && b["repetition_index"].is_number_integer()
                             ? b["repetition_index"].get<int>()
                             : 0;
    e.error = b.value("error_occurred", false);
    e.percentage = b.value("aggregate_unit", std::string{"time"}) == "percentage";
    if (b.contains("time_unit")) {
      if (!b["time_unit"].is_string())
        throw UsageError(fmt::format("{}: {}: unknown time_unit {} (Google Benchmark writes ns, us, ms or s)", path,
                                     e.name, json_text(b["time_unit"])));
      e.time_unit = b["time_unit"].get<std::string>();
    }
    e.ns_per_unit = gbench_ns_per_unit(e.time_unit, path + ": " + e.name);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace layerbench::reports
