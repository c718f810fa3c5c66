#include "study/study.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <fstream>
#include <unordered_set>

#include "study/errors.hpp"
#include "common/json_record.hpp"
#include "common/text.hpp"

namespace layerbench::ab {

nlohmann::json sequential_design_json(const stats::SequentialDesign& d) {
  return {{"alpha", d.alpha},
          {"tau", d.effective_tau()},
          {"tune_pairs", d.tune_pairs},
          {"min_pairs", d.min_pairs},
          {"equivalence", d.equivalence},
          {"equivalence_relative", d.equivalence_relative}};
}

stats::SequentialDesign sequential_design_from_json(const nlohmann::json& j, std::size_t max_pairs) {
  stats::SequentialDesign d;
  d.alpha = j.at("alpha").get<double>();
  d.tune_pairs = j.value("tune_pairs", d.tune_pairs);
  d.tau = j.at("tau").get<double>();
  d.min_pairs = j.value("min_pairs", d.min_pairs);
  d.equivalence = j.value("equivalence", 0.0);
  d.equivalence_relative = j.value("equivalence_relative", true);
  d.max_pairs = max_pairs;
  return d;
}

std::vector<Arm> arms_of(const StudyConfig& c) {
  std::vector<Arm> arms{{"base", "base", c.base}, {"candidate", "candidate", c.candidate}};
  for (std::size_t i = 0; i < c.more_candidates.size(); ++i) {
    const auto key = fmt::format("candidate{}", i + 2);
    arms.push_back({key, key, c.more_candidates[i]});
  }
  for (std::size_t i = 0; i < arms.size() && i < c.names.size(); ++i) {
    if (!c.names[i].empty()) arms[i].name = c.names[i];
  }
  return arms;
}

nlohmann::json header_json(const StudyConfig& c) {
  nlohmann::json j = {{"type", "study"},          {"version", 1},          {"base", c.base},
                      {"candidate", c.candidate}, {"prepare", c.prepare},  {"pairs", c.pairs},
                      {"warmup", c.warmup},       {"order", c.order},      {"metric", c.metric},
                      {"timeout", c.timeout},     {"retries", c.retries},  {"seed", c.seed},
                      {"check_output", c.check_output}, {"telemetry", c.telemetry},
                      {"telemetry_period_ms", c.telemetry_period_ms}, {"telemetry_status", c.telemetry_status}};
  if (c.sequential) j["sequential"] = sequential_design_json(*c.sequential);
  if (!c.more_candidates.empty()) j["more_candidates"] = c.more_candidates;
  if (!c.names.empty()) j["names"] = c.names;
  if (!c.metrics.empty()) j["metrics"] = c.metrics;
  if (c.ignore_failure) j["ignore_failure"] = true;
  if (c.shell != "sh") j["shell"] = c.shell;
  if (c.spawn_wall > 0 || c.spawn_user > 0 || c.spawn_sys > 0)
    j["shell_spawn"] = {{"wall_s", c.spawn_wall}, {"user_s", c.spawn_user}, {"sys_s", c.spawn_sys}};
  if (std::isfinite(c.load_avg)) j["load"] = {{"load_avg_1m", c.load_avg}, {"cpus", c.cpus}};
  return j;
}

nlohmann::json run_json(const RunRecord& r) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [name, v] : r.metrics) metrics[name] = v;
  nlohmann::json j = {{"type", "run"},     {"pair", r.pair},       {"attempt", r.attempt},
                      {"arm", r.arm},      {"position", r.position}, {"start", r.start},
                      {"metric", nullptr}, {"wall", r.wall},       {"user", r.user},
                      {"sys", r.sys},      {"peak_rss_kib", r.peak_rss_kib}, {"metrics", metrics},
                      {"exit", r.exit_code}, {"status", r.status}, {"stdout_tail", r.stdout_tail}};
  if (r.metric) j["metric"] = *r.metric;
  if (!r.output_hash.empty()) j["output_hash"] = r.output_hash;
  if (!r.telemetry.is_null()) j["telemetry"] = r.telemetry;
  return j;
}

nlohmann::json excluded_json(std::size_t pair) { return {{"type", "pair_excluded"}, {"pair", pair}}; }

bool looks_like_jsonl(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[3] = {};
  in.read(head, 3);
  if (in.gcount() < 3 || std::string_view(head, 3) != text::kUtf8Bom) {
    in.clear();
    in.seekg(0);
  }
  char c = 0;
  while (in.get(c)) {
    if (!std::isspace(static_cast<unsigned char>(c))) return c == '{';
  }
  return false;
}

