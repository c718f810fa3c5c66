#pragma once
// What a run measures: wall clock, user CPU, a regex capture over stdout, or a JSON dot-path.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/ab/process.hpp"

namespace re2 {
class RE2;
}

namespace layerbench::ab {

struct MetricSpec {
  enum class Kind { wall, user, regex, json };
  Kind kind = Kind::wall;
  std::string text;  // as given on the command line
  std::shared_ptr<const re2::RE2> pattern;  // RE2: linear time, no recursion on long lines
  std::vector<std::string> json_path;
};

// "wall", "user", "regex:PATTERN" (RE2 syntax; needs a capture group) or "json:KEY.PATH"; throws
// InputError.
MetricSpec parse_metric(const std::string& text);

// The metric of a finished run, or nothing when it is not found / not a finite number.
std::optional<double> extract_metric(const MetricSpec& spec, const ProcessResult& run);

}  // namespace layerbench::ab
