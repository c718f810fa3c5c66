// The NVML telemetry source: libnvidia-ml.so.1 opened with dlopen at run time, so nothing
// links against the driver and binaries start (and say "unavailable") where there is none.
// Only the few NVML entry points below are used; their C signatures are NVML's stable ABI.
#include "collectives/telemetry.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cctype>

namespace layerbench::telemetry {
namespace {

using nvml_return = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
using nvml_device = struct nvml_device_opaque*;
struct nvml_memory {  // nvmlMemory_t (v1)
  unsigned long long total, free, used;
};
constexpr nvml_return kSuccess = 0;
constexpr int kClockSm = 1, kClockMem = 2;  // nvmlClockType_t
constexpr int kTemperatureGpu = 0;          // nvmlTemperatureSensors_t

// The loaded library: function pointers, nvmlInit_v2 done, nvmlShutdown + dlclose at the end.
class Nvml {
 public:
  static std::shared_ptr<Nvml> load(const std::string& library, std::string* why) {
    void* h = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      if (why) *why = fmt::format("{} not loadable ({})", library, ::dlerror());
      return nullptr;
    }
    auto lib = std::shared_ptr<Nvml>(new Nvml(h));
    if (!lib->resolve(why)) return nullptr;
    const nvml_return r = lib->init_();
    if (r != kSuccess) {
      if (why) *why = fmt::format("nvmlInit failed: {}", lib->error(r));
      lib->init_ok_ = false;
      return nullptr;
    }
    lib->init_ok_ = true;
    return lib;
  }
  ~Nvml() {
    if (init_ok_ && shutdown_) shutdown_();
    ::dlclose(handle_);
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  std::string error(nvml_return r) const {
    const char* s = error_string_ ? error_string_(r) : nullptr;
    return s ? s : fmt::format("NVML error {}", r);
  }

  nvml_return (*init_)() = nullptr;
  nvml_return (*shutdown_)() = nullptr;
  const char* (*error_string_)(nvml_return) = nullptr;
  nvml_return (*count_)(unsigned*) = nullptr;
  nvml_return (*by_index_)(unsigned, nvml_device*) = nullptr;
  nvml_return (*by_pci_)(const char*, nvml_device*) = nullptr;
  nvml_return (*name_)(nvml_device, char*, unsigned) = nullptr;
  nvml_return (*clock_)(nvml_device, int, unsigned*) = nullptr;
  nvml_return (*power_)(nvml_device, unsigned*) = nullptr;
  nvml_return (*power_limit_)(nvml_device, unsigned*) = nullptr;
  nvml_return (*temperature_)(nvml_device, int, unsigned*) = nullptr;
  nvml_return (*reasons_)(nvml_device, unsigned long long*) = nullptr;
  nvml_return (*memory_)(nvml_device, nvml_memory*) = nullptr;
  nvml_return (*energy_)(nvml_device, unsigned long long*) = nullptr;  // millijoules since the driver loaded

 private:
  explicit Nvml(void* h) : handle_(h) {}

  template <class F>
  bool sym(F& f, const char* name, std::string* why, bool required = true) {
    f = reinterpret_cast<F>(::dlsym(handle_, name));
    if (!f && required && why) *why = fmt::format("libnvidia-ml lacks {}", name);
    return f != nullptr || !required;
  }
  bool resolve(std::string* why) {
    bool ok = sym(init_, "nvmlInit_v2", why) && sym(shutdown_, "nvmlShutdown", why) &&
              sym(count_, "nvmlDeviceGetCount_v2", why) && sym(by_index_, "nvmlDeviceGetHandleByIndex_v2", why) &&
              sym(by_pci_, "nvmlDeviceGetHandleByPciBusId_v2", why) && sym(clock_, "nvmlDeviceGetClockInfo", why);
    sym(error_string_, "nvmlErrorString", why, false);
    sym(name_, "nvmlDeviceGetName", why, false);
    sym(power_, "nvmlDeviceGetPowerUsage", why, false);
    sym(power_limit_, "nvmlDeviceGetEnforcedPowerLimit", why, false);
    sym(temperature_, "nvmlDeviceGetTemperature", why, false);
    sym(memory_, "nvmlDeviceGetMemoryInfo", why, false);
    sym(energy_, "nvmlDeviceGetTotalEnergyConsumption", why, false);  // Volta and later
    // The throttle reasons were renamed "clock event reasons" in newer drivers; same ABI.
    sym(reasons_, "nvmlDeviceGetCurrentClocksEventReasons", why, false);
    if (!reasons_) sym(reasons_, "nvmlDeviceGetCurrentClocksThrottleReasons", why, false);
    return ok;
  }

  void* handle_;
  bool init_ok_ = false;
};

class NvmlSource final : public Source {
 public:
  NvmlSource(std::shared_ptr<Nvml> lib, std::vector<nvml_device> devs) : lib_(std::move(lib)), devs_(std::move(devs)) {
    for (auto d : devs_) {
      char name[96] = {0};
      names_.emplace_back(lib_->name_ && lib_->name_(d, name, sizeof name) == kSuccess ? name : "GPU");
      unsigned mw = 0;
      limits_.push_back(lib_->power_limit_ && lib_->power_limit_(d, &mw) == kSuccess ? mw / 1000.0 : kUnknown);
    }
  }
  std::string kind() const override { return "nvml"; }
  std::size_t devices() const override { return devs_.size(); }
  std::string device_name(std::size_t i) const override { return names_.at(i); }
  double power_limit_w(std::size_t i) const override { return limits_.at(i); }

