#pragma once
// Rendering a paired analysis (and study diagnostics) as JSON, text tables or markdown.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "bench/ab/diagnostics.hpp"
#include "stats/paired.hpp"
#include "stats/sequential.hpp"

namespace layerbench::ab {

// The JSON object of issue 3 (NaN -> null), plus "diagnostics" when a study is given.
nlohmann::json analysis_json(const stats::PairedAnalysis& a, const stats::PairedOptions& o,
                             const StudyDiagnostics* diagnostics = nullptr,
                             const stats::SequentialResult* sequential = nullptr);
// The prediction block: value +- E, measured - predicted and measured / predicted with their
// intervals, the verdict.
nlohmann::json prediction_json(const stats::PredictedResult& p);
std::string analysis_text(const stats::PairedAnalysis& a, const stats::PairedOptions& o,
                          const StudyDiagnostics* diagnostics = nullptr,
                          const stats::SequentialResult* sequential = nullptr);
std::string analysis_markdown(const stats::PairedAnalysis& a, const stats::PairedOptions& o,
                              const StudyDiagnostics* diagnostics = nullptr,
                              const stats::SequentialResult* sequential = nullptr);

}  // namespace layerbench::ab
