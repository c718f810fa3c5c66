#include "collectives/delay.hpp"
#include "collectives/device.hpp"
#include "collectives/error.hpp"
#include "collectives/watchdog.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>

namespace layerbench {
namespace {

class HostTimer final : public Timer {
 public:
  void start(Stream) override { t0_ = clock::now(); }
  void stop(Stream) override { t1_ = clock::now(); }
  double elapsed_ms() override { return std::chrono::duration<double, std::milli>(t1_ - t0_).count(); }
  std::int64_t elapsed_ns() override { return std::chrono::duration_cast<std::chrono::nanoseconds>(t1_ - t0_).count(); }
  std::int64_t start_steady_ns() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t0_.time_since_epoch()).count();
  }
  std::int64_t start_since_ns(Timer& origin) override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t0_ - dynamic_cast<HostTimer&>(origin).t0_).count();
  }

 private:
  using clock = std::chrono::steady_clock;
  clock::time_point t0_{}, t1_{};
};

class HostEvent final : public Event {
 public:
  void record(Stream) override {}
  void wait(Stream) override {}
  void synchronize() override {}
};

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto pos = line.find(':');
      if (pos != std::string::npos) return line.substr(pos + 2);
    }
  }
  return "cpu";
}

class HostGraph final : public Graph {
 public:
  explicit HostGraph(std::function<void(Stream)> body) : body_(std::move(body)) {}
  void launch(Stream s) override { body_(s); }

 private:
  std::function<void(Stream)> body_;
};

class HostDevice final : public Device {
 public:
  Backend backend() const override { return Backend::host; }
  std::string name() const override { return cpu_model(); }
  int ordinal() const override { return -1; }
  void spin(Stream, double microseconds) override { host_spin(microseconds); }

  Buffer alloc(std::size_t bytes) override {
    constexpr std::size_t kAlign = 256;
    const std::size_t n = bytes == 0 ? kAlign : (bytes + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, n);
    if (!p) throw std::bad_alloc();
    return Buffer(p, bytes, [](void* q) { std::free(q); });
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes, Stream) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void copy_from_host(void* dst, const void* src, std::size_t bytes, Stream) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void copy(void* dst, const void* src, std::size_t bytes, Stream) override {
    if (bytes) std::memmove(dst, src, bytes);
  }
  void memset(void* dst, int value, std::size_t bytes, Stream) override {
    if (bytes) std::memset(dst, value, bytes);
  }
  Stream compute_stream() override { return {}; }
  Stream comm_stream() override { return {}; }
  void synchronize(Stream) override {}
  void synchronize_all() override {}
  std::unique_ptr<Timer> make_timer() override { return std::make_unique<HostTimer>(); }
  std::unique_ptr<Event> make_event() override { return std::make_unique<HostEvent>(); }
  std::unique_ptr<Graph> capture(Stream, const std::function<void(Stream)>& body) override {
    return std::make_unique<HostGraph>(body);
  }
};

}  // namespace

std::unique_ptr<Device> make_host_device() { return std::make_unique<HostDevice>(); }

#if !defined(LAYERBENCH_HAVE_CUDA)
std::unique_ptr<Device> make_cuda_device(int) {
  throw UsageError("this build of layerbench has no CUDA backend (configure with nvcc present)");
}
int cuda_device_count() { return 0; }
void set_wait_timeout(Device&, double seconds) { watchdog::set_timeout(seconds); }
#endif

}  // namespace layerbench
