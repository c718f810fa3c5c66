// GPU telemetry: the summaries of a window (scripted samples), the sampler thread (a scripted
// source), and NVML's absence reported as "unavailable" rather than a failure.
#include "collectives/telemetry.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

namespace layerbench::telemetry {
namespace {

Sample at(double t, int device, double sm, double power, std::optional<std::uint64_t> reasons, double used = kUnknown) {
  Sample s;
  s.t = t;
  s.device = device;
  s.reading.sm_clock_mhz = sm;
  s.reading.mem_clock_mhz = 2619;
  s.reading.power_w = power;
  s.reading.temperature_c = 40 + t;
  s.reading.memory_used_mib = used;
  s.reading.reasons = reasons;
  return s;
}

TEST(TelemetrySummary, MeansSharesAndPeaks) {
  const std::vector<Sample> v = {at(0, 0, 1980, 500, 0, 1000), at(1, 0, 1770, 690, kReasonSwPowerCap, 3000),
                                 at(2, 0, 1545, 700, kReasonSwPowerCap | kReasonSwThermal, 2000),
                                 at(3, 0, 1905, 650, kReasonGpuIdle, kUnknown)};
  const Summary s = summarize(v);
  EXPECT_EQ(s.samples, 4u);
  EXPECT_DOUBLE_EQ(s.sm_clock_mean_mhz, (1980 + 1770 + 1545 + 1905) / 4.0);
  EXPECT_DOUBLE_EQ(s.sm_clock_min_mhz, 1545);
  EXPECT_DOUBLE_EQ(s.sm_clock_max_mhz, 1980);
  EXPECT_DOUBLE_EQ(s.power_max_w, 700);
  EXPECT_DOUBLE_EQ(s.power_mean_w, (500 + 690 + 700 + 650) / 4.0);
  EXPECT_DOUBLE_EQ(s.temperature_max_c, 43);
  EXPECT_DOUBLE_EQ(s.memory_used_peak_mib, 3000);  // the unknown reading is skipped
  EXPECT_DOUBLE_EQ(s.power_capped_share, 0.5);
  EXPECT_DOUBLE_EQ(s.thermal_share, 0.25);
  EXPECT_DOUBLE_EQ(s.throttled_share, 0.5);  // idle alone is not throttling
  const auto names = reason_names(s.reasons_seen);
  EXPECT_NE(std::find(names.begin(), names.end(), "sw_power_cap"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "gpu_idle"), names.end());
}

// The software power-cap reason far below the enforced limit (the driver managing clocks in a
// lightly loaded run) is not a power-capped sample; within 10% of the limit it is.
TEST(TelemetrySummary, PowerCappedOnlyNearTheLimit) {
  const std::vector<Sample> v = {at(0, 0, 1980, 180, kReasonSwPowerCap, 1000), at(1, 0, 1500, 690, kReasonSwPowerCap, 1000),
                                 at(2, 0, 1500, 640, kReasonSwPowerCap, 1000), at(3, 0, 1980, 200, 0, 1000)};
  EXPECT_DOUBLE_EQ(summarize(v, 0, 700).power_capped_share, 0.5);   // 690 W and 640 W are within 10% of 700 W
  EXPECT_DOUBLE_EQ(summarize(v, 0, 1000).power_capped_share, 0.0);  // none within 10% of 1000 W
  EXPECT_DOUBLE_EQ(summarize(v, 0).power_capped_share, 0.75);       // limit unknown: the reason alone
}

TEST(TelemetrySummary, UnknownsStayUnknownAndJsonIsNull) {
  const std::vector<Sample> v = {at(0, 0, kUnknown, kUnknown, std::nullopt), at(1, 1, 1500, 300, 0)};
  const Summary s0 = summarize(v, 0);
  EXPECT_EQ(s0.samples, 1u);
  EXPECT_TRUE(std::isnan(s0.sm_clock_mean_mhz));
  EXPECT_TRUE(std::isnan(s0.power_capped_share));  // no sample reported reasons
  const auto j = s0.to_json();
  EXPECT_TRUE(j["sm_clock_mean_mhz"].is_null());
  EXPECT_TRUE(j["power_capped_share"].is_null());
  EXPECT_EQ(j["samples"], 1);
  const Summary s1 = summarize(v, 1);
  EXPECT_DOUBLE_EQ(s1.sm_clock_mean_mhz, 1500);
  EXPECT_DOUBLE_EQ(s1.power_capped_share, 0);
  EXPECT_EQ(summarize({}, 0).samples, 0u);
}

TEST(TelemetrySummary, CombineDevices) {
  const std::vector<Sample> v = {at(0, 0, 1800, 600, kReasonSwPowerCap, 100), at(0, 1, 1600, 400, 0, 900),
                                 at(1, 0, 1800, 650, 0, 100), at(1, 1, 1400, 420, 0, 800)};
  const std::vector<Summary> per = {summarize(v, 0), summarize(v, 1)};
  const Summary c = combine(per);
  EXPECT_EQ(c.samples, 4u);
  EXPECT_DOUBLE_EQ(c.sm_clock_mean_mhz, (1800 + 1500) / 2.0);
  EXPECT_DOUBLE_EQ(c.sm_clock_min_mhz, 1400);
  EXPECT_DOUBLE_EQ(c.power_max_w, 650);
  EXPECT_DOUBLE_EQ(c.memory_used_peak_mib, 900);
  EXPECT_DOUBLE_EQ(c.power_capped_share, 0.5);
}

// A scripted device: the SM clock counts reads, every third read reports the power cap.
class CountingSource final : public Source {
 public:
  std::string kind() const override { return "scripted"; }
  std::size_t devices() const override { return 2; }
  std::string device_name(std::size_t i) const override { return "dev" + std::to_string(i); }
  Reading read(std::size_t i) override {
    Reading r;
    const auto k = reads_[i]++;
    r.sm_clock_mhz = 1000.0 + static_cast<double>(k);
    r.power_w = 100.0 * static_cast<double>(i + 1);
    r.reasons = k % 3 == 0 ? kReasonSwPowerCap : 0;
    return r;
  }

