#include "collectives/telemetry.hpp"
#include "common/json_number.hpp"

#include <algorithm>
#include <cmath>

namespace layerbench::telemetry {

std::vector<std::string> reason_names(std::uint64_t reasons) {
  static const std::pair<std::uint64_t, const char*> names[] = {
      {kReasonGpuIdle, "gpu_idle"},          {0x2, "applications_clocks"},
      {kReasonSwPowerCap, "sw_power_cap"},   {kReasonHwSlowdown, "hw_slowdown"},
      {0x10, "sync_boost"},                  {kReasonSwThermal, "sw_thermal_slowdown"},
      {kReasonHwThermal, "hw_thermal_slowdown"}, {kReasonHwPowerBrake, "hw_power_brake"},
      {0x100, "display_clocks"}};
  std::vector<std::string> out;
  std::uint64_t known = 0;
  for (const auto& [bit, name] : names) {
    known |= bit;
    if (reasons & bit) out.emplace_back(name);
  }
  if (reasons & ~known) out.push_back("other");
  return out;
}

namespace {

using nlohmann::json;

// Running mean / min / max of the finite values only.
struct Acc {
  double sum = 0, lo = kUnknown, hi = kUnknown;
  std::size_t n = 0;
  void add(double v) {
    if (!std::isfinite(v)) return;
    sum += v;
    lo = n == 0 ? v : std::min(lo, v);
    hi = n == 0 ? v : std::max(hi, v);
    ++n;
  }
  double mean() const { return n ? sum / static_cast<double>(n) : kUnknown; }
};

double max_known(double a, double b) {
  if (!std::isfinite(a)) return b;
  if (!std::isfinite(b)) return a;
  return std::max(a, b);
}
double min_known(double a, double b) {
  if (!std::isfinite(a)) return b;
  if (!std::isfinite(b)) return a;
  return std::min(a, b);
}

}  // namespace

json Summary::to_json() const {
  return {{"samples", samples},
          {"sm_clock_mean_mhz", finite_or_null(sm_clock_mean_mhz)},
          {"sm_clock_min_mhz", finite_or_null(sm_clock_min_mhz)},
          {"sm_clock_max_mhz", finite_or_null(sm_clock_max_mhz)},
          {"mem_clock_mean_mhz", finite_or_null(mem_clock_mean_mhz)},
          {"power_mean_w", finite_or_null(power_mean_w)},
          {"power_max_w", finite_or_null(power_max_w)},
          {"temperature_max_c", finite_or_null(temperature_max_c)},
          {"memory_used_peak_mib", finite_or_null(memory_used_peak_mib)},
          {"power_capped_share", finite_or_null(power_capped_share)},
          {"thermal_share", finite_or_null(thermal_share)},
          {"throttled_share", finite_or_null(throttled_share)},
          {"reasons_seen", reason_names(reasons_seen)}};
}

Summary summarize(std::span<const Sample> samples, int device, double power_limit_w) {
  Acc sm, mem, power, temp, used;
  std::size_t with_reasons = 0, capped = 0, thermal = 0, throttled = 0;
  Summary s;
  for (const auto& x : samples) {
    if (device >= 0 && x.device != device) continue;
    ++s.samples;
    const auto& r = x.reading;
    sm.add(r.sm_clock_mhz);
    mem.add(r.mem_clock_mhz);
    power.add(r.power_w);
    temp.add(r.temperature_c);
    used.add(r.memory_used_mib);
    if (r.reasons) {
      ++with_reasons;
      s.reasons_seen |= *r.reasons;
      const bool near_limit = !(std::isfinite(power_limit_w) && power_limit_w > 0 && std::isfinite(r.power_w)) ||
                              r.power_w >= kPowerCapBand * power_limit_w;
      capped += (*r.reasons & kPowerCapReasons) != 0 && near_limit;
      thermal += (*r.reasons & kThermalReasons) != 0;
      throttled += (*r.reasons & ~kReasonGpuIdle) != 0;
    }
  }
  s.sm_clock_mean_mhz = sm.mean();
  s.sm_clock_min_mhz = sm.lo;
  s.sm_clock_max_mhz = sm.hi;
  s.mem_clock_mean_mhz = mem.mean();
  s.power_mean_w = power.mean();
  s.power_max_w = power.hi;
  s.temperature_max_c = temp.hi;
  s.memory_used_peak_mib = used.hi;
  if (with_reasons > 0) {
    const double n = static_cast<double>(with_reasons);
    s.power_capped_share = static_cast<double>(capped) / n;
    s.thermal_share = static_cast<double>(thermal) / n;
    s.throttled_share = static_cast<double>(throttled) / n;
  }
  return s;
}

Summary combine(std::span<const Summary> per_device) {
  Summary out;
  Acc sm, mem, power;
  for (const auto& d : per_device) {
    out.samples += d.samples;
    sm.add(d.sm_clock_mean_mhz);
    mem.add(d.mem_clock_mean_mhz);
    power.add(d.power_mean_w);
    out.sm_clock_min_mhz = min_known(out.sm_clock_min_mhz, d.sm_clock_min_mhz);
    out.sm_clock_max_mhz = max_known(out.sm_clock_max_mhz, d.sm_clock_max_mhz);
    out.power_max_w = max_known(out.power_max_w, d.power_max_w);
    out.temperature_max_c = max_known(out.temperature_max_c, d.temperature_max_c);
    out.memory_used_peak_mib = max_known(out.memory_used_peak_mib, d.memory_used_peak_mib);
    out.power_capped_share = max_known(out.power_capped_share, d.power_capped_share);
    out.thermal_share = max_known(out.thermal_share, d.thermal_share);
    out.throttled_share = max_known(out.throttled_share, d.throttled_share);
    out.reasons_seen |= d.reasons_seen;
  }
  out.sm_clock_mean_mhz = sm.mean();
  out.mem_clock_mean_mhz = mem.mean();
  out.power_mean_w = power.mean();
  return out;
}

json window_json(std::span<const Summary> per_device) {
  json devs = json::array();
  for (const auto& d : per_device) devs.push_back(d.to_json());
  const Summary c = combine(per_device);
  return {{"samples", c.samples}, {"combined", c.to_json()}, {"devices", devs}};
}

// ---- sampler -----------------------------------------------------------------------------

double Sampler::now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Sampler::Sampler(std::unique_ptr<Source> source, std::chrono::microseconds period)
    : source_(std::move(source)), period_(std::max(period, std::chrono::microseconds(100))) {
  thread_ = std::thread([this] { loop(); });
}

Sampler::~Sampler() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Sampler::loop() {
  auto next = std::chrono::steady_clock::now();
  const std::size_t n = source_->devices();
  std::vector<Sample> batch(n);
  for (;;) {
    for (std::size_t i = 0; i < n; ++i) {
      batch[i].reading = source_->read(i);
      batch[i].t = now();
      batch[i].device = static_cast<int>(i);
    }
    {
      std::unique_lock lock(mutex_);
      samples_.insert(samples_.end(), batch.begin(), batch.end());
      cv_.notify_all();
      // Fixed period (not fixed gaps): a slow read does not stretch the schedule; a stall
      // longer than a period skips the missed ticks instead of bursting.
      next += period_;
      const auto t = std::chrono::steady_clock::now();
      if (next < t) next = t;
      if (cv_.wait_until(lock, next, [this] { return stop_; })) return;
    }
  }
}

std::vector<Sample> Sampler::between(double t0, double t1) const {
  std::lock_guard lock(mutex_);
  auto lo = std::lower_bound(samples_.begin(), samples_.end(), t0,
                             [](const Sample& s, double t) { return s.t < t; });
  std::vector<Sample> out;
  for (auto it = lo; it != samples_.end() && it->t <= t1; ++it) out.push_back(*it);
  return out;
}

std::vector<Summary> Sampler::summaries(double t0, double t1) const {
  const auto window = between(t0, t1);
  std::vector<Summary> out;
  for (std::size_t i = 0; i < source_->devices(); ++i)
    out.push_back(summarize(window, static_cast<int>(i), source_->power_limit_w(i)));
  return out;
}

std::size_t Sampler::size() const {
  std::lock_guard lock(mutex_);
  return samples_.size();
}

bool Sampler::wait_past(double t, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, timeout, [&] { return !samples_.empty() && samples_.back().t > t; });
}

nlohmann::json Sampler::describe() const {
  json devs = json::array();
  for (std::size_t i = 0; i < source_->devices(); ++i)
    devs.push_back({{"name", source_->device_name(i)}, {"power_limit_w", finite_or_null(source_->power_limit_w(i))}});
  return {{"source", source_->kind()},
          {"period_ms", static_cast<double>(period_.count()) / 1000.0},
          {"devices", devs},
          {"energy_counter", std::isfinite(energy_j()) ? "total energy consumption (J)" : "none"}};
}

double Sampler::energy_j() const {
  double sum = 0;
  for (std::size_t i = 0; i < source_->devices(); ++i) sum += source_->energy_j(i);  // NaN propagates
  return source_->devices() ? sum : kUnknown;
}

std::unique_ptr<Sampler> make_gpu_sampler(const std::vector<std::string>& pci_bus_ids,
                                          std::chrono::microseconds period, std::string* why) {
  auto src = make_nvml_source(pci_bus_ids, why);
  if (!src) return nullptr;
  return std::make_unique<Sampler>(std::move(src), period);
}

}  // namespace layerbench::telemetry
