#include "harness/runner.hpp"
#include "harness/trace.hpp"
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
  trace_ = TraceRecorder::of(world_.device());
}

void Runner::run_body(const std::string& name, const std::function<void(Stream)>& body, Stream s) const {
  auto& dev = world_.device();
  dev.range_begin(name.c_str());
  body(s);
  dev.range_end();
}

int Runner::begin_trace() const {
  if (!trace_) return 0;
  trace_->begin_series(world_.device().compute_stream());
  return std::min(trace_->iterations(), opts_.iterations);
}

reports::Measurement Runner::time(const std::string& name, const std::function<void(Stream)>& body,
                                  Clock clock) const {
  auto& dev = world_.device();
  const Stream s = dev.compute_stream();
  for (int i = 0; i < opts_.warmup; ++i) run_body(name, body, s);
  dev.synchronize_all();

  reports::Measurement m;
  m.name = name;
  const auto iters = static_cast<std::size_t>(opts_.iterations);
  m.samples_ms.resize(iters);
  const int traced = begin_trace();
  if (!opts_.barrier_align && clock == Clock::device) {
    world_.control_barrier();  // start together: leftover skew would land in iteration 0
    // Free-running (nccl-tests style): iterations are enqueued back to back with a pair of
    // events around each, and read after one final synchronisation, so launch latency overlaps
    // the previous iteration as in a real pipeline. Ranks stay in step through the collectives.
    std::vector<std::unique_ptr<Timer>> timers;
    for (std::size_t i = 0; i < iters; ++i) timers.push_back(dev.make_timer());
    std::vector<std::uint64_t> ids(iters, 0);
    for (std::size_t i = 0; i < iters; ++i) {
      const bool traced_i = static_cast<int>(i) < traced;
      if (traced_i) ids[i] = trace_->open(name, static_cast<int>(i), false);
      timers[i]->start(s);
      run_body(name, body, s);
      timers[i]->stop(s);
      if (traced_i) trace_->end_body();
    }
    for (std::size_t i = 0; i < iters; ++i) {
      m.samples_ms[i] = timers[i]->elapsed_ms();
      if (ids[i] != 0) trace_->close(ids[i], *timers[i], m.samples_ms[i]);
    }
  } else {
    auto timer = dev.make_timer();
    for (std::size_t i = 0; i < iters; ++i) m.samples_ms[i] = one_ms(name, body, clock, *timer, static_cast<int>(i), traced);
  }
  dev.synchronize_all();
  world_.control_max(m.samples_ms);
  if (traced > 0) trace_->end_series(name, m.samples_ms);
  if (energy_) m.energy = energy_window(body, stats_median(m.samples_ms));
  return m;
}

double Runner::one_ms(const std::string& name, const std::function<void(Stream)>& body, Clock clock, Timer& timer,
                      int iteration, int traced) const {
  auto& dev = world_.device();
  const Stream s = dev.compute_stream();
  const bool traced_i = iteration < traced;
  if (opts_.barrier_align) {
    dev.synchronize(s);
    const std::int64_t w0 = traced_i ? steady_ns() : 0;
    world_.control_barrier();
    if (traced_i) trace_->wait("barrier", name, iteration, w0, steady_ns());
  }
  const std::uint64_t id = traced_i ? trace_->open(name, iteration, clock == Clock::host) : 0;
  if (clock == Clock::device) {
    timer.start(s);
    run_body(name, body, s);
    timer.stop(s);
    if (id != 0) trace_->end_body();
    const double ms = timer.elapsed_ms();
    if (id != 0) trace_->close(id, timer, ms);
    return ms;
  }
  const std::int64_t t0 = steady_ns();
  run_body(name, body, s);
  dev.synchronize(s);
  const std::int64_t t1 = steady_ns();
  const double ms = static_cast<double>(t1 - t0) / 1e6;
  if (id != 0) {
    trace_->end_body();
    trace_->close(id, t0, t1, ms);
  }
  return ms;
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
    run_body(name, body, s);
    run_body(reference_name, reference, s);
  }
  dev.synchronize_all();
  const int traced = begin_trace();
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
    const int it = static_cast<int>(i);
    if (body_first) {
      m.samples_ms[i] = one_ms(name, body, clock, *timer, it, traced);
      m.reference_samples_ms[i] = one_ms(reference_name, reference, clock, *timer, it, traced);
    } else {
      m.reference_samples_ms[i] = one_ms(reference_name, reference, clock, *timer, it, traced);
      m.samples_ms[i] = one_ms(name, body, clock, *timer, it, traced);
    }
  }
  dev.synchronize_all();
  world_.control_max(m.samples_ms);
  world_.control_max(m.reference_samples_ms);
  if (traced > 0) {
    trace_->end_series(name, m.samples_ms);
    trace_->end_series(reference_name, m.reference_samples_ms);
  }
  // The energy is the body's alone (its own window after the pairs).
  if (energy_) m.energy = energy_window(body, stats_median(m.samples_ms));
  return m;
}

std::vector<std::vector<double>> Runner::time_round_robin(const std::vector<std::function<void(Stream)>>& bodies,
                                                          Clock clock, const std::vector<std::string>& names) const {
  if (bodies.empty()) return {};
  auto& dev = world_.device();
  const Stream s = dev.compute_stream();
  std::vector<std::string> name(bodies.size());
  for (std::size_t b = 0; b < bodies.size(); ++b) name[b] = b < names.size() ? names[b] : "body " + std::to_string(b);
  for (int i = 0; i < opts_.warmup; ++i)
    for (std::size_t b = 0; b < bodies.size(); ++b) run_body(name[b], bodies[b], s);
  dev.synchronize_all();
  const int traced = begin_trace();
  const auto iters = static_cast<std::size_t>(opts_.iterations);
  std::vector<std::vector<double>> samples(bodies.size(), std::vector<double>(iters));
  auto timer = dev.make_timer();
  for (std::size_t i = 0; i < iters; ++i)
    for (const std::size_t b : round_order(bodies.size(), i))
      samples[b][i] = one_ms(name[b], bodies[b], clock, *timer, static_cast<int>(i), traced);
  dev.synchronize_all();
  for (auto& v : samples) world_.control_max(v);
  if (traced > 0)
    for (std::size_t b = 0; b < bodies.size(); ++b) trace_->end_series(name[b], samples[b]);
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
