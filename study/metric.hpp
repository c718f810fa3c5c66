#pragma once
// What a run measures: wall clock, user/system CPU, peak RSS, a regex capture or a JSON key over
// the run's stdout, stderr (default: both) or a file it writes.
//
//   SPEC    := [NAME[(UNIT)]=]SOURCE
//   SOURCE  := wall | user | sys | peak_rss
//            | [stdout: | stderr: | file:PATH:]regex:PATTERN    (one capture group)
//            | [stdout: | stderr: | file:PATH:]json:KEY.PATH
//            | file:PATH                                      (the file holds one number)
// A file is re-read after each run; a file the run did not rewrite (same inode, size and mtime as
// before the run) is stale and gives no value.
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "study/process.hpp"

namespace re2 {
class RE2;
}

namespace layerbench::ab {

struct MetricSpec {
  enum class Kind { wall, user, sys, peak_rss, regex, json, number };
  enum class Source { both, stdout_only, stderr_only, file };
  Kind kind = Kind::wall;
  Source source = Source::both;
  std::string path;  // Source::file
  std::string name;  // defaults: wall, user, sys, peak_rss, metric
  std::string unit;  // defaults: s for times, KiB for peak_rss, empty otherwise
  std::string text;  // as given on the command line
  std::shared_ptr<const re2::RE2> pattern;  // RE2: linear time, no recursion on long lines
  std::vector<std::string> json_path;
};

// Throws InputError with the expected grammar.
MetricSpec parse_metric(const std::string& text);
// Several specs; throws InputError when two share a name.
std::vector<MetricSpec> parse_metrics(const std::vector<std::string>& texts);

// What a file looked like before a run (for the stale-file check).
struct FileStamp {
  bool exists = false;
  unsigned long long device = 0, inode = 0, size = 0;
  long long mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};
FileStamp stamp_of(const std::string& path);

// The metric of a finished run, or nothing when it is not found / not a finite number / stale; `why`
// (optional) says which.
std::optional<double> extract_metric(const MetricSpec& spec, const ProcessResult& run,
                                     const FileStamp& before = {}, std::string* why = nullptr);

}  // namespace layerbench::ab
