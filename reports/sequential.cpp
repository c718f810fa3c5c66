#include "reports/sequential.hpp"
#include "common/json_number.hpp"

#include <cmath>

namespace layerbench::reports {
namespace {

nlohmann::json num(double v) { return finite_or_null(v); }  // common/json_number.hpp

}  // namespace

nlohmann::json sequential_json(const stats::SequentialResult& s) {
  const auto& d = s.design;
  return {{"method", "scale-invariant normal-mixture confidence sequence (Lai 1976)"},
          {"alpha", d.alpha},
          {"tau", d.effective_tau()},
          {"tune_pairs", d.tune_pairs},
          {"max_pairs", d.max_pairs},
          {"min_pairs", d.min_pairs},
          {"equivalence", d.equivalence > 0 ? nlohmann::json(d.equivalence) : nlohmann::json(nullptr)},
          {"equivalence_relative", d.equivalence_relative},
          {"effect_margin", d.effect_margin},
          {"stop", stats::to_string(s.stop)},
          {"pairs", s.pairs},
          {"mean", num(s.mean)},
          {"interval", {{"low", num(s.interval.low)}, {"high", num(s.interval.high)}}},
          {"margin", num(s.margin)},
          {"summary", stats::sequential_summary(s)},
          {"note", stats::sequential_fixed_n_note()}};
}

}  // namespace layerbench::reports
