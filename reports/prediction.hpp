#pragma once
// Predicted times and their ranking, shared by the advisors (layerbench-attn --advise,
// layerbench-moe --advise): an interval (median with a p10..p90-style range), its arithmetic,
// one prediction per candidate (parts named, the source of each figure as notes) and the ranked
// advice section (fastest median first, which differences the intervals resolve).
#include "reports/document.hpp"
#include "reports/result.hpp"

#include <string>
#include <utility>
#include <vector>

namespace layerbench::reports {

struct Interval {
  double median = 0, lo = 0, hi = 0;  // ms
  Interval& operator+=(const Interval& o) {
    median += o.median;
    lo += o.lo;
    hi += o.hi;
    return *this;
  }
};
Interval interval_of(const Measurement& m);  // median, p10, p90 of the samples
Interval scaled(const Interval& t, double f);
Interval maxed(const Interval& a, const Interval& b);  // bound by bound
// Widened by `margin` x median on both sides.
Interval widened(Interval t, double margin);

struct Prediction {
  std::string label;  // the candidate (a topology, a layout)
  Interval total;     // with the margin
  std::vector<std::pair<std::string, Interval>> parts;  // name -> time
  std::vector<std::string> notes;  // where each figure came from
};

// One advice entry of a result file's "advice" array: {"label", "predicted_ms", "lo_ms", "hi_ms",
// "prediction": true, "parts": [{"name", "median_ms", "lo_ms", "hi_ms"}...], "notes": [...]}; the
// advisors add their own keys (layout, ep, tp; topology, seq) beside these.
nlohmann::json to_json(const Prediction& p);
// Inverse of to_json; files written before "label" existed name the candidate "layout" or
// "topology". Throws std::runtime_error on a missing or non-numeric time.
Prediction prediction_from_json(const nlohmann::json& j);

// Fastest predicted median first (stable).
std::vector<Prediction> ranked(std::vector<Prediction> preds);
// The ranked table and which differences are resolved (intervals apart), as a section headed by
// `title` and marked as a prediction; `candidate` heads the label column ("topology", "layout").
Section advice_section(const std::string& title, std::vector<Prediction> preds,
                       const std::string& candidate = "topology", const std::string& total = "predicted forward ms");
// Every prediction's notes, each once, in order of appearance.
std::vector<std::string> collected_notes(const std::vector<Prediction>& preds);
// "heading:" then those notes as a markdown list.
std::string notes_markdown(const std::string& heading, const std::vector<Prediction>& preds);

}  // namespace layerbench::reports
