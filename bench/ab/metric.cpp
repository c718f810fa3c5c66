#include "bench/ab/metric.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <re2/re2.h>
#include <sstream>

#include "bench/ab/errors.hpp"

namespace layerbench::ab {
namespace {

std::optional<double> to_number(const std::string& s) {
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == 0 || !std::isfinite(v)) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<double> json_lookup(const nlohmann::json& root, const std::vector<std::string>& path) {
  const nlohmann::json* node = &root;
  for (const auto& key : path) {
    if (node->is_object() && node->contains(key)) {
      node = &(*node)[key];
    } else if (std::size_t index = 0; node->is_array() && !key.empty() &&
               key.find_first_not_of("0123456789") == std::string::npos &&
               std::from_chars(key.data(), key.data() + key.size(), index).ec == std::errc() && index < node->size()) {
      node = &(*node)[index];  // an index too large for size_t fails from_chars: not found
    } else {
      return std::nullopt;
    }
  }
  if (node->is_number()) {
    const double v = node->get<double>();
    return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
  }
  if (node->is_string()) return to_number(node->get<std::string>());
  return std::nullopt;
}

}  // namespace

MetricSpec parse_metric(const std::string& text) {
  MetricSpec spec;
  spec.text = text;
  if (text == "wall") return spec;
  if (text == "user") {
    spec.kind = MetricSpec::Kind::user;
    return spec;
  }
  if (text.rfind("regex:", 0) == 0) {
    spec.kind = MetricSpec::Kind::regex;
    RE2::Options options;
    options.set_log_errors(false);
    auto re = std::make_shared<const RE2>(text.substr(6), options);
    if (!re->ok()) throw InputError(fmt::format("--metric {}: invalid regular expression ({})", text, re->error()));
    spec.pattern = re;
    if (spec.pattern->NumberOfCapturingGroups() < 1) {
      throw InputError(fmt::format("--metric {}: the regex needs a capture group, e.g. 'time=([0-9.]+)'", text));
    }
    return spec;
  }
  if (text.rfind("json:", 0) == 0) {
    spec.kind = MetricSpec::Kind::json;
    std::stringstream ss(text.substr(5));
    std::string part;
    while (std::getline(ss, part, '.')) spec.json_path.push_back(part);
    if (spec.json_path.empty() || std::any_of(spec.json_path.begin(), spec.json_path.end(),
                                              [](const auto& p) { return p.empty(); })) {
      throw InputError(fmt::format("--metric {}: expected json:KEY or json:a.b.c", text));
    }
    return spec;
  }
  throw InputError(fmt::format("--metric {}: expected wall, user, regex:PATTERN or json:KEY", text));
}

std::optional<double> extract_metric(const MetricSpec& spec, const ProcessResult& run) {
  switch (spec.kind) {
    case MetricSpec::Kind::wall: return run.wall_seconds;
    case MetricSpec::Kind::user: return run.user_seconds;
    case MetricSpec::Kind::regex: {
      std::string capture;
      if (!RE2::PartialMatch(run.stdout_text, *spec.pattern, &capture) || capture.empty()) return std::nullopt;
      return to_number(capture);
    }
    case MetricSpec::Kind::json: {
      // The whole stdout as one JSON document, else the last line that parses as an object.
      auto whole = nlohmann::json::parse(run.stdout_text, nullptr, false);
      if (!whole.is_discarded()) return json_lookup(whole, spec.json_path);
      std::stringstream ss(run.stdout_text);
      std::vector<std::string> lines;
      for (std::string line; std::getline(ss, line);) lines.push_back(line);
      for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
        auto j = nlohmann::json::parse(*it, nullptr, false);
        if (!j.is_discarded() && j.is_object()) {
          if (auto v = json_lookup(j, spec.json_path)) return v;
        }
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace layerbench::ab
