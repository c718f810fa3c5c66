#pragma once
// The trace recorder behind --trace FILE: the Runner feeds it the first few timed iterations of
// every measurement through its own timing path (a component's slice is the very sample the
// table takes its rank-max of), the communicators feed it their collectives (bytes, peers), and
// the Runner its barrier waits. Kept per rank on the rank's steady clock; at the end the ranks'
// clocks are aligned to rank 0's (collectives/trace.hpp) and rank 0 writes one Chrome
// trace-event file (reports/trace.hpp).
#include "collectives/communicator.hpp"
#include "collectives/trace.hpp"
#include "reports/trace.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace layerbench::harness {

class TraceRecorder final : public CollectiveObserver {
 public:
  // Collective over `world` (a first clock alignment). Registers itself as the device's
  // collective observer; `iterations` timed iterations of each measurement are traced.
  TraceRecorder(Communicator& world, int iterations);
  ~TraceRecorder() override;
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // The recorder observing `dev`'s collectives, or nullptr (no --trace).
  static TraceRecorder* of(const Device& dev);
  int iterations() const { return iterations_; }

  // ---- the Runner's side: one measurement (a series) at a time --------------------------
  // After warm-up, with the device idle: a new series and its origin mark on `s`.
  void begin_series(Stream s);
  // Before a traced iteration's body: a component slice opens (collectives issued until
  // end_body() are its children). Returns the slice's id.
  std::uint64_t open(const std::string& name, int iteration, bool host_clock);
  void end_body();
  // The slice's time: from the timer the sample was read from (device clock), or the host
  // clock's two readings (steady_ns) around the body and its synchronisation.
  void close(std::uint64_t id, Timer& timer, double sample_ms);
  void close(std::uint64_t id, std::int64_t t0_ns, std::int64_t t1_ns, double sample_ms);
  // A host wait before iteration `iteration` of the component `before` (the barrier).
  void wait(const char* name, const std::string& before, int iteration, std::int64_t t0_ns, std::int64_t t1_ns);
  // After the series' last traced iteration and a device synchronisation: resolves the
  // collectives' marks and records on every component slice named `name` the rank-max sample
  // of its iteration (what the table holds).
  void end_series(const std::string& name, std::span<const double> rank_max_ms);

  // ---- CollectiveObserver ---------------------------------------------------------------
  std::uint64_t begin(const CollectiveCall& call) override;
  void end(std::uint64_t token, Stream s) override;

  // Collective: a second clock alignment, the slices of every rank gathered, and rank 0 writes
  // `path` (`metadata` goes into the trace's otherData beside the alignment).
  void write(const std::string& path, nlohmann::json metadata);

 private:
  struct Pending {  // a collective whose marks are read at end_series
    std::size_t timer = 0;  // in pool_
    reports::TraceSlice slice;
    bool ended = false;
  };
  std::int64_t device_ns(Timer& t);  // a device mark's start on this rank's steady clock
  int track_of(Stream s, bool comm) const;
  Timer& pooled_timer(std::size_t i);

  Communicator& world_;
  Device& dev_;
  int iterations_;
  std::vector<ClockOffset> offsets_begin_;
  std::int64_t created_ns_ = 0;
  // The series' origin: a device mark and its host time (midpoint of a bracket, +- half).
  std::unique_ptr<Timer> origin_, spare_;
  std::int64_t origin_ns_ = 0, origin_error_ns_ = 0, max_origin_error_ns_ = 0;
  int series_ = -1;
  std::uint64_t next_id_ = 1, open_id_ = 0;
  std::vector<reports::TraceSlice> slices_;
  std::vector<Pending> pending_;
  std::vector<std::unique_ptr<Timer>> pool_;  // reused across series: no event creation while timed
};

}  // namespace layerbench::harness
