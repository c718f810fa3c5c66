#pragma once
// The history report: a summary (one row per change point, its status and interval, and what
// CI's exit code means) for an issue or a PR comment, and per series a trend plot (SVG: samples
// per commit, the median line, each change point's commit range shaded and the after-step
// level's interval) on one self-contained HTML page, built on the report model of reports/.
#include "reports/report.hpp"
#include "study/history/findings.hpp"

namespace layerbench::history {

// At most `max_samples` samples per commit are drawn (evenly picked; the median uses them all).
reports::Report history_report(const Analysis& a, std::size_t max_samples = 8);
// The summary section alone, as markdown (for a PR comment).
std::string summary_markdown(const Analysis& a);

}  // namespace layerbench::history
