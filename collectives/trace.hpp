#pragma once
// The platform side of a trace (the recorder itself is harness/trace.hpp, the trace document
// reports/trace.hpp): what an observer sees of every collective a communicator issues, and the
// alignment of the ranks' clocks against rank 0's.
#include "collectives/device.hpp"

#include <cstdint>
#include <vector>

namespace layerbench {

class Communicator;

// One collective as issued by this rank.
struct CollectiveCall {
  const char* op = "";      // "all_gather", "all_to_allv", ...
  std::size_t bytes = 0;    // what this rank sends (its part of the collective)
  std::vector<int> peers;   // MPI_COMM_WORLD ranks it exchanges with (the group, or dst and src)
  Stream stream;            // where its work runs
  bool on_comm_stream = false;  // an *_async form (the device's comm stream)
};

class CollectiveObserver {
 public:
  virtual ~CollectiveObserver() = default;
  // Before the call is issued (its work is enqueued on call.stream next); returns a token for
  // end(), 0 when this call is not recorded.
  virtual std::uint64_t begin(const CollectiveCall& call) = 0;
  // After the call's stream work is enqueued (CUDA) or it completed (host backend).
  virtual void end(std::uint64_t token, Stream s) = 0;
};

// Brackets one collective of `comm` for the device's observer (no-op without one). The async
// host forms hand `finish()` to their handle's wait (where the MPI request completes).
class ObservedCollective {
 public:
  ObservedCollective(const Communicator& comm, const char* op, std::size_t bytes, Stream s, bool async = false,
                     std::vector<int> peers = {});
  ObservedCollective(const ObservedCollective&) = delete;
  ObservedCollective& operator=(const ObservedCollective&) = delete;
  ~ObservedCollective() { finish(); }
  void finish() {
    if (token_) observer_->end(token_, stream_);
    token_ = 0;
  }
  // Moves the pending end out (the handle calls it), leaving this one inert.
  struct Pending {
    CollectiveObserver* observer = nullptr;
    std::uint64_t token = 0;
    Stream stream;
    void operator()() {
      if (token) observer->end(token, stream);
      token = 0;
    }
  };
  Pending release() {
    Pending p{observer_, token_, stream_};
    token_ = 0;
    return p;
  }

 private:
  CollectiveObserver* observer_ = nullptr;
  std::uint64_t token_ = 0;
  Stream stream_;
};

// steady_clock (CLOCK_MONOTONIC) in nanoseconds: the time line every rank's trace is kept on.
std::int64_t steady_ns();

// One rank's clock against rank 0's: offset = this rank's steady_ns() - rank 0's at the same
// instant, from the round trip with the smallest RTT; |true offset - offset| <= error = RTT/2.
struct ClockOffset {
  std::int64_t offset_ns = 0;
  std::int64_t error_ns = 0;
  std::int64_t rtt_ns = 0;
};
// Collective over `world`'s control plane: rank 0 exchanges `rounds` ping-pongs with every rank
// in turn; every rank gets the whole vector (rank 0: 0 +- 0).
std::vector<ClockOffset> measure_clock_offsets(const Communicator& world, int rounds = 50);

}  // namespace layerbench
