#pragma once
// The one paired-analysis renderer: a stats::PairedAnalysis as JSON (schema
// layerbench-ab-analysis/1) and as document sections (printed by reports/document.hpp), for every
// binary that compares two arms (layerbench-ab analyze / run, layerbench-moe --ab, layerbench-report). The configured confidence and alpha are the
// analysis' own (alpha = 1 - confidence); the verdict is derived once, here.
// Optional blocks ride along: the prediction check (stats::PredictedResult), a sequential stop
// (stats::SequentialResult), and any named block a caller attaches (PairedBlock: e.g. the
// study diagnostics of layerbench-ab run, the exchange estimate of layerbench-moe).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/document.hpp"
#include "stats/paired.hpp"
#include "stats/sequential.hpp"

namespace layerbench::reports {

inline constexpr const char* kPairedSchema = "layerbench-ab-analysis/1";

// A named block: its JSON goes under `key`; `rows` join the test table, `lines` follow the
// tables, `notes` join the reading guidance.
struct PairedBlock {
  std::string key;
  nlohmann::json json = nlohmann::json::object();
  std::vector<std::pair<std::string, std::string>> rows;
  std::vector<std::string> lines;
  std::vector<std::string> notes;
};

struct PairedContext {
  std::string metric = "value";  // the measured quantity, e.g. "time_ms"
  std::string unit;              // unit of the arms and the deltas ("ms", "s", ...; "" unitless)
  std::string base_label = "base", candidate_label = "candidate";
  const stats::SequentialResult* sequential = nullptr;
  std::vector<PairedBlock> blocks;
};

// Resolved when the bootstrap percentile interval of the mean delta excludes 0 and the Wilcoxon
// signed-rank p (exact where available) is below alpha; otherwise "unresolved".
struct PairedVerdict {
  bool resolved = false;
  int direction = 0;  // +1: candidate higher (positive delta; slower for times), -1: lower, 0: unresolved
  std::string text;
};
PairedVerdict paired_verdict(const stats::PairedAnalysis& a);

// {"pair": [...], "base": [...], "candidate": [...]}: the pairs an analysis JSON carries, so that
// every tool reads it back as a paired study (reports/inputs.hpp).
nlohmann::json pairs_json(const std::vector<long long>& ids, const std::vector<double>& base,
                          const std::vector<double>& candidate);

// "1.125x: the candidate is 1.13x slower" (times) or "... higher" (other units); "n/a" unless both
// means are positive. A reader's ratio beside the signed delta.
std::string ratio_text(double candidate, double base, const std::string& unit);
// s, ms, us, µs, ns, min, h: a time, where lower is better and a ratio reads faster/slower.
bool is_time_unit(const std::string& unit);

// NaN -> null. Keys: schema, metric, unit, confidence, alpha, n, base, candidate, delta, t_test,
// t_ci, bootstrap, wilcoxon, sign_test, outliers, drift, predicted, verdict, warnings, guidance,
// sequential (when given) and every block's key.
nlohmann::json paired_json(const stats::PairedAnalysis& a, const stats::PairedOptions& o,
                           const PairedContext& ctx = {});
// The analysis as document sections, for every printer (reports/document.hpp): an untitled one
// with the sign convention, the tables (arms, paired delta, tests with the verdict) and the blocks'
// lines as notes; "Sequential" (its stop and the fixed-n note) when given; "Reading guidance"
// (guidance, the blocks' notes, "Warning: " + each warning) when there is any.
std::vector<Section> paired_sections(const stats::PairedAnalysis& a, const stats::PairedOptions& o,
                                     const PairedContext& ctx = {});

// The same tables and every section's notes in order, for the report's one section per study.
struct PairedTables {
  std::vector<Table> tables;
  std::vector<std::string> notes;
};
PairedTables paired_tables(const stats::PairedAnalysis& a, const stats::PairedOptions& o,
                           const PairedContext& ctx = {});

// The prediction block: value +- E, measured - predicted and measured / predicted with their
// intervals, the verdict.
nlohmann::json prediction_json(const stats::PredictedResult& p);
}  // namespace layerbench::reports
