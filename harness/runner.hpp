#pragma once
// The timing loop. Warm-up, then the same fixed number of iterations on every rank (rank 0's
// counts are broadcast, so a rank can never issue a different number of collectives); each
// iteration is timed on its own and the sample kept is the MAXIMUM over ranks of that
// iteration (a collective finishes when its slowest rank does).
#include "collectives/communicator.hpp"
#include "reports/result.hpp"

#include <functional>
#include <string>

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

class Runner {
 public:
  // Collective: broadcasts rank 0's counts.
  Runner(Communicator& world, TimingOptions opts);

  const TimingOptions& options() const { return opts_; }
  Communicator& world() const { return world_; }

  // Times `body(stream)`: enqueue work on `stream` (the device's compute stream). Collective.
  reports::Measurement time(const std::string& name, const std::function<void(Stream)>& body,
                            Clock clock = Clock::device) const;

  // nccl-tests' aggregate view: host clock around `n` back-to-back bodies, one sync at the end,
  // divided by n; the rank-max of that mean. Collective.
  double time_aggregate_ms(const std::function<void(Stream)>& body, int n) const;

  // JSON description of the timing method for the result file's context.
  nlohmann::json describe() const;

 private:
  Communicator& world_;
  TimingOptions opts_;
};

}  // namespace layerbench::harness
