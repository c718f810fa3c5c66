#pragma once
// The analysis of a study file: the primary comparison (base against the first candidate on the
// primary metric) with its diagnostics, sequential stop and telemetry; every other candidate and
// metric against the base with Holm-adjusted p-values; and the raw per-run CSV.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "reports/document.hpp"
#include "study/diagnostics.hpp"
#include "study/metric.hpp"
#include "study/study.hpp"
#include "study/telemetry.hpp"
#include "stats/paired.hpp"

namespace layerbench::ab {

// One candidate arm against the base on one metric.
struct Comparison {
  Arm candidate;
  std::string metric, unit;
  stats::PairedAnalysis analysis;
  double p = stats::nan_value;       // two-sided Wilcoxon p (exact when available)
  double p_holm = stats::nan_value;  // Holm-adjusted over the candidates on the same metric
};

// Every (candidate, metric) pair with at least 2 complete pairs, candidates in arm order, metrics
// in the order given (the primary first). Holm's step-down adjustment runs over the candidates of
// each metric (family size = number of candidates).
std::vector<Comparison> compare_arms(const Study& study, const stats::PairedOptions& options);

// Everything a study's report says, computed once: the primary comparison (on the pairs up to a
// sequential stop), diagnostics, telemetry and every arm x metric. Printers only print it.
struct StudyAnalysis {
  Study study;  // as analysed (cut at a sequential stop)
  stats::PairedOptions options;
  std::vector<long long> pair_ids;
  std::vector<double> base, candidate;  // the primary metric of each completed pair
  stats::PairedAnalysis analysis;
  StudyDiagnostics diagnostics;
  std::optional<stats::SequentialResult> sequential;
  std::optional<TelemetryComparison> telemetry;
  std::vector<Arm> arms;
  std::vector<MetricSpec> metrics;
  bool table = false;  // more arms or metrics than the primary comparison
  std::vector<Comparison> comparisons;
};

// Throws InputError with fewer than 2 completed pairs.
StudyAnalysis analyze_study(const Study& study, const stats::PairedOptions& options);
// How many analyze_study calls this process made (a run analyses its study once).
std::size_t study_analyses_run();

// The analysis as JSON (schema layerbench-ab-analysis/1, with its pairs).
nlohmann::json study_json(const StudyAnalysis& analysis);
// The analysis as document sections, printed by `run` at the end and by `analyze FILE.jsonl` with
// reports' one printer per format (text; markdown with bold section titles, heading level 0): the
// paired sections of the primary comparison (reports::paired_sections, the arms and primary
// metric in front), GPU telemetry, and every arm x metric with the multiplicity note.
std::vector<reports::Section> study_sections(const StudyAnalysis& analysis);

// One row per recorded run: pair, attempt, arm, position, status, exit, times, peak RSS, metrics.
std::string runs_csv(const Study& study);

}  // namespace layerbench::ab
