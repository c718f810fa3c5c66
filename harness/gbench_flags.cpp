#include "harness/gbench_flags.hpp"

#include "common/usage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

namespace layerbench::harness {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Google Benchmark's reading of a boolean value, made strict: anything else is an error here
// (Google Benchmark itself reads "bogus" as true).
bool parse_bool(const std::string& flag, const std::string& value) {
  const std::string v = lower(value);
  for (const char* t : {"", "true", "yes", "on", "1", "t", "y"})
    if (v == t) return true;
  for (const char* f : {"false", "no", "off", "0", "f", "n"})
    if (v == f) return false;
  throw UsageError(fmt::format("{}={}: expected true or false", flag, value));
}

const std::string& one_of(const std::string& flag, const std::string& value, std::initializer_list<const char*> ok) {
  for (const char* o : ok)
    if (value == o) return value;
  std::string list;
  for (const char* o : ok) list += (list.empty() ? "" : ", ") + std::string(o);
  throw UsageError(fmt::format("{}={}: expected one of {}", flag, value, list));
}

// Flags that steer Google Benchmark's own timing loop, which layerbench does not use.
constexpr std::array<std::string_view, 5> kTimingFlags = {"min_time", "min_warmup_time", "repetitions",
                                                          "enable_random_interleaving", "perf_counters"};
constexpr std::array<std::string_view, 11> kKnownFlags = {
    "filter", "list_tests", "format", "out", "out_format", "time_unit", "report_aggregates_only",
    "display_aggregates_only", "color", "counters_tabular", "context"};

}  // namespace

const char* to_string(GbTimeUnit u) {
  switch (u) {
    case GbTimeUnit::ns: return "ns";
    case GbTimeUnit::us: return "us";
    case GbTimeUnit::ms: return "ms";
    case GbTimeUnit::s: return "s";
  }
  return "?";
}

std::pair<std::vector<std::string>, std::vector<std::string>> split_gbench_args(
    const std::vector<std::string>& argv) {
  std::vector<std::string> gb, rest;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (i > 0 && argv[i].rfind("--benchmark_", 0) == 0) {
      gb.push_back(argv[i]);
    } else {
      rest.push_back(argv[i]);
    }
  }
  return {gb, rest};
}

bool GbenchOptions::selects(const std::string& full_name) const {
  if (!re_) return true;
  return std::regex_search(full_name, *re_) != negative_;
}

GbenchOptions parse_gbench_flags(const std::vector<std::string>& flags) {
  GbenchOptions o;
  o.args = flags;
  for (const std::string& arg : flags) {
    const auto eq = arg.find('=');
    const std::string flag = arg.substr(0, eq);
    const std::string key = flag.substr(std::string_view("--benchmark_").size());
    const bool has_value = eq != std::string::npos;
    const std::string value = has_value ? arg.substr(eq + 1) : "";
    if (std::find(kTimingFlags.begin(), kTimingFlags.end(), key) != kTimingFlags.end())
      throw UsageError(fmt::format(
          "{}: not used here: layerbench times every measurement itself and reports each of its --iterations "
          "samples as one repetition (set --warmup and --iterations instead)", arg));
    if (std::find(kKnownFlags.begin(), kKnownFlags.end(), key) == kKnownFlags.end())
      throw UsageError(fmt::format(
          "{}: unknown Google Benchmark flag (known: --benchmark_filter, _list_tests, _format, _out, _out_format, "
          "_time_unit, _report_aggregates_only, _display_aggregates_only, _color, _counters_tabular, _context)",
          flag));
    const bool is_bool = key == "list_tests" || key == "report_aggregates_only" ||
                         key == "display_aggregates_only" || key == "counters_tabular";
    if (!has_value && !is_bool) throw UsageError(fmt::format("{} needs a value: {}=VALUE", flag, flag));
    if (key == "filter") {
      o.filter = value;
      std::string spec = value;
      o.negative_ = !spec.empty() && spec[0] == '-';
      if (o.negative_) spec.erase(0, 1);
      if (spec.empty() || spec == "all") spec = ".";
      try {
        // Google Benchmark compiles its filter as a POSIX extended expression and searches names with it.
        o.re_.emplace(spec, std::regex::extended);
      } catch (const std::regex_error& e) {
        throw UsageError(fmt::format("{}: not a valid regular expression ({})", arg, e.what()));
      }
    } else if (key == "list_tests") {
      o.list_tests = parse_bool(flag, value);
    } else if (key == "report_aggregates_only" || key == "display_aggregates_only") {
      (void)parse_bool(flag, value);  // Google Benchmark reads these itself
    } else if (key == "counters_tabular") {
      o.counters_tabular = parse_bool(flag, value);
    } else if (key == "format") {
      o.format = one_of(flag, value, {"console", "json", "csv"});
    } else if (key == "out_format") {
      o.out_format = one_of(flag, value, {"console", "json", "csv"});
    } else if (key == "out") {
      if (value.empty()) throw UsageError(fmt::format("{}=: needs a file name", flag));
      if (value == "-")
        throw UsageError(fmt::format("{}=-: for standard output use --benchmark_format=json (or csv) instead", flag));
      o.out = value;
    } else if (key == "time_unit") {
      const std::string& u = one_of(flag, value, {"ns", "us", "ms", "s"});
      o.time_unit = u == "ns" ? GbTimeUnit::ns : u == "us" ? GbTimeUnit::us : u == "ms" ? GbTimeUnit::ms : GbTimeUnit::s;
    } else if (key == "color") {
      o.color = lower(value) == "auto" ? "auto" : (parse_bool(flag, value) ? "true" : "false");
    } else if (key == "context") {
      std::size_t start = 0;
      while (start <= value.size()) {
        const auto comma = value.find(',', start);
        const std::string kv = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        const auto e = kv.find('=');
        if (e == std::string::npos || e == 0)
          throw UsageError(fmt::format("{}: expected KEY=VALUE[,KEY=VALUE...] (got '{}')", arg, kv));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
  }
  return o;
}

}  // namespace layerbench::harness
