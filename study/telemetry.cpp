#include "study/telemetry.hpp"
#include "common/json_number.hpp"
#include "common/number_text.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace layerbench::ab {
namespace {

using nlohmann::json;

double get(const json& j, const char* key) {
  return j.contains(key) && j.at(key).is_number() ? j.at(key).get<double>() : stats::nan_value;
}
std::string share(double v) { return text::fixed(100 * v, 1) + (std::isfinite(v) ? "%" : ""); }

ArmTelemetry arm_of(std::span<const RunCovariates> runs) {
  ArmTelemetry a;
  double clock = 0, power = 0, capped = 0;
  std::size_t nc = 0, np = 0, ns = 0;
  for (const auto& r : runs) {
    if (r.samples == 0) continue;
    ++a.runs;
    a.samples += r.samples;
    if (std::isfinite(r.sm_clock_mhz)) clock += r.sm_clock_mhz, ++nc;
    if (std::isfinite(r.power_w)) power += r.power_w, ++np;
    if (std::isfinite(r.power_capped_share)) capped += r.power_capped_share, ++ns;
    if (std::isfinite(r.memory_peak_mib))
      a.memory_peak_mib = std::isfinite(a.memory_peak_mib) ? std::max(a.memory_peak_mib, r.memory_peak_mib)
                                                           : r.memory_peak_mib;
  }
  if (nc) a.sm_clock_mean_mhz = clock / static_cast<double>(nc);
  if (np) a.power_mean_w = power / static_cast<double>(np);
  if (ns) a.power_capped_share = capped / static_cast<double>(ns);
  return a;
}

}  // namespace

RunCovariates covariates_of(const json& window) {
  RunCovariates r;
  if (!window.is_object()) return r;
  r.samples = window.value("samples", std::size_t{0});
  if (!window.contains("combined")) return r;
  const auto& c = window.at("combined");
  r.sm_clock_mhz = get(c, "sm_clock_mean_mhz");
  r.power_w = get(c, "power_mean_w");
  r.power_capped_share = get(c, "power_capped_share");
  r.memory_peak_mib = get(c, "memory_used_peak_mib");
  return r;
}

TelemetryComparison compare_telemetry(std::span<const RunCovariates> base, std::span<const RunCovariates> candidate,
                                      std::span<const double> base_values, std::span<const double> candidate_values,
                                      const stats::PairedOptions& options) {
  TelemetryComparison t;
  t.base = arm_of(base);
  t.candidate = arm_of(candidate);
  t.present = t.base.samples + t.candidate.samples > 0;
  if (!t.present) return t;

  std::vector<double> cb, cc, vb, vc, diff;
  const std::size_t n = std::min({base.size(), candidate.size(), base_values.size(), candidate_values.size()});
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(base[i].sm_clock_mhz) || !std::isfinite(candidate[i].sm_clock_mhz)) continue;
    cb.push_back(base[i].sm_clock_mhz);
    cc.push_back(candidate[i].sm_clock_mhz);
    vb.push_back(base_values[i]);
    vc.push_back(candidate_values[i]);
    diff.push_back(cc.back() - cb.back());
  }
  const double alpha = 1 - options.confidence;
  if (diff.size() >= 2) {
    t.clock_diff = stats::t_test(diff, options.confidence);
    const auto w = stats::wilcoxon_signed_rank(stats::round_for_ranking(diff, options.rank_digits));
    t.clock_diff_wilcoxon_p = w.p_exact ? *w.p_exact : w.p_normal;
    double ref = 0;
    for (std::size_t i = 0; i < cb.size(); ++i) ref += cb[i] + cc[i];
    t.reference_clock_mhz = ref / static_cast<double>(2 * cb.size());
    double raw = 0;
    for (std::size_t i = 0; i < vb.size(); ++i) raw += vc[i] - vb[i];
    t.raw_delta_mean = raw / static_cast<double>(vb.size());
    // A time at the reference clock, if time scales as 1 / SM clock (compute-bound work).
    for (std::size_t i = 0; i < vb.size(); ++i) {
      vb[i] *= cb[i] / t.reference_clock_mhz;
      vc[i] *= cc[i] / t.reference_clock_mhz;
    }
    stats::PairedOptions o = options;
    o.predicted.reset();
    try {
      t.normalised = stats::analyze_paired(vb, vc, o);
      t.normalised_pairs = vb.size();
    } catch (const std::invalid_argument&) {
    }
    const bool t_sig = std::isfinite(t.clock_diff->p) && t.clock_diff->p < alpha;
    const bool w_sig = std::isfinite(t.clock_diff_wilcoxon_p) && t.clock_diff_wilcoxon_p < alpha;
    if (t_sig && w_sig) {
      t.warnings.push_back(fmt::format(
          "the arms ran at different SM clocks: base {} MHz, candidate {} MHz (paired candidate - base {:+.1f} MHz, "
          "CI [{:+.1f}, {:+.1f}], t p={:.3g}, Wilcoxon p={:.3g}); part of the delta may be the clock, compare the "
          "clock-normalised delta",
          text::fixed(t.base.sm_clock_mean_mhz, 1), text::fixed(t.candidate.sm_clock_mean_mhz, 1), t.clock_diff->mean, t.clock_diff->ci.low,
          t.clock_diff->ci.high, t.clock_diff->p, t.clock_diff_wilcoxon_p));
    }
  }
  const double capped = std::max(std::isfinite(t.base.power_capped_share) ? t.base.power_capped_share : 0.0,
                                 std::isfinite(t.candidate.power_capped_share) ? t.candidate.power_capped_share : 0.0);
  if (capped >= kPowerCappedWarning) {
    t.warnings.push_back(fmt::format(
        "the GPU was power-capped in {} (base) / {} (candidate) of the samples: on a power-bound device a change "
        "that adds or removes idle time also moves the clocks",
        share(t.base.power_capped_share), share(t.candidate.power_capped_share)));
  }
  return t;
}

