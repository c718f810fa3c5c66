// The one reader of study files (study/study.hpp): a layerbench-ab journal, or JSON Lines of
// pair/arm records of another producer. One pass over the lines; run records in the form `run`
// writes are read without a JSON document (common/json_record), everything else through
// nlohmann::json.
#include "study/study.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <unordered_set>

#include "common/json_record.hpp"
#include "common/text.hpp"
#include "study/errors.hpp"

namespace layerbench::ab {

Study read_study(const std::string& path) {
  const auto content = text::read_file(path);
  if (!content) throw InputError(fmt::format("{}: cannot open file", path));
  return parse_study(*content, path);
}

namespace {

using json_record::Value;

// base -> 0, candidate -> 1, candidateN -> N (N >= 2); -1 for anything else.
int arm_number(std::string_view arm) {
  if (arm == "base") return 0;
  if (arm == "candidate") return 1;
  if (arm.size() > 9 && arm.size() < 15 && arm.substr(0, 9) == "candidate" &&
      arm.find_first_not_of("0123456789", 9) == std::string_view::npos) {
    const int n = std::stoi(std::string(arm.substr(9)));
    return n >= 2 ? n : -1;
  }
  return -1;
}

// (pair, attempt, arm number): a run record's identity; a second record of it is a duplicate.
struct RunKey {
  std::size_t pair, attempt;
  int arm;
  bool operator==(const RunKey&) const = default;
};
struct RunKeyHash {
  std::size_t operator()(const RunKey& k) const {
    std::uint64_t h = k.pair * 0x9E3779B97F4A7C15ull;
    h ^= (k.attempt + 0x632BE59BD9B4E019ull) + (h << 6) + (h >> 2);
    return static_cast<std::size_t>(h ^ (static_cast<std::uint64_t>(k.arm) * 0xC2B2AE3D27D4EB4Full));
  }
};

struct RunChecks {
  std::string path;
  Keep keep = Keep::everything;
  std::size_t arms = 0;  // of a journal's header
  // Duplicates: while the runs come in (pair, attempt) order, as `run` writes them, a second record
  // can only be within the last (pair, attempt); after the first run out of order, a hash set.
  bool ordered = true;
  std::size_t group = 0;  // index of the first run of the last (pair, attempt)
  std::unordered_set<RunKey, RunKeyHash> seen;

