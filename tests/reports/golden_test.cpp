// Golden-output tests of the renderer: fixed measurements (declared roles and work, fixed
// samples) rendered as the composition table, its warnings, the numeric CSV, the derived
// estimates and the rates, compared byte for byte with tests/reports/golden/. After an intended
// change of the output, regenerate with LB_UPDATE_GOLDEN=1 and review the diff.
#include "reports/derived.hpp"
#include "reports/profile.hpp"
#include "reports/result.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace lr = layerbench::reports;

namespace {

void expect_golden(const std::string& name, const std::string& text) {
  const std::string path = std::string(LB_REPORTS_GOLDEN) + "/" + name;
  if (std::getenv("LB_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << text;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path << " missing (LB_UPDATE_GOLDEN=1 writes it)";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), text) << "differs from " << path;
}

lr::Measurement make(const std::string& name, lr::Role role, const std::string& parent, std::vector<double> samples,
                     lr::Work work = {}, int instances = 1) {
  lr::Measurement m;
  m.name = name;
  m.group = "sp";
  m.role = role;
  m.parent = parent;
  m.samples_ms = std::move(samples);
  m.work = work;
  m.instances = instances;
  return m;
}

// A layer of 8 ms: a part of 0.0154 ms (µs range), nested parts of the routed branch that
// exceed it (timed alone), a collective with its bus factor, a stack and a reference.
std::vector<lr::Measurement> layer() {
  using lr::Role;
  return {
      make("whole_layer", Role::total, "", {8.0, 8.1, 7.9, 8.2, 8.05}),
      make("pre_norm", Role::part, "whole_layer", {0.0154, 0.0150, 0.0160, 0.0152, 0.0155}),
      make("routed_branch", Role::part, "whole_layer", {6.0, 6.1, 5.9, 6.05, 6.02}),
      make("local_expert_compute", Role::part, "routed_branch", {5.5, 5.6, 5.4, 5.55, 5.52},
           {.flops = 2.0e12}),
      make("ep_dispatch", Role::communication, "routed_branch", {0.9, 0.95, 0.85, 0.92, 0.91},
           {.bytes = 1.0e8, .bus_factor = 0.5}),
      make("shared_branch", Role::part, "whole_layer", {1.2, 1.25, 1.15, 1.22, 1.21}, {.flops = 7.0e11}),
      make("seq_size_exchange", Role::probe, "", {0.0163, 0.0149, 0.0221, 0.0160, 0.0158},
           {.bytes = 16, .bus_factor = 0.5}),
      make("stack_reused_split_sizes", Role::stack, "", {290.0, 291.0, 289.0, 290.5, 290.2}, {}, 36),
      make("dense_gemm_reference", Role::reference, "", {1.50, 1.52, 1.49, 1.51, 1.50}, {.flops = 1.1e12}),
  };
}

}  // namespace

// The "parts sum to more than their parent" warning fires only beyond the noise: parts at 100.4%
// of a parent whose samples spread by +-2% stay silent; the same parts 6% over it warn, with the
// excess's interval.
TEST(Composition, PartsOverTheParentWarnOnlyBeyondTheNoise) {
  using lr::Role;
  auto with_parts = [](double scale) {
    std::vector<lr::Measurement> v = {make("whole_layer", Role::total, "", {8.0, 8.16, 7.84, 8.1, 7.9, 8.05, 7.95})};
    v.push_back(make("a", Role::part, "whole_layer", {5.0 * scale, 5.1 * scale, 4.9 * scale, 5.05 * scale, 4.95 * scale}));
    v.push_back(make("b", Role::part, "whole_layer", {3.03 * scale, 3.1 * scale, 2.96 * scale, 3.06 * scale, 3.0 * scale}));
    return v;
  };
  const auto quiet = lr::composition(with_parts(1.0), "sp", "t");  // 8.03 of 8.0 ms
  EXPECT_TRUE(quiet.warnings.empty()) << quiet.warnings.front();
  const auto loud = lr::composition(with_parts(1.06), "sp", "t");
  ASSERT_EQ(loud.warnings.size(), 1u);
  EXPECT_NE(loud.warnings[0].find("an excess of"), std::string::npos) << loud.warnings[0];
  EXPECT_NE(loud.warnings[0].find("95% CI"), std::string::npos) << loud.warnings[0];
}

// A ratio to a reference timed in the same iterations: the clocks move both sides of a pair, so
// the paired ratio is exact and narrow where the ratio of separately resampled medians is wide.
TEST(Derived, PairedRateRatioCancelsTheClock) {
  std::vector<double> a, ref;
  for (int i = 0; i < 20; ++i) {
    const double clock = 1.0 + 0.2 * ((i * 7) % 11) / 10.0;  // iteration i runs 1.0-1.2x slower
    a.push_back(2.0 * clock);
    ref.push_back(1.0 * clock);
  }
  auto m = make("local_expert_compute", lr::Role::part, "", a, {.flops = 1.0e12});
  const auto dense = make("dense_gemm_reference", lr::Role::reference, "", ref, {.flops = 1.0e12});
  const auto unpaired = lr::rate_ratio_to_reference(m, 1.0e12, dense, 1.0e12, 0.95);
  m.reference = "dense_gemm_reference";
  m.reference_samples_ms = ref;
  const auto paired = lr::rate_ratio_to_reference(m, 1.0e12, dense, 1.0e12, 0.95);
  EXPECT_DOUBLE_EQ(paired.value, 0.5);
  EXPECT_NEAR(paired.ci.low, 0.5, 1e-12);
  EXPECT_NEAR(paired.ci.high, 0.5, 1e-12);
  EXPECT_NE(paired.method.find("per-iteration"), std::string::npos);
  EXPECT_GT(unpaired.ci.high - unpaired.ci.low, 0.05);  // the clock spread lands in the interval
  m.reference_samples_ms.pop_back();  // misaligned: not a paired measurement
  EXPECT_FALSE(lr::paired_rate_ratio(m, 1.0e12, 1.0e12, 0.95).valid);
}

TEST(Golden, CompositionMarkdownAndWarnings) {
  const auto c = lr::composition(layer(), "sp", "Component profile");
  std::string text = lr::to_markdown(c.table);
  for (const auto& w : c.warnings) text += "- Warning: " + w + "\n";
  expect_golden("composition.md", text);
}

TEST(Golden, NumericCsv) { expect_golden("results.csv", lr::results_to_csv(layer())); }

TEST(Golden, DerivedEstimates) {
  const auto ms = layer();
  std::string text;
  text += "exchange x 36: " + lr::scaled_median(ms[6], 36, 0.95).text() + "\n";
  text += "routed - experts: " + lr::difference_of_medians(ms[2], ms[3], 0.95).text() + "\n";
  text += "pre_norm - exchange: " + lr::difference_of_medians(ms[1], ms[6], 0.95).text() + "\n";
  text += "experts / dense rate: " + lr::rate_ratio(ms[3], 2.0e12, ms[8], 1.1e12, 0.95).text() + "\n";
  text += "stack per instance / layer: " + lr::ratio_of_medians(ms[7], ms[0], 0.95).text() + "\n";
  for (const auto& m : ms) text += m.name + ": " + lr::rate_text(m) + "\n";
  expect_golden("derived.txt", text);
}

TEST(Golden, UnitsNeverPrintNonZeroAsZero) {
  std::string text;
  for (double v : {0.0, 1e-7, 0.0004, 0.0154, 0.999, 1.0, 12.688, 999.9, 1000.0, 323103.0})
    text += lr::fmt_time(v) + " | " + lr::fmt_quantity(v * 1e12, lr::Unit::flop_per_s) + " | " +
            lr::fmt_quantity(v * 1e9, lr::Unit::bytes_per_s) + " | " + lr::fmt_share(v / 1000) + " | " +
            lr::fmt_quantity_signed(-v, lr::Unit::ms) + "\n";
  expect_golden("units.txt", text);
}
