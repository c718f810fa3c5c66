#include "harness/runner.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace layerbench::harness {

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
  return m;
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
