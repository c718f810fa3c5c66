#include "reports/sequential.hpp"
#include "common/json_number.hpp"

#include <cmath>

namespace layerbench::reports {
namespace {


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
          {"mean", finite_or_null(s.mean)},
          {"interval", {{"low", finite_or_null(s.interval.low)}, {"high", finite_or_null(s.interval.high)}}},
          {"margin", finite_or_null(s.margin)},
          {"summary", stats::sequential_summary(s)},
          {"note", stats::sequential_fixed_n_note()}};
}

}  // namespace layerbench::reports