Study read_study(const std::string& path) {
  const auto content = text::read_file(path);
  if (!content) throw InputError(fmt::format("{}: cannot open file", path));
  return parse_study(*content, path);
}

namespace {

using json_record::Value;

// (pair, attempt, arm index): a run record's identity; a second record of it is a duplicate.
struct RunKey {
  std::size_t pair, attempt, arm;
  bool operator==(const RunKey&) const = default;
};
struct RunKeyHash {
  std::size_t operator()(const RunKey& k) const {
    std::uint64_t h = k.pair * 0x9E3779B97F4A7C15ull;
    h ^= (k.attempt + 0x632BE59BD9B4E019ull) + (h << 6) + (h >> 2);
    return static_cast<std::size_t>(h ^ (k.arm * 0xC2B2AE3D27D4EB4Full));
  }
};

struct RunChecks {
  std::string path;
  std::vector<Arm> arms;  // of the study's header
  // Duplicates: while the runs come in (pair, attempt) order, as `run` writes them, a second record
  // can only be within the last (pair, attempt); after the first run out of order, a hash set.
  bool ordered = true;
  std::size_t group = 0;  // index of the first run of the last (pair, attempt)
  std::unordered_set<RunKey, RunKeyHash> seen;

  std::string where(std::size_t line_no) const { return fmt::format("{}:{}", path, line_no); }
  std::size_t arm_index(const std::string& arm, std::size_t line_no) const {
    for (std::size_t i = 0; i < arms.size(); ++i) {
      if (arms[i].key == arm) return i;
    }
    throw InputError(fmt::format("{}: arm '{}' is not one of the study's arms", where(line_no), arm));
  }
  bool duplicate(const std::vector<RunRecord>& runs, const RunRecord& r, std::size_t arm) {
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
      for (const auto& q : runs) seen.insert({q.pair, q.attempt, arm_index(q.arm, 0)});
    }
    return !ordered && !seen.insert({r.pair, r.attempt, arm}).second;
  }
  // The checks after the fields are read, then the record joins the study.
  void add(Study& study, RunRecord&& r, std::size_t arm, std::size_t line_no) {
    if (r.status == "ok" && (!r.metric || !std::isfinite(*r.metric))) {
      throw InputError(where(line_no) + ": successful run without a finite metric");
    }
    if (duplicate(study.runs, r, arm)) {
      throw InputError(fmt::format("{}: pair {} attempt {} has a second {} run (duplicate record)", where(line_no),
                                   r.pair, r.attempt, r.arm));
    }
    study.runs.push_back(std::move(r));
  }
};

// A run record as `layerbench-ab run` writes it, read from its members without a JSON document.
// False when anything is in another form (a value of another type, telemetry): the line then
// goes through nlohmann::json (read_record), which gives the same record or the same error.
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

}  // namespace

