#pragma once
// The timing loop. Warm-up, then the same fixed number of iterations on every rank (rank 0's
// counts are broadcast, so a rank can never issue a different number of collectives); each
// iteration is timed on its own and the sample kept is the MAXIMUM over ranks of that
// iteration (a collective finishes when its slowest rank does).
#include "collectives/communicator.hpp"
#include "reports/result.hpp"

#include <cstdint>

#include <functional>
#include <string>
#include <vector>

namespace layerbench::harness {

enum class Clock {
  device,  // CUDA events on the compute stream (steady_clock on the host backend)
  host,    // steady_clock around the body plus a host synchronisation (host-sync costs)
};

struct TimingOptions {
  int warmup = 5;
  int iterations = 30;
  // true: host sync + barrier before every iteration, each timed alone (cold start, aligned);
  // false: free-running, iterations back to back with events around each (pipelined).
  bool barrier_align = true;
};

class TraceRecorder;  // harness/trace.hpp

// With --trace (a TraceRecorder observing the device) the first iterations of every measurement
// are also recorded as slices of the trace, from the same timer readings as the samples; with
// ranges on (Device::set_ranges) every body is an NVTX range named after the component.
class Runner {
 public:
  // Collective: broadcasts rank 0's counts.
  Runner(Communicator& world, TimingOptions opts);

  const TimingOptions& options() const { return opts_; }
  Communicator& world() const { return world_; }

  // Times `body(stream)`: enqueue work on `stream` (the device's compute stream). Collective.
  reports::Measurement time(const std::string& name, const std::function<void(Stream)>& body,
                            Clock clock = Clock::device) const;

  // Times `body` and `reference` in the same iterations, alternating which goes first (ABBA), each
  // timed alone (sync + barrier before each under barrier alignment): the body's measurement
  // carries the reference's samples, aligned by iteration (Measurement::reference_samples_ms).
  // Warm-up runs both. Collective.
  reports::Measurement time_interleaved(const std::string& name, const std::function<void(Stream)>& body,
                                        const std::string& reference_name,
                                        const std::function<void(Stream)>& reference, Clock clock = Clock::device) const;

  // Times every body once per iteration, round-robin (the order rotated by the iteration and
  // reversed on odd ones, round_order: every body takes every position equally often), each timed
  // alone as time() does: samples[b][i] is body b's rank-max time in iteration i, so a ratio of
  // two bodies is taken per iteration between samples of the same minutes and clocks. Warm-up
  // runs each body. Collective.
  // `names` (one per body) name them in the trace and the NVTX ranges ("body B" without).
  std::vector<std::vector<double>> time_round_robin(const std::vector<std::function<void(Stream)>>& bodies,
                                                    Clock clock = Clock::device,
                                                    const std::vector<std::string>& names = {}) const;

  // This rank's device energy counter (J, cumulative; NaN without one): when set, every
  // measurement records its energy (Measurement::energy) from an energy window after the timed
  // iterations. NVML's counter advances in steps (about every 100 ms on an H200 at its cap), so
  // a window around a few short iterations reads 0 or one whole step: the window runs the body
  // back to back from one step of the counter to the next step at least `energy_window_s` later,
  // on every rank (each rank its own edges; the loop is collective so collectives stay matched),
  // and J per call = the energy between the two steps / the calls between them.
  void set_energy_meter(std::function<double()> meter, double energy_window_s = 0.3) {
    energy_ = std::move(meter);
    energy_window_s_ = energy_window_s;
  }
  reports::Energy energy_window(const std::function<void(Stream)>& body, double median_ms) const;

  // nccl-tests' aggregate view: host clock around `n` back-to-back bodies, one sync at the end,
  // divided by n; the rank-max of that mean. Collective.
  double time_aggregate_ms(const std::function<void(Stream)>& body, int n) const;

  // JSON description of the timing method for the result file's context.
  nlohmann::json describe() const;

 private:
  // One iteration as time() takes it under barrier alignment (or host clock): sync + barrier when
  // aligned, then the body between the clock's two readings; traced when `iteration` < `traced`.
  double one_ms(const std::string& name, const std::function<void(Stream)>& body, Clock clock, Timer& timer,
                int iteration, int traced) const;
  void run_body(const std::string& name, const std::function<void(Stream)>& body, Stream s) const;
  // How many iterations of the next measurement are traced (0 without --trace); opens its series.
  int begin_trace() const;

  Communicator& world_;
  TraceRecorder* trace_ = nullptr;
  TimingOptions opts_;
  std::function<double()> energy_;
  double energy_window_s_ = 0.3;
};

}  // namespace layerbench::harness
