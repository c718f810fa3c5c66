#include "bench/ab/study.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include "bench/ab/errors.hpp"
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
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open file", path));
  const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_study(content, path);
}

Study parse_study(std::string_view content, const std::string& path) {
  content = text::strip_bom(content);
  Study study;
  bool have_header = false;
  std::size_t line_no = 0;
  std::set<std::tuple<std::size_t, std::size_t, std::string>> seen;  // (pair, attempt, arm)
  std::size_t pos = 0;
  while (pos < content.size()) {
    const auto nl = content.find('\n', pos);
    const std::string line(content.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    pos = nl == std::string_view::npos ? content.size() : nl + 1;
    // The last line with content (a run killed mid-write tears at most that one).
    const bool last = content.find_first_not_of(" \t\r\n", pos) == std::string_view::npos;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto where = fmt::format("{}:{}", path, line_no);
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
        have_header = true;
      } else if (type == "run") {
        if (!have_header) throw InputError(where + ": run record before the study header");
        RunRecord r;
        r.pair = j.at("pair").get<std::size_t>();
        r.attempt = j.value("attempt", std::size_t{0});
        r.arm = j.at("arm").get<std::string>();
        const auto arms = arms_of(study.config);
        if (std::none_of(arms.begin(), arms.end(), [&](const Arm& a) { return a.key == r.arm; })) {
          throw InputError(fmt::format("{}: arm '{}' is not one of the study's arms", where, r.arm));
        }
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
        if (r.status == "ok" && (!r.metric || !std::isfinite(*r.metric))) {
          throw InputError(where + ": successful run without a finite metric");
        }
        if (!seen.insert({r.pair, r.attempt, r.arm}).second) {
          throw InputError(fmt::format("{}: pair {} attempt {} has a second {} run (duplicate record)", where, r.pair,
                                       r.attempt, r.arm));
        }
        study.runs.push_back(std::move(r));
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
  // (pair, attempt) -> each arm's record
  std::map<std::pair<std::size_t, std::size_t>, std::map<std::string, const RunRecord*>> attempts;
  for (const auto& r : study.runs) attempts[{r.pair, r.attempt}][r.arm] = &r;
  std::vector<CompletedPair> out;
  std::size_t last_pair = SIZE_MAX;
  for (const auto& [key, runs] : attempts) {
    const bool complete = std::all_of(arms.begin(), arms.end(), [&](const Arm& a) {
      const auto it = runs.find(a.key);
      return it != runs.end() && it->second->status == "ok";
    });
    if (!complete || !runs.count(candidate_key)) continue;
    if (key.first == last_pair) continue;  // keep the first complete attempt of a pair
    last_pair = key.first;
    const auto* b = runs.at("base");
    const auto* c = runs.at(candidate_key);
    out.push_back({key.first, *b->metric, *c->metric, b->position < c->position, std::min(b->start, c->start),
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
  std::map<std::pair<std::size_t, std::size_t>, bool> failed;  // (pair, attempt) -> any failure
  for (const auto& r : study.runs) {
    if (r.pair >= num_pairs) continue;
    states[r.pair].next_attempt = std::max(states[r.pair].next_attempt, r.attempt + 1);
    failed[{r.pair, r.attempt}] |= r.status != "ok";
  }
  for (const auto& [key, any] : failed) {
    if (any) ++states[key.first].failed_attempts;
  }
  for (const auto& p : completed_pairs(study)) {
    if (p.pair < num_pairs) states[p.pair].completed = true;
  }
  for (auto p : study.excluded) {
    if (p < num_pairs) states[p].excluded = true;
  }
  return states;
}

}  // namespace layerbench::ab