  Reading read(std::size_t i) override {
    const nvml_device d = devs_[i];
    Reading r;
    unsigned v = 0;
    if (lib_->clock_(d, kClockSm, &v) == kSuccess) r.sm_clock_mhz = v;
    if (lib_->clock_(d, kClockMem, &v) == kSuccess) r.mem_clock_mhz = v;
    if (lib_->power_ && lib_->power_(d, &v) == kSuccess) r.power_w = v / 1000.0;
    if (lib_->temperature_ && lib_->temperature_(d, kTemperatureGpu, &v) == kSuccess) r.temperature_c = v;
    unsigned long long reasons = 0;
    if (lib_->reasons_ && lib_->reasons_(d, &reasons) == kSuccess) r.reasons = reasons;
    nvml_memory m{};
    if (lib_->memory_ && lib_->memory_(d, &m) == kSuccess) r.memory_used_mib = static_cast<double>(m.used) / (1 << 20);
    return r;
  }

  double energy_j(std::size_t i) const override {
    unsigned long long mj = 0;
    if (!lib_->energy_ || lib_->energy_(devs_.at(i), &mj) != kSuccess) return kUnknown;
    return static_cast<double>(mj) * 1e-3;
  }

 private:
  std::shared_ptr<Nvml> lib_;
  std::vector<nvml_device> devs_;
  std::vector<std::string> names_;
  std::vector<double> limits_;
};

// NVML matches bus ids in its own spelling ("00000000:19:00.0"); CUDA gives "0000:19:00.0".
std::string nvml_bus_id(const std::string& cuda_id) {
  std::string s = cuda_id;
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const auto colon = s.find(':');
  if (colon != std::string::npos && colon < 8) s.insert(0, 8 - colon, '0');
  return s;
}

}  // namespace

std::unique_ptr<Source> make_nvml_source(const std::vector<std::string>& pci_bus_ids, std::string* why,
                                         const std::string& library) {
  auto lib = Nvml::load(library, why);
  if (!lib) return nullptr;
  std::vector<nvml_device> devs;
  if (pci_bus_ids.empty()) {
    unsigned n = 0;
    if (const nvml_return r = lib->count_(&n); r != kSuccess) {
      if (why) *why = fmt::format("nvmlDeviceGetCount failed: {}", lib->error(r));
      return nullptr;
    }
    for (unsigned i = 0; i < n; ++i) {
      nvml_device d = nullptr;
      if (lib->by_index_(i, &d) == kSuccess) devs.push_back(d);
    }
  } else {
    for (const auto& id : pci_bus_ids) {
      nvml_device d = nullptr;
      if (const nvml_return r = lib->by_pci_(nvml_bus_id(id).c_str(), &d); r != kSuccess) {
        if (why) *why = fmt::format("no NVML device at PCI bus id {}: {}", id, lib->error(r));
        return nullptr;
      }
      devs.push_back(d);
    }
  }
  if (devs.empty()) {
    if (why) *why = "NVML reports no devices";
    return nullptr;
  }
  return std::make_unique<NvmlSource>(std::move(lib), std::move(devs));
}

}  // namespace layerbench::telemetry
