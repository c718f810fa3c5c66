#pragma once
// GPU telemetry of an A/B study: per-arm clocks, power, power-capped share and peak device
// memory; a paired test of the SM clock between arms; warnings when the arms ran at different
// clocks or the device was power-capped; the delta beside a clock-normalised delta.
// Used by `layerbench-ab run --telemetry gpu` and by the in-process A/B of the layer profiles.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "reports/document.hpp"
#include "stats/paired.hpp"

namespace layerbench::ab {

// What one run (or one A/B arm sample) saw. NaN: not reported.
struct RunCovariates {
  std::size_t samples = 0;
  double sm_clock_mhz = stats::nan_value;
  double power_w = stats::nan_value;
  double power_capped_share = stats::nan_value;
  double memory_peak_mib = stats::nan_value;
};
// From a window record (collectives/telemetry.hpp window_json); empty for null.
RunCovariates covariates_of(const nlohmann::json& window);

struct ArmTelemetry {
  std::size_t runs = 0, samples = 0;
  double sm_clock_mean_mhz = stats::nan_value, power_mean_w = stats::nan_value;
  double power_capped_share = stats::nan_value, memory_peak_mib = stats::nan_value;
};

struct TelemetryComparison {
  bool present = false;  // some run had samples
  std::string status;    // the sampler's description, or why telemetry was unavailable
  ArmTelemetry base, candidate;
  std::optional<stats::TTestResult> clock_diff;  // candidate - base SM clock (MHz), paired
  double clock_diff_wilcoxon_p = stats::nan_value;
  double reference_clock_mhz = stats::nan_value;  // mean over the runs: the normalisation point
  double raw_delta_mean = stats::nan_value;  // mean candidate - base over the same pairs
  std::optional<stats::PairedAnalysis> normalised;  // of value * run clock / reference clock
  std::size_t normalised_pairs = 0;
  std::vector<std::string> warnings;
};

// Share of power-capped samples above which the study warns.
inline constexpr double kPowerCappedWarning = 0.05;

// Per-pair covariates and values (base[i] with candidate[i]); pairs with a missing clock are
// left out of the clock test and of the normalised delta.
TelemetryComparison compare_telemetry(std::span<const RunCovariates> base, std::span<const RunCovariates> candidate,
                                      std::span<const double> base_values, std::span<const double> candidate_values,
                                      const stats::PairedOptions& options);

nlohmann::json telemetry_json(const TelemetryComparison& t);
// The comparison as a document section (reports/document.hpp): a table per arm (SM clock, power,
// power-capped share, peak memory, runs, samples) and notes (the paired clock difference, the
// clock-normalised delta in `unit`, warnings); without samples, a title and the reason.
reports::Section telemetry_section(const TelemetryComparison& t, const std::string& unit = "");

}  // namespace layerbench::ab