  std::string where(std::size_t line_no) const { return fmt::format("{}:{}", path, line_no); }
  // A journal's arm: one of its header's.
  int journal_arm(const std::string& arm, std::size_t line_no) const {
    const int n = arm_number(arm);
    if (n < 0 || static_cast<std::size_t>(n) >= arms)
      throw InputError(fmt::format("{}: arm '{}' is not one of the study's arms", where(line_no), arm));
    return n;
  }
  bool duplicate(const std::vector<RunRecord>& runs, const RunRecord& r, int arm) {
    if (ordered && !runs.empty()) {
      const auto& prev = runs.back();
      if (r.pair == prev.pair && r.attempt == prev.attempt) {
        for (std::size_t i = group; i < runs.size(); ++i) {
          if (runs[i].arm == r.arm) return true;
        }
        return false;
      }
      if (r.pair > prev.pair || (r.pair == prev.pair && r.attempt > prev.attempt)) {
        group = runs.size();
        return false;
      }
      ordered = false;
      seen.reserve(runs.size() * 2);
      for (const auto& q : runs) seen.insert({q.pair, q.attempt, arm_number(q.arm)});
    }
    return !ordered && !seen.insert({r.pair, r.attempt, arm}).second;
  }
  // The checks after the fields are read, then the record joins the study.
  void add(Study& study, RunRecord&& r, int arm, std::size_t line_no) {
    if (study.journal && r.status == "ok" && (!r.metric || !std::isfinite(*r.metric))) {
      throw InputError(where(line_no) + ": successful run without a finite metric");
    }
    if (duplicate(study.runs, r, arm)) {
      throw InputError(fmt::format("{}: pair {} attempt {} has a second {} run (duplicate record)", where(line_no),
                                   r.pair, r.attempt, r.arm));
    }
    if (keep == Keep::values) {
      r.stdout_tail = std::string();
      r.output_hash = std::string();
      r.telemetry = nullptr;
    }
    study.runs.push_back(std::move(r));
  }
};

// A run record as `layerbench-ab run` writes it, read from its members without a JSON document.
// False when anything is in another form (a value of another type, telemetry): the line then
// goes through nlohmann::json (journal_record), which gives the same record or the same error.
bool canonical_run(const json_record::Record& rec, RunRecord& r,
                   std::vector<std::pair<std::string_view, const Value*>>& scratch) {
  using K = Value::Kind;
  const auto* type = rec.find("type");
  if (!type || !type->is_string() || type->string != "run" || rec.find("telemetry")) return false;
  auto whole = [&](const char* key, std::size_t& out, bool required) {
    const auto* v = rec.find(key);
    if (!v) return !required;
    if (v->kind != K::unsigned_integer) return false;
    out = v->unsigned_integer;
    return true;
  };
  auto small = [&](const char* key, int& out) {
    const auto* v = rec.find(key);
    if (!v) return true;
    if (v->kind == K::unsigned_integer && v->unsigned_integer <= INT32_MAX) {
      out = static_cast<int>(v->unsigned_integer);
    } else if (v->kind == K::integer && v->integer >= INT32_MIN && v->integer <= INT32_MAX) {
      out = static_cast<int>(v->integer);
    } else {
      return false;
    }
    return true;
  };
  auto real = [&](const char* key, double& out) {
    const auto* v = rec.find(key);
    if (!v) return true;
    if (!v->is_number()) return false;
    out = v->number();
    return true;
  };
  auto text = [&](const char* key, std::string& out, bool required) {
    const auto* v = rec.find(key);
    if (!v) return !required;
    if (!v->is_string()) return false;
    out = v->string;
    return true;
  };
  if (!whole("pair", r.pair, true) || !whole("attempt", r.attempt, false) || !text("arm", r.arm, true) ||
      !small("position", r.position) || !real("start", r.start) || !real("wall", r.wall) || !real("user", r.user) ||
      !real("sys", r.sys) || !real("peak_rss_kib", r.peak_rss_kib) || !small("exit", r.exit_code) ||
      !text("status", r.status, true) || !text("stdout_tail", r.stdout_tail, false) ||
      !text("output_hash", r.output_hash, false)) {
    return false;
  }
  const auto* metric = rec.find("metric");
  if (!metric || !(metric->is_null() || metric->is_number())) return false;
  if (metric->is_number()) r.metric = metric->number();
  rec.members("metrics", scratch);
  if (scratch.size() != rec.size("metrics")) return false;  // a repeated key: the last value counts
  for (const auto& [name, v] : scratch) {
    if (v->is_number()) r.metrics.emplace(name, v->number());
  }
  return true;
}

void read_header(const nlohmann::json& j, StudyConfig& c) {
  c.base = j.value("base", "");
  c.candidate = j.value("candidate", "");
  c.prepare = j.value("prepare", "");
  c.pairs = j.value("pairs", std::size_t{0});
  c.warmup = j.value("warmup", std::size_t{0});
  c.order = j.value("order", "alternate");
  c.metric = j.value("metric", "wall");
  c.timeout = j.value("timeout", 0.0);
  c.retries = j.value("retries", std::size_t{0});
  c.ignore_failure = j.value("ignore_failure", false);
  c.shell = j.value("shell", "sh");
  if (j.contains("shell_spawn") && j["shell_spawn"].is_object()) {
    c.spawn_wall = j["shell_spawn"].value("wall_s", 0.0);
    c.spawn_user = j["shell_spawn"].value("user_s", 0.0);
    c.spawn_sys = j["shell_spawn"].value("sys_s", 0.0);
  }
  if (j.contains("load") && j["load"].is_object()) {
    c.load_avg = j["load"].value("load_avg_1m", std::numeric_limits<double>::quiet_NaN());
    c.cpus = j["load"].value("cpus", 0u);
  }
  c.seed = j.value("seed", std::uint64_t{0});
  c.check_output = j.value("check_output", "");
  if (j.contains("sequential") && !j["sequential"].is_null()) {
    c.sequential = sequential_design_from_json(j["sequential"], c.pairs);
  }
  c.more_candidates = j.value("more_candidates", std::vector<std::string>{});
  c.names = j.value("names", std::vector<std::string>{});
  c.metrics = j.value("metrics", std::vector<std::string>{});
  c.telemetry = j.value("telemetry", "");
  c.telemetry_period_ms = j.value("telemetry_period_ms", 20.0);
  c.telemetry_status = j.value("telemetry_status", "");
}

// A journal's run record from its document (any form the fast path declined); its arm number in `arm`.
RunRecord journal_run(const nlohmann::json& j, const RunChecks& checks, std::size_t line_no, int& arm) {
  const auto where = checks.where(line_no);
  RunRecord r;
  if (!j.contains("pair") || !j["pair"].is_number_unsigned())
    throw InputError(where + ": \"pair\" is not a whole number");
  r.pair = j["pair"].get<std::size_t>();
  r.attempt = j.value("attempt", std::size_t{0});
  if (!j.contains("arm") || !j["arm"].is_string()) throw InputError(where + ": \"arm\" is not a string");
  r.arm = j["arm"].get<std::string>();
  arm = checks.journal_arm(r.arm, line_no);
  r.position = j.value("position", 0);
  r.start = j.value("start", 0.0);
  if (!j.at("metric").is_null()) r.metric = j.at("metric").get<double>();
  r.wall = j.value("wall", 0.0);
  r.user = j.value("user", 0.0);
  r.sys = j.value("sys", 0.0);
  r.peak_rss_kib = j.value("peak_rss_kib", 0.0);
  if (j.contains("metrics") && j["metrics"].is_object()) {
    for (const auto& [name, v] : j["metrics"].items()) {
      if (v.is_number()) r.metrics[name] = v.get<double>();
    }
  }
  r.exit_code = j.value("exit", 0);
  r.status = j.at("status").get<std::string>();
  r.stdout_tail = j.value("stdout_tail", "");
  r.output_hash = j.value("output_hash", "");
  if (j.contains("telemetry")) r.telemetry = j.at("telemetry");
  return r;
}

// A run of other JSON Lines (parse_study's rules for them); its arm number in `arm`.
RunRecord foreign_run(const nlohmann::json& j, const std::string& where, int& arm) {
  RunRecord r;
  const auto& pair = j["pair"];
  if (!pair.is_number_unsigned()) throw InputError(where + ": \"pair\" is not a whole number");
  r.pair = pair.get<std::size_t>();
  if (j.contains("attempt") && j["attempt"].is_number_unsigned()) r.attempt = j["attempt"].get<std::size_t>();
  std::string name = j["arm"].is_string() ? j["arm"].get<std::string>() : std::string{};
  for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  arm = arm_number(name);
  if (arm < 0) throw InputError(where + ": \"arm\" must be \"base\", \"candidate\" or \"candidateN\"");
  r.arm = name;
  bool failed = j.contains("ok") && j["ok"].is_boolean() && !j["ok"].get<bool>();
  if (j.contains("status") && j["status"].is_string()) {
    const auto status = j["status"].get<std::string>();
    failed |= status != "ok" && status != "success";
  } else {
    failed |= j.contains("error") && !j["error"].is_null();
  }
  r.status = failed ? "failed" : "ok";
  if (j.contains("position") && j["position"].is_number_integer()) r.position = j["position"].get<int>();
  if (j.contains("start") && j["start"].is_number()) r.start = j["start"].get<double>();
  if (j.contains("metric") && j["metric"].is_number()) r.metric = j["metric"].get<double>();
  if (j.contains("metrics") && j["metrics"].is_object()) {
    for (const auto& [k, v] : j["metrics"].items())
      if (v.is_number()) r.metrics[k] = v.get<double>();
  }
  for (const auto& [k, v] : j.items())
    if (v.is_number() && k != "pair" && k != "attempt" && k != "metric") r.metrics.emplace(k, v.get<double>());
  if (j.contains("metric") && j["metric"].is_string() && j.contains("value") && j["value"].is_number())
    r.metrics.emplace(j["metric"].get<std::string>(), j["value"].get<double>());
  return r;
}

// The metric other JSON Lines name: the header's, else the first run's, else its only "metrics" entry.
std::string foreign_metric(const nlohmann::json& header, const nlohmann::json& first_run) {
  for (const char* key : {"metric", "metric_name"}) {
    if (header.contains(key) && header[key].is_string()) return header[key].get<std::string>();
    if (first_run.contains(key) && first_run[key].is_string()) return first_run[key].get<std::string>();
  }
  if (first_run.contains("metrics") && first_run["metrics"].is_object() && first_run["metrics"].size() == 1)
    return first_run["metrics"].begin().key();
  return {};
}

// One record of a journal read through its document.
void journal_record(const nlohmann::json& j, Study& study, RunChecks& checks, bool& have_header,
                    std::size_t line_no) {
  const auto where = checks.where(line_no);
  try {
    // A record without "type" that names a pair and an arm is a run, as in other JSON Lines.
    const bool pair_and_arm = j.contains("pair") && j.contains("arm");
    if (j.contains("type") ? !j["type"].is_string() : !pair_and_arm)
      throw InputError(where + ": a record without \"type\" (study, run or pair_excluded)");
    const auto type = j.contains("type") ? j["type"].get<std::string>() : std::string("run");
    if (type == "study") {
      if (have_header) throw InputError(where + ": second study header");
      read_header(j, study.config);
      study.header = j;
      checks.arms = arms_of(study.config).size();
      have_header = true;
    } else if (type == "run") {
      int arm = 0;
      auto r = journal_run(j, checks, line_no, arm);
      checks.add(study, std::move(r), arm, line_no);
    } else if (type == "pair_excluded") {
      study.excluded.push_back(j.at("pair").get<std::size_t>());
    } else {
      throw InputError(fmt::format("{}: unknown record type '{}'", where, type));
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: malformed record ({})", where, e.what()));
  }
}

// parse_study; with `journal_only` anything but a layerbench-ab journal is refused at its first record.
Study parse(std::string_view content, const std::string& path, bool journal_only, Keep keep) {
  content = text::strip_bom(content);
  Study study;
  bool have_header = false;
  bool first = true;  // before the first record: it decides journal or other JSON Lines
  std::size_t line_no = 0;
  RunChecks checks;
  checks.path = path;
  checks.keep = keep;
  json_record::Record rec;
  std::vector<std::pair<std::string_view, const Value*>> scratch;
  nlohmann::json first_run;  // other JSON Lines: the first run, whose fields may name the metric
  int max_arm = 1;
  // One record a line: room for every run up front, so a study of 10^6 pairs is not moved as
  // the vector grows.
  study.runs.reserve(static_cast<std::size_t>(std::count(content.begin(), content.end(), '\n')) + 1);
  std::size_t pos = 0;
  while (pos < content.size()) {
    const auto nl = content.find('\n', pos);
    const auto view = content.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? content.size() : nl + 1;
    // The last line with content (a run killed mid-write tears at most that one).
    const bool last = content.find_first_not_of(" \t\r\n", pos) == std::string_view::npos;
    ++line_no;
    if (view.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (study.journal && have_header && rec.parse(view) && rec.is_object()) {
      RunRecord r;
      if (canonical_run(rec, r, scratch)) {
        const int arm = checks.journal_arm(r.arm, line_no);
        checks.add(study, std::move(r), arm, line_no);
        continue;
      }
    }
    // Everything else (the header, excluded pairs, telemetry, other producers, any error) through nlohmann::json.
    const auto where = checks.where(line_no);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(view);
    } catch (const nlohmann::json::exception& e) {  // parse errors and number overflow ("1e999")
      // A run killed mid-write leaves at most a torn last line: skip it, only there.
      if (last) break;
      throw InputError(fmt::format("{}: not a JSON object ({})", where, e.what()));
    }
    if (!j.is_object()) throw InputError(where + ": not a JSON object");
    if (first) {
      study.journal = j.value("type", nlohmann::json()) == "study";
      if (journal_only && !study.journal)
        throw InputError(where + ": no study header (the first record of a layerbench-ab study has \"type\": \"study\")");
    }
    first = false;
    if (study.journal) {
      journal_record(j, study, checks, have_header, line_no);
      continue;
    }
    if (!j.contains("pair") || !j.contains("arm")) {  // other JSON Lines: the first such record is the header
      if (!have_header) study.header = j;
      have_header = true;
      continue;
    }
    int arm = 0;
    auto r = foreign_run(j, where, arm);
    if (first_run.is_null()) first_run = j;
    max_arm = std::max(max_arm, arm);
    checks.add(study, std::move(r), arm, line_no);
  }
  if (line_no == 0) throw InputError(path + ":1: empty file");
  if (study.journal) {
    if (!have_header) throw InputError(path + ":1: no study header (a line with \"type\": \"study\")");
    study.metric = metric_spec_name(study.config.metric).name;
    return study;
  }
  if (study.runs.empty()) throw InputError(path + ": no study runs (records with \"pair\" and \"arm\")");
  study.config.more_candidates.assign(static_cast<std::size_t>(max_arm - 1), std::string{});
  study.metric = foreign_metric(study.header, first_run);
  return study;
}

}  // namespace

Study parse_study(std::string_view text, const std::string& path, Keep keep) {
  return parse(text, path, false, keep);
}

Study parse_journal(std::string_view text, const std::string& path) {
  return parse(text, path, true, Keep::everything);
}

}  // namespace layerbench::ab