Study parse_study(std::string_view content, const std::string& path) {
  content = text::strip_bom(content);
  Study study;
  bool have_header = false;
  std::size_t line_no = 0;
  RunChecks checks;
  checks.path = path;
  json_record::Record rec;
  std::vector<std::pair<std::string_view, const Value*>> scratch;
  std::size_t pos = 0;
  while (pos < content.size()) {
    const auto nl = content.find('\n', pos);
    const auto view = content.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? content.size() : nl + 1;
    // The last line with content (a run killed mid-write tears at most that one).
    const bool last = content.find_first_not_of(" \t\r\n", pos) == std::string_view::npos;
    ++line_no;
    if (view.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (have_header && rec.parse(view) && rec.is_object()) {
      RunRecord r;
      if (canonical_run(rec, r, scratch)) {
        const auto arm = checks.arm_index(r.arm, line_no);
        checks.add(study, std::move(r), arm, line_no);
        continue;
      }
    }
    // Everything else (the header, excluded pairs, telemetry, any error) through nlohmann::json.
    const std::string line(view);
    const auto where = checks.where(line_no);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {  // parse errors and number overflow ("1e999")
      // A run killed mid-write leaves at most a torn last line: skip it, only there.
      if (last) break;
      throw InputError(fmt::format("{}: not a JSON object ({})", where, e.what()));
    }
    if (!j.is_object()) throw InputError(where + ": not a JSON object");
    if (!have_header && j.value("type", std::string{}) != "study") {
      throw InputError(where + ": no study header (the first record of a layerbench-ab study has \"type\": \"study\")");
    }
    try {
      const auto type = j.at("type").get<std::string>();
      if (type == "study") {
        if (have_header) throw InputError(where + ": second study header");
        auto& c = study.config;
        c.base = j.at("base").get<std::string>();
        c.candidate = j.at("candidate").get<std::string>();
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
        checks.arms = arms_of(c);
        have_header = true;
      } else if (type == "run") {
        if (!have_header) throw InputError(where + ": run record before the study header");
        RunRecord r;
        r.pair = j.at("pair").get<std::size_t>();
        r.attempt = j.value("attempt", std::size_t{0});
        r.arm = j.at("arm").get<std::string>();
        const auto arm = checks.arm_index(r.arm, line_no);
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
  if (line_no == 0) throw InputError(path + ":1: empty file");
  if (!have_header) throw InputError(path + ":1: no study header (a line with \"type\": \"study\")");
  return study;
}

std::vector<CompletedPair> completed_pairs(const Study& study, const std::string& candidate_key) {
  const auto arms = arms_of(study.config);
  // The runs in (pair, attempt) order; records of one attempt stay in file order, so a later
  // record of an arm stands for it (records arrive in this order, so the sort is rarely needed).
  std::vector<std::size_t> order(study.runs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto before = [&](std::size_t a, std::size_t b) {
    const auto& x = study.runs[a];
    const auto& y = study.runs[b];
    return x.pair != y.pair ? x.pair < y.pair : x.attempt < y.attempt;
  };
  if (!std::is_sorted(order.begin(), order.end(), before)) std::stable_sort(order.begin(), order.end(), before);
  std::vector<CompletedPair> out;
  std::size_t last_pair = SIZE_MAX;
  std::vector<const RunRecord*> of_arm(arms.size());
  for (std::size_t g = 0; g < order.size();) {
    const auto& first = study.runs[order[g]];
    std::size_t end = g;
    const RunRecord* b = nullptr;
    const RunRecord* c = nullptr;
    std::fill(of_arm.begin(), of_arm.end(), nullptr);
    for (; end < order.size() && !before(order[g], order[end]); ++end) {  // one (pair, attempt)
      const auto& r = study.runs[order[end]];
      for (std::size_t a = 0; a < arms.size(); ++a) {
        if (arms[a].key == r.arm) of_arm[a] = &r;
      }
      if (r.arm == "base") b = &r;
      if (r.arm == candidate_key) c = &r;
    }
    g = end;
    const bool complete =
        std::all_of(of_arm.begin(), of_arm.end(), [](const RunRecord* r) { return r && r->status == "ok"; });
    if (!complete || !c) continue;
    if (first.pair == last_pair) continue;  // keep the first complete attempt of a pair
    last_pair = first.pair;
    out.push_back({first.pair, *b->metric, *c->metric, b->position < c->position, std::min(b->start, c->start),
                   b->output_hash, c->output_hash, b->telemetry, c->telemetry, b, c});
  }
  return out;
}

std::optional<stats::SequentialResult> sequential_state(const Study& study) {
  if (!study.config.sequential) return std::nullopt;
  std::vector<double> base, candidate;
  for (const auto& p : completed_pairs(study)) {
    base.push_back(p.base);
    candidate.push_back(p.candidate);
  }
  auto design = *study.config.sequential;
  design.max_pairs = study.config.pairs;
  return stats::sequential_decision(base, candidate, design);
}

Study truncated_at_stop(const Study& study, const stats::SequentialResult& state) {
  const auto pairs = completed_pairs(study);
  if (state.stop == stats::SequentialStop::running || state.pairs == 0 || state.pairs >= pairs.size()) return study;
  const std::size_t last = pairs[state.pairs - 1].pair;
  Study out = study;
  std::erase_if(out.runs, [&](const RunRecord& r) { return r.pair > last; });
  std::erase_if(out.excluded, [&](std::size_t p) { return p > last; });
  return out;
}

std::vector<PairState> pair_states(const Study& study, std::size_t num_pairs) {
  std::vector<PairState> states(num_pairs);
  std::vector<std::pair<std::size_t, std::size_t>> failed;  // (pair, attempt) of each failed run (few)
  for (const auto& r : study.runs) {
    if (r.pair >= num_pairs) continue;
    states[r.pair].next_attempt = std::max(states[r.pair].next_attempt, r.attempt + 1);
    if (r.status != "ok") failed.emplace_back(r.pair, r.attempt);
  }
  std::sort(failed.begin(), failed.end());
  failed.erase(std::unique(failed.begin(), failed.end()), failed.end());  // an attempt fails once
  for (const auto& key : failed) ++states[key.first].failed_attempts;
  for (const auto& p : completed_pairs(study)) {
    if (p.pair < num_pairs) states[p.pair].completed = true;
  }
  for (auto p : study.excluded) {
    if (p < num_pairs) states[p].excluded = true;
  }
  return states;
}

}  // namespace layerbench::ab
