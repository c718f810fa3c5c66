#include "collectives/delay.hpp"

#include <chrono>

namespace layerbench {

void host_spin(double microseconds) {
  using clock = std::chrono::steady_clock;
  const auto until = clock::now() + std::chrono::duration_cast<clock::duration>(
                                        std::chrono::duration<double, std::micro>(microseconds));
  while (clock::now() < until) {
  }
}

void InjectedDelays::set(const std::string& component, Edge edge, DelayKind kind, double microseconds) {
  for (auto& e : entries_) {
    if (e.component == component && e.edge == edge) {
      e.kind = kind;
      e.microseconds = microseconds;
      return;
    }
  }
  entries_.push_back({component, edge, kind, microseconds});
}

void InjectedDelays::at(std::string_view component, Edge edge, Stream s) {
  for (const auto& e : entries_) {
    if (e.edge != edge || e.component != component) continue;
    ++injected_;
    if (e.kind == DelayKind::host) host_spin(e.microseconds);
    else dev_.spin(s, e.microseconds);
  }
}

}  // namespace layerbench
