#include "study/metric.hpp"

#include "common/input_file.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <re2/re2.h>
#include <set>
#include <sstream>
#include <sys/stat.h>

#include "study/errors.hpp"

namespace layerbench::ab {
namespace {

constexpr const char* grammar =
    "expected [NAME[(UNIT)]=]SOURCE with SOURCE wall, user, sys, peak_rss, [stdout:|stderr:|file:PATH:]regex:PATTERN, "
    "[stdout:|stderr:|file:PATH:]json:KEY or file:PATH";

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

// The whole text as one JSON document, else the last line that parses as an object holding the key.
std::optional<double> json_in(const std::string& text, const std::vector<std::string>& path) {
  auto whole = nlohmann::json::parse(text, nullptr, false);
  if (!whole.is_discarded()) return json_lookup(whole, path);
  std::stringstream ss(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    auto j = nlohmann::json::parse(*it, nullptr, false);
    if (!j.is_discarded() && j.is_object()) {
      if (auto v = json_lookup(j, path)) return v;
    }
  }
  return std::nullopt;
}

// RE2: linear time and no recursion, so a 50 KB output line cannot overflow the stack.
std::optional<double> regex_in(const std::string& text, const re2::RE2& pattern) {
  std::string capture;
  if (!re2::RE2::PartialMatch(text, pattern, &capture) || capture.empty()) return std::nullopt;
  return to_number(capture);
}

// "NAME=" or "NAME(UNIT)=" at the front; NAME has no ':' so it never swallows a source keyword.
struct NamePrefix {
  std::string name;
  std::optional<std::string> unit;
  std::string rest;
};
std::optional<NamePrefix> split_name(const std::string& text) {
  static const re2::RE2 prefix(R"(([A-Za-z_][A-Za-z0-9_.-]*)(\(([^()]*)\))?=([\s\S]*))");
  std::string name, paren, unit, rest;
  if (!re2::RE2::FullMatch(text, prefix, &name, &paren, &unit, &rest)) return std::nullopt;
  NamePrefix p{name, std::nullopt, rest};
  if (!paren.empty()) p.unit = unit;
  return p;
}

void parse_extractor(MetricSpec& spec, const std::string& body) {
  if (body.rfind("regex:", 0) == 0) {
    spec.kind = MetricSpec::Kind::regex;
    re2::RE2::Options options;
    options.set_log_errors(false);
    auto re = std::make_shared<const re2::RE2>(body.substr(6), options);
    if (!re->ok()) throw InputError(fmt::format("--metric {}: invalid regular expression ({})", spec.text, re->error()));
    spec.pattern = re;
    if (spec.pattern->NumberOfCapturingGroups() < 1) {
      throw InputError(fmt::format("--metric {}: the regex needs a capture group, e.g. 'time=([0-9.]+)'", spec.text));
    }
    return;
  }
  if (body.rfind("json:", 0) == 0) {
    spec.kind = MetricSpec::Kind::json;
    std::stringstream ss(body.substr(5));
    std::string part;
    while (std::getline(ss, part, '.')) spec.json_path.push_back(part);
    if (spec.json_path.empty() || std::any_of(spec.json_path.begin(), spec.json_path.end(),
                                              [](const auto& p) { return p.empty(); })) {
      throw InputError(fmt::format("--metric {}: expected json:KEY or json:a.b.c", spec.text));
    }
    return;
  }
  throw InputError(fmt::format("--metric {}: {}", spec.text, grammar));
}

}  // namespace

MetricSpec parse_metric(const std::string& text) {
  MetricSpec spec;
  spec.text = text;
  const auto named = split_name(text);
  const std::string source = named ? named->rest : text;
  if (source == "wall" || source == "user" || source == "sys" || source == "peak_rss") {
    spec.kind = source == "wall"   ? MetricSpec::Kind::wall
                : source == "user" ? MetricSpec::Kind::user
                : source == "sys"  ? MetricSpec::Kind::sys
                                   : MetricSpec::Kind::peak_rss;
    spec.name = source;
    spec.unit = spec.kind == MetricSpec::Kind::peak_rss ? "KiB" : "s";
  } else {
    spec.name = "metric";
    std::string body = source;
    if (body.rfind("stdout:", 0) == 0) {
      spec.source = MetricSpec::Source::stdout_only;
      body = body.substr(7);
    } else if (body.rfind("stderr:", 0) == 0) {
      spec.source = MetricSpec::Source::stderr_only;
      body = body.substr(7);
    } else if (body.rfind("file:", 0) == 0) {
      spec.source = MetricSpec::Source::file;
      const std::string rest = body.substr(5);
      const auto at_regex = rest.find(":regex:");
      const auto at_json = rest.find(":json:");
      const auto at = std::min(at_regex, at_json);
      spec.path = rest.substr(0, at);
      body = at == std::string::npos ? "" : rest.substr(at + 1);
      if (spec.path.empty()) throw InputError(fmt::format("--metric {}: file: needs a path", text));
      // The runs write the file; what is there already must be a file the input layer can read.
      const auto kind = input::kind_of(spec.path);
      if (kind == input::Kind::directory || kind == input::Kind::other)
        throw InputError(fmt::format("--metric {}: {} is {}, expected a regular file", text, spec.path,
                                     kind == input::Kind::directory ? "a directory" : "a FIFO, device or socket"));
    }
    if (spec.source == MetricSpec::Source::file && body.empty()) {
      spec.kind = MetricSpec::Kind::number;
    } else {
      parse_extractor(spec, body);
    }
  }
  if (named) {
    spec.name = named->name;
    if (named->unit) spec.unit = *named->unit;
  }
  return spec;
}

std::vector<MetricSpec> parse_metrics(const std::vector<std::string>& texts) {
  std::vector<MetricSpec> specs;
  std::set<std::string> names;
  for (const auto& t : texts) {
    specs.push_back(parse_metric(t));
    if (!names.insert(specs.back().name).second) {
      throw InputError(fmt::format("--metric {}: a second metric named '{}'; name each one: NAME(UNIT)=SOURCE", t,
                                   specs.back().name));
    }
  }
  return specs;
}

FileStamp stamp_of(const std::string& path) {
  struct stat st {};
  FileStamp s;
  if (::stat(path.c_str(), &st) != 0) return s;
  s.exists = true;
  s.device = st.st_dev;
  s.inode = st.st_ino;
  s.size = static_cast<unsigned long long>(st.st_size);
  s.mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  return s;
}

std::optional<double> extract_metric(const MetricSpec& spec, const ProcessResult& run, const FileStamp& before,
                                     std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<double> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  switch (spec.kind) {
    case MetricSpec::Kind::wall: return run.wall_seconds;
    case MetricSpec::Kind::user: return run.user_seconds;
    case MetricSpec::Kind::sys: return run.sys_seconds;
    case MetricSpec::Kind::peak_rss: return run.peak_rss_kib;
    default: break;
  }
  std::vector<const std::string*> texts;
  std::string file_text;
  if (spec.source == MetricSpec::Source::file) {
    const auto after = stamp_of(spec.path);
    if (!after.exists) return fail(fmt::format("{}: missing after the run", spec.path));
    if (before.exists && after == before) return fail(fmt::format("{}: stale (not rewritten by the run)", spec.path));
    file_text = input::read_text({"--metric file:", spec.path});  // the input layer: a directory or FIFO is exit 2
    texts.push_back(&file_text);
  } else {
    if (spec.source != MetricSpec::Source::stderr_only) texts.push_back(&run.stdout_text);
    if (spec.source != MetricSpec::Source::stdout_only) texts.push_back(&run.stderr_text);
  }
  for (const auto* t : texts) {
    std::optional<double> v;
    if (spec.kind == MetricSpec::Kind::regex) v = regex_in(*t, *spec.pattern);
    else if (spec.kind == MetricSpec::Kind::json) v = json_in(*t, spec.json_path);
    else v = to_number(*t);
    if (v) return v;
  }
  return fail("not found");
}

}  // namespace layerbench::ab
