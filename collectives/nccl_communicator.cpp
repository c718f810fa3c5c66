// CUDA backend: NCCL over device memory, bootstrapped over MPI.
// NOTES: the unique id is created on rank 0 of the MPI communicator and broadcast over it; the
// MPI communicator stays the control plane. Asynchronous errors are polled during every host
// wait (cuda_device.cpp) and the communicator is aborted, so a failed rank cannot hang others.
#include "collectives/communicator.hpp"
#include "collectives/cuda_internal.hpp"
#include "collectives/error.hpp"
#include "collectives/trace.hpp"

#include <nccl.h>

#include <exception>

namespace layerbench {
namespace {
using detail::cuda_stream;

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::bf16: return ncclBfloat16;
    case DType::fp32: return ncclFloat32;
    case DType::int64: return ncclInt64;
  }
  return ncclInt8;
}

class NcclHandle final : public Handle {
 public:
  NcclHandle(std::unique_ptr<Event> done) : done_(std::move(done)) {}
  void wait(Stream s) override { done_->wait(s); }

 private:
  std::unique_ptr<Event> done_;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(MPI_Comm control, std::shared_ptr<Device> device, ncclComm_t comm)
      : Communicator(control, std::move(device)), mpi_(control), comm_(comm) {
    if (auto* w = dynamic_cast<detail::WatchedDevice*>(&this->device())) {
      watched_ = w;
      watch_id_ = w->add_watch({[this] { return poll(); }, [this] { abort(); }});
    }
  }
  ~NcclCommunicator() override {
    if (watched_) watched_->remove_watch(watch_id_);
    // ncclCommDestroy is collective within a node: a rank unwinding alone from an error must
    // not enter it (it would block there instead of reaching MPI_Abort). Leak instead.
    if (std::uncaught_exceptions() > 0) return;
    if (comm_) {
      if (aborted_) {
        ncclCommAbort(comm_);
      } else {
        ncclCommDestroy(comm_);
      }
    }
    MPI_Comm_free(&mpi_);
  }

  void barrier(Stream s) override {
    ObservedCollective obs(*this, "barrier", 0, s);
    device().synchronize(s);
    LB_MPI_CHECK(MPI_Barrier(mpi_));
  }

  void all_gather(const void* send, void* recv, std::size_t count, DType t, Stream s) override {
    ObservedCollective obs(*this, "all_gather", count * dtype_size(t), s, is_comm(s));
    LB_NCCL_CHECK(ncclAllGather(send, recv, count, nccl_type(t), comm_, cuda_stream(s)));
  }

  void all_to_allv(const void* send, std::span<const std::size_t> sc, std::span<const std::size_t> sd,
                   void* recv, std::span<const std::size_t> rc, std::span<const std::size_t> rd, DType t,
                   Stream s) override {
    LB_CHECK(sc.size() == static_cast<std::size_t>(size()) && rc.size() == sc.size() &&
                 sd.size() == sc.size() && rd.size() == sc.size(),
             "all_to_allv needs one count and displacement per rank");
    const std::size_t es = dtype_size(t);
    std::size_t sent = 0;
    for (auto x : sc) sent += x;
    ObservedCollective obs(*this, "all_to_allv", sent * es, s, is_comm(s));
    const auto* in = static_cast<const char*>(send);
    auto* out = static_cast<char*>(recv);
    LB_NCCL_CHECK(ncclGroupStart());
    for (int p = 0; p < size(); ++p) {
      const auto i = static_cast<std::size_t>(p);
      if (sc[i]) LB_NCCL_CHECK(ncclSend(in + sd[i] * es, sc[i], nccl_type(t), p, comm_, cuda_stream(s)));
      if (rc[i]) LB_NCCL_CHECK(ncclRecv(out + rd[i] * es, rc[i], nccl_type(t), p, comm_, cuda_stream(s)));
    }
    LB_NCCL_CHECK(ncclGroupEnd());
  }