json telemetry_json(const TelemetryComparison& t) {
  auto arm = [](const ArmTelemetry& a) {
    return json{{"runs", a.runs}, {"samples", a.samples}, {"sm_clock_mean_mhz", finite_or_null(a.sm_clock_mean_mhz)},
                {"power_mean_w", finite_or_null(a.power_mean_w)}, {"power_capped_share", finite_or_null(a.power_capped_share)},
                {"memory_used_peak_mib", finite_or_null(a.memory_peak_mib)}};
  };
  json j = {{"present", t.present}, {"status", t.status}, {"base", arm(t.base)}, {"candidate", arm(t.candidate)},
            {"warnings", t.warnings}, {"reference_clock_mhz", finite_or_null(t.reference_clock_mhz)}};
  if (t.clock_diff) {
    j["clock_diff_mhz"] = {{"mean", finite_or_null(t.clock_diff->mean)}, {"ci", {finite_or_null(t.clock_diff->ci.low), finite_or_null(t.clock_diff->ci.high)}},
                           {"t_p", finite_or_null(t.clock_diff->p)}, {"wilcoxon_p", finite_or_null(t.clock_diff_wilcoxon_p)}};
  }
  if (t.normalised) {
    const auto& a = *t.normalised;
    j["clock_normalised_delta"] = {
        {"pairs", t.normalised_pairs}, {"raw_mean", finite_or_null(t.raw_delta_mean)}, {"mean", finite_or_null(a.delta.mean)}, {"mean_pct", finite_or_null(a.delta.mean_pct)},
        {"t_ci", {finite_or_null(a.t.ci.low), finite_or_null(a.t.ci.high)}},
        {"bootstrap_ci", {finite_or_null(a.bootstrap.mean.percentile.low), finite_or_null(a.bootstrap.mean.percentile.high)}},
        {"assumption", "value x run SM clock / reference clock: a time that scales as 1 / SM clock"}};
  }
  return j;
}

reports::Section telemetry_section(const TelemetryComparison& t, const std::string& unit) {
  reports::Section s;
  if (!t.present) {
    s.title = "GPU telemetry";
    s.intro = t.status.rfind("unavailable", 0) == 0 ? "GPU telemetry " + t.status
                                                    : "No samples (runs shorter than the sampling period?).";
    return s;
  }
  s.title = "GPU telemetry (NVML, per arm: mean over runs)";
  reports::Table table;
  table.headers = {"arm", "SM clock MHz", "power W", "power-capped", "peak GPU memory MiB", "runs", "samples"};
  table.align = {reports::Align::left};
  for (const auto& [name, a] : {std::pair{"base", t.base}, std::pair{"candidate", t.candidate}})
    table.add_row({name, text::fixed(a.sm_clock_mean_mhz, 1), text::fixed(a.power_mean_w, 1), share(a.power_capped_share),
                   text::fixed(a.memory_peak_mib, 0), std::to_string(a.runs), std::to_string(a.samples)});
  s.tables.push_back(std::move(table));
  if (t.clock_diff) {
    s.notes.push_back(fmt::format("SM clock, paired candidate - base: {:+.1f} MHz, CI [{:+.1f}, {:+.1f}], t p={:.3g}, "
                                  "Wilcoxon p={:.3g}", t.clock_diff->mean, t.clock_diff->ci.low, t.clock_diff->ci.high,
                                  t.clock_diff->p, t.clock_diff_wilcoxon_p));
  }
  if (t.normalised) {
    const auto& a = *t.normalised;
    const std::string u = unit.empty() ? "" : " " + unit;
    s.notes.push_back(fmt::format("delta {:+.5g}{} beside the clock-normalised delta (value x run clock / {:.0f} MHz, "
                                  "n={}): mean {:+.5g}{} ({:+.3f}%), bootstrap CI [{:+.5g}, {:+.5g}]", t.raw_delta_mean,
                                  u, t.reference_clock_mhz, t.normalised_pairs, a.delta.mean, u, a.delta.mean_pct,
                                  a.bootstrap.mean.percentile.low, a.bootstrap.mean.percentile.high));
  }
  for (const auto& w : t.warnings) s.notes.push_back("Warning: " + w);
  return s;
}

}  // namespace layerbench::ab
