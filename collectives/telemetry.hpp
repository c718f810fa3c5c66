#pragma once
// GPU telemetry as covariates of a measurement: SM and memory clocks, power, temperature,
// throttle reasons and used device memory, read at a fixed period by a background thread.
//
// The readings come from a Source. The NVML source loads the driver's libnvidia-ml.so.1 at
// run time (dlopen), so binaries still start, and report "unavailable", where there is no
// driver; tests drive the sampler and the summaries with a scripted source.
//
// A summary covers the samples of one time window (a timed measurement, one run of an A/B
// arm). With a fixed period, the share of samples with a throttle reason is the share of the
// window's time spent under it.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace layerbench::telemetry {

inline constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

// NVML's clock event (throttle) reason bits.
inline constexpr std::uint64_t kReasonGpuIdle = 0x1;
inline constexpr std::uint64_t kReasonSwPowerCap = 0x4;
inline constexpr std::uint64_t kReasonHwSlowdown = 0x8;
inline constexpr std::uint64_t kReasonSwThermal = 0x20;
inline constexpr std::uint64_t kReasonHwThermal = 0x40;
inline constexpr std::uint64_t kReasonHwPowerBrake = 0x80;
inline constexpr std::uint64_t kPowerCapReasons = kReasonSwPowerCap | kReasonHwPowerBrake;
inline constexpr std::uint64_t kThermalReasons = kReasonSwThermal | kReasonHwThermal | kReasonHwSlowdown;

// Names of the reason bits that are set ("sw_power_cap", ...), for messages.
std::vector<std::string> reason_names(std::uint64_t reasons);

// One device at one instant. A quantity the device does not report stays kUnknown.
struct Reading {
  double sm_clock_mhz = kUnknown;
  double mem_clock_mhz = kUnknown;
  double power_w = kUnknown;
  double temperature_c = kUnknown;
  double memory_used_mib = kUnknown;
  std::optional<std::uint64_t> reasons;  // throttle reason bits, when the device reports them
};

struct Sample {
  double t = 0;     // seconds on the steady clock (Sampler::now())
  int device = 0;   // index into the source's devices
  Reading reading;
};

// Where readings come from. read() is called from the sampler thread only.
class Source {
 public:
  virtual ~Source() = default;
  virtual std::string kind() const = 0;  // "nvml", or a test's name
  virtual std::size_t devices() const = 0;
  virtual std::string device_name(std::size_t i) const = 0;
  virtual double power_limit_w(std::size_t /*i*/) const { return kUnknown; }
  virtual Reading read(std::size_t i) = 0;
  // The device's cumulative energy counter in joules (NVML's total energy consumption since the
  // driver loaded), kUnknown where there is none. Called from the measuring thread, beside the
  // sampler thread's read(): implementations must be thread-safe (NVML is).
  virtual double energy_j(std::size_t /*i*/) const { return kUnknown; }
};

// The NVML source. `pci_bus_ids` selects devices (as CUDA names them, "0000:19:00.0");
// empty = every device NVML sees. Returns nullptr and sets `why` when the library, the driver
// or a device is unavailable. `library` is the file handed to dlopen.
std::unique_ptr<Source> make_nvml_source(const std::vector<std::string>& pci_bus_ids, std::string* why,
                                         const std::string& library = "libnvidia-ml.so.1");

// Statistics of one window of one device.
struct Summary {
  std::size_t samples = 0;
  double sm_clock_mean_mhz = kUnknown, sm_clock_min_mhz = kUnknown, sm_clock_max_mhz = kUnknown;
  double mem_clock_mean_mhz = kUnknown;
  double power_mean_w = kUnknown, power_max_w = kUnknown;
  double temperature_max_c = kUnknown;
  double memory_used_peak_mib = kUnknown;
  // Shares of the samples that report reasons: power cap (software cap or hardware power
  // brake), thermal or hardware slowdown, any reason other than idle.
  double power_capped_share = kUnknown, thermal_share = kUnknown, throttled_share = kUnknown;
  std::uint64_t reasons_seen = 0;  // union of the reason bits over the window

  nlohmann::json to_json() const;  // unknowns as null
};

// Summary of the samples of `device` (all of `samples` when device < 0). A sample counts as
// power-capped when a power-cap reason is set and, where the enforced limit is known, the
// sample's power is within kPowerCapBand of it: the driver also reports the software power-cap
// reason while it manages clocks far below the limit (seen at 160-240 W of 700 W on an H200 in
// short runs), which is not the device running at its cap.
inline constexpr double kPowerCapBand = 0.9;
Summary summarize(std::span<const Sample> samples, int device = -1, double power_limit_w = kUnknown);
// Several devices' summaries of one window as one: mean of the clock and power means, lowest
// minimum clock, highest maxima and peaks, largest shares; samples summed.
Summary combine(std::span<const Summary> per_device);

// A window's record for result files: {"samples", "combined": combine(...), "devices": [...]}.
nlohmann::json window_json(std::span<const Summary> per_device);

// Reads every device of a source at a fixed period on a background thread, keeping the
// samples (timestamped) until the sampler is destroyed.
class Sampler {
 public:
  Sampler(std::unique_ptr<Source> source, std::chrono::microseconds period);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  static double now();  // seconds on the steady clock
  const Source& source() const { return *source_; }
  std::chrono::microseconds period() const { return period_; }

  // The samples taken in [t0, t1].
  std::vector<Sample> between(double t0, double t1) const;
  // Per-device summaries of [t0, t1] (one per source device).
  std::vector<Summary> summaries(double t0, double t1) const;
  std::size_t size() const;
  // Waits until a sample later than `t` exists (at most `timeout`); true when it does.
  bool wait_past(double t, std::chrono::milliseconds timeout) const;
  // Description of the source for result files: device names, power limits, period.
  nlohmann::json describe() const;
  // The sum of the source's energy counters (J), read now; kUnknown when any is unknown. The
  // difference of two readings is the energy of the devices between them.
  double energy_j() const;

 private:
  void loop();

  std::unique_ptr<Source> source_;
  std::chrono::microseconds period_;
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  std::deque<Sample> samples_;
  bool stop_ = false;
  std::thread thread_;
};

// A sampler on the GPUs with these PCI bus ids, or nullptr with `why` set.
std::unique_ptr<Sampler> make_gpu_sampler(const std::vector<std::string>& pci_bus_ids,
                                          std::chrono::microseconds period, std::string* why);

}  // namespace layerbench::telemetry
