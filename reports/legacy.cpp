#include "reports/legacy.hpp"

#include <cmath>

namespace layerbench::reports {
namespace {

double metric(const Measurement& m, const char* key) {
  return m.metrics.contains(key) && m.metrics[key].is_number() ? m.metrics[key].get<double>() : 0.0;
}

bool is_collective_name(const std::string& n) {
  return n.find("all_to_all") != std::string::npos || n.find("all_gather") != std::string::npos ||
         n.find("length_exchange") != std::string::npos || n.find("dispatch") != std::string::npos;
}

}  // namespace

void infer_v1_roles(ResultFile& file, const nlohmann::json& doc) {
  const auto& comps = doc.contains("components") && doc["components"].is_object() ? doc["components"]
                                                                                     : nlohmann::json::object();
  const int layers = file.config.value("layers", 1);
  for (auto& m : file.results) {
    if (m.params.contains("op") && m.params.contains("bytes")) {  // a collective sweep row
      m.role = Role::probe;
      m.work.bytes = m.params.value("bytes", 0.0);
      const double alg = metric(m, "algbw_gbps"), bus = metric(m, "busbw_gbps");
      m.work.bus_factor = alg > 0 && bus > 0 ? bus / alg : 0.0;
      continue;
    }
    m.work.flops = metric(m, "flops");
    m.work.bytes = metric(m, "bytes");
    const bool in_layer = !(comps.contains(m.name) && comps[m.name].is_object() &&
                            comps[m.name].value("in_layer", true) == false);
    if (m.name == "whole_layer" || m.name == "total") m.role = Role::total;
    else if (m.name.rfind("stack_", 0) == 0) {
      m.role = Role::stack;
      m.instances = std::max(1, layers);
    } else if (m.name.find("reference") != std::string::npos) m.role = Role::reference;
    else if (!in_layer) m.role = Role::probe;
    else if (is_collective_name(m.name)) m.role = Role::communication;
    else m.role = Role::part;
  }
}

}  // namespace layerbench::reports
