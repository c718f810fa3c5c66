#pragma once
// The JSONL study file written by `layerbench-ab run`: one header line, then one line per run
// (appended and fsync'ed as each run finishes) and one line per excluded pair. This is its one
// writer (header_json, run_json, excluded_json), its one reader (parse_study: one pass, run
// records in `run`'s form read without a JSON document) and its one pairing rule
// (completed_pairs; paired_values is the view every analysis takes). `ab analyze`, the gate,
// the report and the history all read studies through it.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stats/sequential.hpp"

namespace layerbench::ab {

struct StudyConfig {
  std::string base;
  std::string candidate;
  std::vector<std::string> more_candidates;  // arms 3, 4, ...: each compared against base
  std::vector<std::string> names;            // display names of the arms in order; missing = defaults
  std::string prepare;
  std::size_t pairs = 0;
  std::size_t warmup = 0;
  std::string order = "alternate";
  std::string metric = "wall";        // the primary metric (the verdict and the stop rule)
  std::vector<std::string> metrics;   // further metrics, analysed beside it
  double timeout = 0;  // seconds, 0 = none
  std::size_t retries = 0;
  // A failed run stops the study (after its retries) unless this is set: the pair is then
  // excluded and the study carries on.
  bool ignore_failure = false;
  std::uint64_t seed = 0;
  std::string check_output;
  // --sequential: stop at the first of effect / equivalence / `pairs` (the cap); alpha, margin and
  // tuning are recorded so that a resumed study applies the same rule.
  std::optional<stats::SequentialDesign> sequential;
  std::string telemetry;              // "" (none) or "gpu": NVML samples while each run is alive
  double telemetry_period_ms = 20;
  std::string telemetry_status;       // what the sampler saw (devices) or why it was unavailable
  // The machine's 1-minute load average and online CPUs when the study started (/proc/loadavg;
  // NaN / 0 where unknown): a load above the CPU count means the runs waited for the CPU.
  double load_avg = std::numeric_limits<double>::quiet_NaN();
  // "sh" (each command through /bin/sh -c; the shell's own start-up, measured before the study,
  // is subtracted from wall, user and sys as hyperfine does) or "none" (executed directly).
  std::string shell = "sh";
  double spawn_wall = 0, spawn_user = 0, spawn_sys = 0;  // seconds; the shell's start-up
  unsigned cpus = 0;
};

// One arm: its role key in the records ("base", "candidate", "candidate2", ...), display name and command.
struct Arm {
  std::string key;
  std::string name;
  std::string command;
};
std::vector<Arm> arms_of(const StudyConfig& config);

struct RunRecord {
  std::size_t pair = 0;
  std::size_t attempt = 0;
  std::string arm;   // the arm's key: "base", "candidate", "candidate2", ...
  int position = 0;  // 0 = ran first in its pair (round), 1 = second, ...
  double start = 0;  // Unix time in seconds
  std::optional<double> metric;  // the primary metric
  double wall = 0;  // seconds, monotonic clock
  double user = 0;  // child user CPU seconds
  double sys = 0;   // child system CPU seconds
  double peak_rss_kib = 0;  // largest peak RSS in the command's process tree (wait4), KiB
  std::map<std::string, double> metrics;  // every metric found, by name (the primary one included)
  int exit_code = 0;
  std::string status;  // ok | failed | timeout | no_metric
  std::string stdout_tail;
  std::string output_hash;  // --check-output: hex digest, "missing", or empty
  nlohmann::json telemetry;  // --telemetry: the run's summary ("combined", "devices"); null without
};

struct Study {
  StudyConfig config;
  std::vector<RunRecord> runs;
  std::vector<std::size_t> excluded;  // pairs given up after their retries
  // The header record as read: a journal's "study" record, or (other JSON Lines) the first record
  // that is not a run; {} when there is none.
  nlohmann::json header = nlohmann::json::object();
  // True for a layerbench-ab journal (its first record is the "study" header); false for JSON
  // Lines of another producer (see parse_study), whose arms are those its runs name.
  bool journal = true;
  // The name of the study's own metric: a journal's --metric spec, named (metric_spec_name);
  // other JSON Lines: the header's "metric" or "metric_name", else the first run's, else the first
  // run's only entry of "metrics"; may be empty (the runs' "metric" or "value" numbers).
  std::string metric;
};

nlohmann::json header_json(const StudyConfig& config);
nlohmann::json sequential_design_json(const stats::SequentialDesign& design);
// The design recorded in a study header; max_pairs is the study's pair count.
stats::SequentialDesign sequential_design_from_json(const nlohmann::json& j, std::size_t max_pairs);
nlohmann::json run_json(const RunRecord& run);
nlohmann::json excluded_json(std::size_t pair);

// Reads a study file; throws InputError("FILE:LINE: ...") on malformed lines and a duplicate run
// record (the same pair, attempt and arm twice). A torn last line (a run killed mid-write) is
// skipped; a UTF-8 byte order mark is accepted.
// A file whose first record is not a "study" header is read as JSON Lines of another producer:
// a record with "pair" and "arm" is a run (arm base, candidate or candidateN in any case; failed
// when "ok" is false, "status" is neither "ok" nor "success", or "error" is not null); a numeric
// "metric" is the run's own value; numeric members of "metrics" and numeric top-level members are
// values by name, and "metric": NAME beside "value": V names V. Its first record without "pair"
// and "arm" is its header.
Study read_study(const std::string& path);
// What a reader keeps of each run: everything (ab analyze, resuming: the diagnostics read the
// output hashes, stdout tails and telemetry), or the values only (the gate, the report, the
// history: pair, attempt, arm, status and every metric; stdout tail, output hash and telemetry
// dropped as each run is read). The checks are the same either way.
enum class Keep { everything, values };
// The same from the file's text; `path` names it in messages.
Study parse_study(std::string_view text, const std::string& path, Keep keep = Keep::everything);
// parse_study for a layerbench-ab journal only (what `run` resumes): anything else is an InputError.
Study parse_journal(std::string_view text, const std::string& path);

// A pair (round) whose arms all succeeded in one attempt, in pair order, seen as base against one
// candidate arm (by key; "candidate" = the first).
struct CompletedPair {
  std::size_t pair = 0;
  double base = 0;       // the runs' primary metric (NaN where a run of other JSON Lines has none)
  double candidate = 0;
  bool base_first = true;  // base ran before this candidate
  double start = 0;
  std::string base_hash, candidate_hash;
  nlohmann::json base_telemetry, candidate_telemetry;  // null without --telemetry
  const RunRecord* base_run = nullptr;       // the records (point into the Study)
  const RunRecord* candidate_run = nullptr;
};
std::vector<CompletedPair> completed_pairs(const Study& study, const std::string& candidate_key = "candidate");

// A sequential study's stop rule replayed over its completed pairs (nothing for a fixed-n study).
std::optional<stats::SequentialResult> sequential_state(const Study& study);
// The study as it stood when its sequential rule stopped: runs of later pairs dropped.
Study truncated_at_stop(const Study& study, const stats::SequentialResult& state);

// The name and unit a `layerbench-ab run --metric` spec gives its metric: "lat(ms)=regex:..." ->
// {lat, ms}; "wall" -> {wall, s}; "peak_rss" -> {peak_rss, KiB}; "regex:..." -> {metric, ""}.
struct MetricName {
  std::string name, unit;
  bool unit_declared = false;  // NAME(UNIT)=
};
MetricName metric_spec_name(std::string_view spec);

// A paired study as every tool takes it: one metric's values over the completed pairs, base
// against one candidate arm, and where they came from. The one type of a paired study: the
// journal's view (paired_values), the CSV-study reader and the readers of layerbench-ab's --csv
// and --json (reports/inputs.hpp) give it; ab analyze, the gate and the report read it.
struct PairedStudy {
  std::string path;
  std::string metric;  // the metric's name ("" when the file names none)
  std::string unit;    // what its --metric spec declares or implies ("" = unknown)
  std::vector<long long> pair_ids;      // one per complete pair, ascending
  std::vector<double> base, candidate;  // kept by position: base[i] and candidate[i] are pair i
  nlohmann::json header = nlohmann::json::object();  // the study's header record ({} when none)
  std::string base_label = "base", candidate_label = "candidate";  // the arms' display names (--name)
  std::string candidate_arm = "candidate";  // its key in the study: candidate, candidate2, ...
  // A prediction of the delta with its own uncertainty (layerbench-moe --ab: the what-if's).
  std::optional<double> predicted;
  double predicted_half_width = 0;
  std::string predicted_source;
  // The journal the pairs were taken from, where its reader keeps it (ab analyze: the runs'
  // diagnostics, telemetry and further metrics); null elsewhere (the gate and the report keep
  // only the values).
  std::shared_ptr<const Study> journal;
};
// One metric's values over the completed pairs (completed_pairs' rule), base against one
// candidate arm: what every analysis of a study reads. A pair whose base or candidate run lacks
// the metric is left out. `metric` empty (or the spec as written) picks the study's own. Throws
// InputError naming `path` when no base or candidate run carries the metric (listing those the
// study records). The journal itself is not kept (set `journal` where it is needed).
PairedStudy paired_values(const Study& study, const std::string& path, const std::string& metric = {},
                          const std::string& candidate_key = "candidate");
// Throws InputError naming `path` and the pair when a value is negative (relative changes need
// non-negative measurements).
void require_non_negative(const PairedStudy& values, const std::string& path);

// What resuming needs to know about one pair.
struct PairState {
  bool completed = false;
  bool excluded = false;
  std::size_t failed_attempts = 0;
  std::size_t next_attempt = 0;
};
std::vector<PairState> pair_states(const Study& study, std::size_t num_pairs);

}  // namespace layerbench::ab
