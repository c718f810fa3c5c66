#include "collectives/trace.hpp"

#include "collectives/communicator.hpp"
#include "collectives/error.hpp"

#include <chrono>
#include <limits>

namespace layerbench {

ObservedCollective::ObservedCollective(const Communicator& comm, const char* op, std::size_t bytes, Stream s,
                                       bool async, std::vector<int> peers)
    : observer_(comm.device().collective_observer()), stream_(s) {
  if (!observer_) return;
  CollectiveCall call;
  call.op = op;
  call.bytes = bytes;
  call.peers = peers.empty() ? comm.world_ranks() : std::move(peers);
  call.stream = s;
  call.on_comm_stream = async;
  token_ = observer_->begin(call);
}

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::vector<ClockOffset> measure_clock_offsets(const Communicator& world, int rounds) {
  const int n = world.size();
  std::vector<ClockOffset> out(static_cast<std::size_t>(n));
  const MPI_Comm comm = world.control();
  constexpr int kTag = 4711;
  for (int r = 1; r < n; ++r) {
    if (world.rank() == 0) {
      ClockOffset best;
      best.rtt_ns = std::numeric_limits<std::int64_t>::max();
      for (int k = 0; k < rounds; ++k) {
        std::int64_t remote = 0;
        const std::int64_t t0 = steady_ns();
        LB_MPI_CHECK(MPI_Send(&t0, 1, MPI_INT64_T, r, kTag, comm));
        LB_MPI_CHECK(MPI_Recv(&remote, 1, MPI_INT64_T, r, kTag, comm, MPI_STATUS_IGNORE));
        const std::int64_t t1 = steady_ns();
        if (t1 - t0 < best.rtt_ns) {
          best.rtt_ns = t1 - t0;
          // The remote reading lies between t0 and t1 on rank 0's clock: the midpoint is off by
          // at most half the round trip.
          best.offset_ns = remote - (t0 + (t1 - t0) / 2);
          best.error_ns = (t1 - t0 + 1) / 2;
        }
      }
      out[static_cast<std::size_t>(r)] = best;
    } else if (world.rank() == r) {
      for (int k = 0; k < rounds; ++k) {
        std::int64_t ping = 0;
        LB_MPI_CHECK(MPI_Recv(&ping, 1, MPI_INT64_T, 0, kTag, comm, MPI_STATUS_IGNORE));
        const std::int64_t now = steady_ns();
        LB_MPI_CHECK(MPI_Send(&now, 1, MPI_INT64_T, 0, kTag, comm));
      }
    }
  }
  std::vector<std::int64_t> flat(3 * static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < out.size(); ++i) {
    flat[3 * i] = out[i].offset_ns;
    flat[3 * i + 1] = out[i].error_ns;
    flat[3 * i + 2] = out[i].rtt_ns;
  }
  world.control_broadcast(flat, 0);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = {flat[3 * i], flat[3 * i + 1], flat[3 * i + 2]};
  return out;
}

}  // namespace layerbench