 private:
  std::atomic<std::uint64_t> reads_[2] = {0, 0};
};

TEST(TelemetrySampler, SamplesEveryDeviceInWindows) {
  Sampler sampler(std::make_unique<CountingSource>(), std::chrono::milliseconds(1));
  // Two samples in the window whatever the scheduler does: one past t0 + 20 ms, then one past the
  // moment that one was seen (the waits are watchdogs of 60 s, not measurements).
  const double t0 = Sampler::now();
  ASSERT_TRUE(sampler.wait_past(t0 + 0.02, std::chrono::seconds(60)));
  ASSERT_TRUE(sampler.wait_past(Sampler::now(), std::chrono::seconds(60)));
  const double t1 = Sampler::now();
  const auto window = sampler.between(t0, t1);
  ASSERT_GE(window.size(), 2u);
  for (const auto& s : window) {
    EXPECT_GE(s.t, t0);
    EXPECT_LE(s.t, t1);
  }
  const auto sums = sampler.summaries(t0, t1);
  ASSERT_EQ(sums.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_GE(sums[i].samples, 1u);
    EXPECT_DOUBLE_EQ(sums[i].power_mean_w, 100.0 * static_cast<double>(i + 1));
    EXPECT_GE(sums[i].sm_clock_min_mhz, 1000.0);
  }
  // Later windows see later reads: the scripted clock only grows.
  const double t2 = Sampler::now();
  ASSERT_TRUE(sampler.wait_past(t2 + 0.005, std::chrono::seconds(60)));
  const auto later = sampler.summaries(t2, Sampler::now());
  EXPECT_GT(later[0].sm_clock_min_mhz, sums[0].sm_clock_max_mhz - 1);
  const auto d = sampler.describe();
  EXPECT_EQ(d["source"], "scripted");
  EXPECT_EQ(d["devices"].size(), 2u);
  EXPECT_TRUE(d["devices"][0]["power_limit_w"].is_null());
  EXPECT_EQ(d["energy_counter"], "none");
  EXPECT_TRUE(std::isnan(sampler.energy_j()));  // no counter: unknown, never zero
}

// A source with energy counters: the sampler sums the devices; one unknown device makes the sum unknown.
class EnergySource final : public Source {
 public:
  explicit EnergySource(bool second_known) : second_known_(second_known) {}
  std::string kind() const override { return "energy"; }
  std::size_t devices() const override { return 2; }
  std::string device_name(std::size_t i) const override { return "dev" + std::to_string(i); }
  Reading read(std::size_t) override { return {}; }
  double energy_j(std::size_t i) const override {
    if (i == 1 && !second_known_) return kUnknown;
    return 1000.0 * static_cast<double>(i + 1) + static_cast<double>(calls_++);
  }

 private:
  bool second_known_;
  mutable std::atomic<int> calls_{0};
};

TEST(TelemetrySampler, EnergyIsTheSumOfTheCountersOrUnknown) {
  Sampler both(std::make_unique<EnergySource>(true), std::chrono::milliseconds(50));
  const double e0 = both.energy_j(), e1 = both.energy_j();
  EXPECT_DOUBLE_EQ(e0, 1000.0 + 2000.0 + 0 + 1);  // two reads, one per device
  EXPECT_DOUBLE_EQ(e1 - e0, 4.0);                 // the scripted counters move by one per read
  EXPECT_EQ(both.describe()["energy_counter"], "total energy consumption (J)");
  Sampler one(std::make_unique<EnergySource>(false), std::chrono::milliseconds(50));
  EXPECT_TRUE(std::isnan(one.energy_j()));
}

TEST(TelemetryNvml, MissingLibraryIsUnavailable) {
  std::string why;
  auto src = make_nvml_source({}, &why, "libnvidia-ml-not-installed.so.1");
  EXPECT_EQ(src, nullptr);
  EXPECT_NE(why.find("not loadable"), std::string::npos) << why;
}

TEST(TelemetryNvml, DefaultLibraryEitherWorksOrSaysWhy) {
  std::string why;
  auto sampler = make_gpu_sampler({}, std::chrono::milliseconds(5), &why);
  if (!sampler) {
    EXPECT_FALSE(why.empty());
    GTEST_SKIP() << "GPU telemetry unavailable here: " << why;
  }
  ASSERT_GE(sampler->source().devices(), 1u);
  const double t0 = Sampler::now();
  ASSERT_TRUE(sampler->wait_past(t0, std::chrono::seconds(5)));
  const auto s = sampler->summaries(t0 - 1, Sampler::now());
  EXPECT_GE(s[0].samples, 1u);
  EXPECT_GT(s[0].sm_clock_mean_mhz, 0);
}

}  // namespace
}  // namespace layerbench::telemetry