  void all_reduce(const void* send, void* recv, std::size_t count, DType t, Stream s) override {
    ObservedCollective obs(*this, "all_reduce", count * dtype_size(t), s, is_comm(s));
    LB_NCCL_CHECK(ncclAllReduce(send, recv, count, nccl_type(t), ncclSum, comm_, cuda_stream(s)));
  }
  void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DType t, Stream s) override {
    ObservedCollective obs(*this, "reduce_scatter", recv_count * dtype_size(t) * static_cast<std::size_t>(size()), s,
                           is_comm(s));
    LB_NCCL_CHECK(ncclReduceScatter(send, recv, recv_count, nccl_type(t), ncclSum, comm_, cuda_stream(s)));
  }
  void broadcast(void* buf, std::size_t count, DType t, int root, Stream s) override {
    ObservedCollective obs(*this, "broadcast", count * dtype_size(t), s, is_comm(s));
    LB_NCCL_CHECK(ncclBroadcast(buf, buf, count, nccl_type(t), root, comm_, cuda_stream(s)));
  }
  void sendrecv(const void* send, int dst, void* recv, int src, std::size_t count, DType t, Stream s) override {
    ObservedCollective obs(*this, "sendrecv", count * dtype_size(t), s, is_comm(s), peers_of(dst, src));
    LB_NCCL_CHECK(ncclGroupStart());
    LB_NCCL_CHECK(ncclSend(send, count, nccl_type(t), dst, comm_, cuda_stream(s)));
    LB_NCCL_CHECK(ncclRecv(recv, count, nccl_type(t), src, comm_, cuda_stream(s)));
    LB_NCCL_CHECK(ncclGroupEnd());
  }

  std::unique_ptr<Handle> all_to_allv_async(const void* send, std::span<const std::size_t> sc,
                                            std::span<const std::size_t> sd, void* recv,
                                            std::span<const std::size_t> rc,
                                            std::span<const std::size_t> rd, DType t, Stream s) override {
    return on_comm_stream(s, [&](Stream c) { all_to_allv(send, sc, sd, recv, rc, rd, t, c); });
  }
  std::unique_ptr<Handle> all_gather_async(const void* send, void* recv, std::size_t count, DType t,
                                           Stream s) override {
    return on_comm_stream(s, [&](Stream c) { all_gather(send, recv, count, t, c); });
  }
  std::unique_ptr<Handle> all_reduce_async(const void* send, void* recv, std::size_t count, DType t,
                                           Stream s) override {
    return on_comm_stream(s, [&](Stream c) { all_reduce(send, recv, count, t, c); });
  }
  std::unique_ptr<Handle> sendrecv_async(const void* send, int dst, void* recv, int src, std::size_t count, DType t,
                                         Stream s) override {
    return on_comm_stream(s, [&](Stream c) { sendrecv(send, dst, recv, src, count, t, c); });
  }

  std::unique_ptr<Communicator> split(int color, int key) override {
    MPI_Comm sub;
    LB_MPI_CHECK(MPI_Comm_split(mpi_, color, key, &sub));
    ncclComm_t nc = nullptr;
    LB_NCCL_CHECK(ncclCommSplit(comm_, color, key, &nc, nullptr));
    return std::make_unique<NcclCommunicator>(sub, device_ptr(), nc);
  }

 private:
  // The async forms run the synchronous ones on the comm stream (observed there).
  bool is_comm(Stream s) { return s.handle == device().comm_stream().handle; }
  template <class F>
  std::unique_ptr<Handle> on_comm_stream(Stream s, F&& enqueue) {
    auto& dev = device();
    const Stream c = dev.comm_stream();
    auto ready = dev.make_event();
    ready->record(s);
    ready->wait(c);  // the collective sees everything enqueued on `s` before it
    enqueue(c);
    auto done = dev.make_event();
    done->record(c);
    return std::make_unique<NcclHandle>(std::move(done));
  }

  std::string poll() {
    if (aborted_ || !comm_) return {};
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(comm_, &async) != ncclSuccess || (async != ncclSuccess && async != ncclInProgress))
      return std::string(ncclGetErrorString(async)) + ": " + ncclGetLastError(comm_);
    return {};
  }
  void abort() {
    if (!aborted_ && comm_) {
      ncclCommAbort(comm_);
      comm_ = nullptr;
      aborted_ = true;
    }
  }

  MPI_Comm mpi_;
  ncclComm_t comm_;
  detail::WatchedDevice* watched_ = nullptr;
  int watch_id_ = -1;
  bool aborted_ = false;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, std::shared_ptr<Device> device,
                                                     const NcclSettings& settings) {
  MPI_Comm dup;
  LB_MPI_CHECK(MPI_Comm_dup(comm, &dup));
  int rank = 0, size = 1;
  LB_MPI_CHECK(MPI_Comm_rank(dup, &rank));
  LB_MPI_CHECK(MPI_Comm_size(dup, &size));
  ncclUniqueId id{};
  if (rank == 0) LB_NCCL_CHECK(ncclGetUniqueId(&id));
  LB_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, dup));
  ncclComm_t nc = nullptr;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
  if (settings.nvlink_centric_sched) config.nvlinkCentricSched = 1;
#else
  if (settings.nvlink_centric_sched)
    throw UsageError("--nvlink-centric-sched needs NCCL >= 2.28 (this build has " +
                     std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + ")");
#endif
  LB_NCCL_CHECK(ncclCommInitRankConfig(&nc, size, id, rank, &config));
  return std::make_unique<NcclCommunicator>(dup, std::move(device), nc);
}

}  // namespace layerbench
