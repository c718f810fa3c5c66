#pragma once
// Injected delays at component boundaries, for what-if (critical-path) profiles: a layer calls
// its hook at the start and the end of every component; the hook may add time there — a spin
// kernel on the component's stream for device work, a host busy-wait for host work. With no
// hook installed a layer pays one pointer test per boundary.
#include "collectives/device.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace layerbench {

enum class Edge { begin, end };

class DelayHook {
 public:
  virtual ~DelayHook() = default;
  // `component` is the layer's name for it (the profile's component name); `s` its stream.
  virtual void at(std::string_view component, Edge edge, Stream s) = 0;
};

// Busy-waits the calling thread for `microseconds` on the steady clock (no sleep: a sleeping
// thread wakes late by tens of microseconds).
void host_spin(double microseconds);

// Where and how a delay is injected.
enum class DelayKind {
  device,  // Device::spin on the component's stream (a kernel; graph-capturable)
  host,    // host_spin on the calling thread
};

// The hook the what-if profiles install: one delay per (component, edge).
class InjectedDelays final : public DelayHook {
 public:
  explicit InjectedDelays(Device& dev) : dev_(dev) {}
  // Adds (or replaces) the delay of `component` at `edge`.
  void set(const std::string& component, Edge edge, DelayKind kind, double microseconds);
  void clear() { entries_.clear(); }
  void at(std::string_view component, Edge edge, Stream s) override;
  std::size_t injected() const { return injected_; }  // delays applied so far

 private:
  struct Entry {
    std::string component;
    Edge edge;
    DelayKind kind;
    double microseconds;
  };
  Device& dev_;
  std::vector<Entry> entries_;
  std::size_t injected_ = 0;
};

}  // namespace layerbench
