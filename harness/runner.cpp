#include "harness/runner.hpp"
#include "harness/whatif.hpp"

#include <chrono>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

namespace layerbench::harness {

namespace {
double stats_median(std::vector<double> x) {
  if (x.empty()) return 0;
  std::nth_element(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(x.size() / 2), x.end());
  return x[x.size() / 2];
}
double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

Runner::Runner(Communicator& world, TimingOptions opts) : world_(world), opts_(opts) {
  std::int64_t counts[3] = {opts_.warmup, opts_.iterations, opts_.barrier_align ? 1 : 0};
  world_.control_broadcast(counts, 0);
  opts_.warmup = static_cast<int>(counts[0]);
  opts_.iterations = static_cast<int>(counts[1]);
  opts_.barrier_align = counts[2] != 0;
}

reports::Measurement Runner::time(const std::string& name, const std::function<void(Stream)>& body,
                                  Clock clock) const {
  auto& dev = world_.device();
  const Stream s = dev.compute_stream();
  for (int i = 0; i < opts_.warmup; ++i) body(s);
  dev.synchronize_all();

  reports::Measurement m;
  m.name = name;
  const auto iters = static_cast<std::size_t>(opts_.iterations);
  m.samples_ms.resize(iters);
  using steady = std::chrono::steady_clock;
  if (!opts_.barrier_align && clock == Clock::device) {
    world_.control_barrier();  // start together: leftover skew would land in iteration 0
    // Free-running (nccl-tests style): iterations are enqueued back to back with a pair of
    // events around each, and read after one final synchronisation, so launch latency overlaps
    // the previous iteration as in a real pipeline. Ranks stay in step through the collectives.
    std::vector<std::unique_ptr<Timer>> timers;
    for (std::size_t i = 0; i < iters; ++i) timers.push_back(dev.make_timer());
    for (std::size_t i = 0; i < iters; ++i) {
      timers[i]->start(s);
      body(s);
      timers[i]->stop(s);
    }
    for (std::size_t i = 0; i < iters; ++i) m.samples_ms[i] = timers[i]->elapsed_ms();
  } else {
    auto timer = dev.make_timer();
    for (std::size_t i = 0; i < iters; ++i) {
      if (opts_.barrier_align) {
        dev.synchronize(s);
        world_.control_barrier();
      }
      double ms = 0;
      if (clock == Clock::device) {
        timer->start(s);
        body(s);
        timer->stop(s);
        ms = timer->elapsed_ms();
      } else {
        const auto t0 = steady::now();
        body(s);
        dev.synchronize(s);
        ms = std::chrono::duration<double, std::milli>(steady::now() - t0).count();
      }
      m.samples_ms[i] = ms;
    }
  }
  dev.synchronize_all();
  world_.control_max(m.samples_ms);
  if (energy_) m.energy = energy_window(body, stats_median(m.samples_ms));
  return m;
}

double Runner::one_ms(const std::function<void(Stream)>& body, Clock clock, Timer& timer) const {
  auto& dev = world_.device();
  const Stream s = dev.compute_stream();
  if (opts_.barrier_align) {
    dev.synchronize(s);
    world_.control_barrier();
  }
  if (clock == Clock::device) {
    timer.start(s);
    body(s);
    timer.stop(s);
    return timer.elapsed_ms();
  }
  const auto t0 = std::chrono::steady_clock::now();
  body(s);
  dev.synchronize(s);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

reports::Energy Runner::energy_window(const std::function<void(Stream)>& body, double median_ms) const {
  reports::Energy e;
  if (!energy_) return e;
  auto& dev = world_.device();
  const Stream s = dev.compute_stream();
  // Chunks of at least ~2 ms of work between host reads of the counter (a sync per call would
  // add idle between short calls).
  const int chunk = median_ms > 0 ? std::max(1, static_cast<int>(std::ceil(2.0 / median_ms))) : 1;
  const double cap_s = 10 * std::max(energy_window_s_, 0.1);  // a counter that never moves gives up
  double e_prev = energy_(), e0 = 0, t0 = 0, joules = 0, seconds = 0;
  long calls = 0, calls_at_edge = 0;
  int phase = std::isfinite(e_prev) ? 0 : 2;  // 0: before the first step, 1: inside, 2: done
  bool ok = phase == 0;
  const double start = now_s();
  for (;;) {
    for (int i = 0; i < chunk; ++i) body(s);
    dev.synchronize(s);
    calls += chunk;
    const double now = now_s(), v = energy_();
    if (phase == 0 && v != e_prev) {
      phase = 1;
      e0 = v;
      t0 = now;
      calls_at_edge = calls;
    } else if (phase == 1 && v != e_prev && now - t0 >= energy_window_s_) {
      phase = 2;
      joules = v - e0;
      seconds = now - t0;
      calls_at_edge = calls - calls_at_edge;
    }
    e_prev = v;
    if (phase < 2 && now - start > cap_s) {
      phase = 2;
      ok = false;
    }
    double more = phase < 2 ? 1.0 : 0.0;  // every rank runs the same calls
    world_.control_max(std::span<double>(&more, 1));
    if (more == 0) break;
  }
  // Per device: J per call and mean W; summed (J) and averaged (W) over the ranks' devices.
  double v[3] = {ok && calls_at_edge > 0 ? joules / static_cast<double>(calls_at_edge) : std::numeric_limits<double>::quiet_NaN(),
                 ok && seconds > 0 ? joules / seconds : std::numeric_limits<double>::quiet_NaN(), ok ? 1.0 : 0.0};
  world_.control_sum(v);
  double n = static_cast<double>(calls_at_edge);
  world_.control_max(std::span<double>(&n, 1));
  if (!(v[2] == world_.size()) || !std::isfinite(v[0]) || !std::isfinite(v[1]) || !(v[1] > 0) || !(n > 0)) return e;
  // As Energy holds it: `calls` calls (the most any rank counted between its steps), the
  // devices' energy of that many calls, and the time they take at the devices' mean power, so
  // that per_instance_j() = sum of J per call and mean_w() = mean W per device.
  e.calls = static_cast<int>(n);
  e.devices = world_.size();
  e.joules = v[0] * n;
  e.seconds = e.joules / v[1];
  return e;
}

reports::Measurement Runner::time_interleaved(const std::string& name, const std::function<void(Stream)>& body,
                                              const std::string& reference_name,
                                              const std::function<void(Stream)>& reference, Clock clock) const {
  auto& dev = world_.device();
  const Stream s = dev.compute_stream();
  for (int i = 0; i < opts_.warmup; ++i) {
    body(s);
    reference(s);
  }
  dev.synchronize_all();
  reports::Measurement m;
  m.name = name;
  m.reference = reference_name;
  const auto iters = static_cast<std::size_t>(opts_.iterations);
  m.samples_ms.resize(iters);
  m.reference_samples_ms.resize(iters);
  auto timer = dev.make_timer();
  for (std::size_t i = 0; i < iters; ++i) {
    // ABBA: the body first in iterations 0, 3, 4, 7, 8, ...; the reference first in the others.
    const bool body_first = (i % 4 == 0) || (i % 4 == 3);
    if (body_first) {
      m.samples_ms[i] = one_ms(body, clock, *timer);
      m.reference_samples_ms[i] = one_ms(reference, clock, *timer);
    } else {
      m.reference_samples_ms[i] = one_ms(reference, clock, *timer);
      m.samples_ms[i] = one_ms(body, clock, *timer);
    }
  }
  dev.synchronize_all();
  world_.control_max(m.samples_ms);
  world_.control_max(m.reference_samples_ms);
  // The energy is the body's alone (its own window after the pairs).
  if (energy_) m.energy = energy_window(body, stats_median(m.samples_ms));
  return m;
}

std::vector<std::vector<double>> Runner::time_round_robin(const std::vector<std::function<void(Stream)>>& bodies,
                                                          Clock clock) const {
  if (bodies.empty()) return {};
  auto& dev = world_.device();
  const Stream s = dev.compute_stream();
  for (int i = 0; i < opts_.warmup; ++i)
    for (const auto& b : bodies) b(s);
  dev.synchronize_all();
  const auto iters = static_cast<std::size_t>(opts_.iterations);
  std::vector<std::vector<double>> samples(bodies.size(), std::vector<double>(iters));
  auto timer = dev.make_timer();
  for (std::size_t i = 0; i < iters; ++i)
    for (const std::size_t b : round_order(bodies.size(), i)) samples[b][i] = one_ms(bodies[b], clock, *timer);
  dev.synchronize_all();
  for (auto& v : samples) world_.control_max(v);
  return samples;
}

double Runner::time_aggregate_ms(const std::function<void(Stream)>& body, int n) const {
  auto& dev = world_.device();
  const Stream s = dev.compute_stream();
  body(s);
  dev.synchronize(s);
  world_.control_barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) body(s);
  dev.synchronize(s);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / n;
  world_.control_max(std::span<double>(&ms, 1));
  return ms;
}

nlohmann::json Runner::describe() const {
  return {{"warmup", opts_.warmup},
          {"iterations", opts_.iterations},
          {"align", opts_.barrier_align ? "barrier" : "none"},
          {"rank_combine", "max per iteration"},
          {"clock", world_.backend() == Backend::cuda ? "cuda events" : "steady_clock"}};
}

}  // namespace layerbench::harness
