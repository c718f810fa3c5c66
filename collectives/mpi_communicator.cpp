// Host backend: MPI collectives on host memory.
// NOTES: counts are converted to MPI ints in elements of a contiguous per-dtype datatype, so a
// single call can move up to 2^31-1 elements; larger calls are rejected, not truncated.
#include "collectives/communicator.hpp"
#include "collectives/trace.hpp"
#include "collectives/error.hpp"

#include <fmt/format.h>

#include <cstring>
#include <exception>
#include <limits>

namespace layerbench {
namespace {

// bf16 sum: widen to fp32, add, round to nearest even (what a bf16 NCCL sum does per step).
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = float_to_bf16_bits(bf16_bits_to_float(a[i]) + bf16_bits_to_float(b[i]));
}

int to_int(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw Error(fmt::format("[{}] {} of {} elements exceeds the MPI int count limit", rank_tag(), what, n));
  return static_cast<int>(n);
}

std::vector<int> to_ints(std::span<const std::size_t> v, const char* what) {
  std::vector<int> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = to_int(v[i], what);
  return out;
}

class MpiHandle final : public Handle {
 public:
  MpiHandle() = default;
  MPI_Request* req() { return &req_; }
  MPI_Request* req2() { return &req2_; }  // a second request (send + receive of a ring step)
  // Keeps the int count arrays alive until completion (MPI reads them asynchronously).
  std::vector<int> keep[4];
  // The trace's end of this collective: it completes in wait().
  ObservedCollective::Pending observed;
  void wait(Stream) override {
    if (req_ != MPI_REQUEST_NULL) LB_MPI_CHECK(MPI_Wait(&req_, MPI_STATUS_IGNORE));
    if (req2_ != MPI_REQUEST_NULL) LB_MPI_CHECK(MPI_Wait(&req2_, MPI_STATUS_IGNORE));
    observed();
  }
  ~MpiHandle() override {
    // Unwinding from an error on this rank alone: waiting could block forever; the job aborts.
    if (std::uncaught_exceptions() != 0) return;
    if (req_ != MPI_REQUEST_NULL) MPI_Wait(&req_, MPI_STATUS_IGNORE);
    if (req2_ != MPI_REQUEST_NULL) MPI_Wait(&req2_, MPI_STATUS_IGNORE);
  }

 private:
  MPI_Request req_ = MPI_REQUEST_NULL;
  MPI_Request req2_ = MPI_REQUEST_NULL;
};

class MpiCommunicator final : public Communicator {
 public:
  // `control` becomes the control plane; the data plane gets its own duplicate, so the
  // harness's collectives never interleave with a pending non-blocking data collective.
  MpiCommunicator(MPI_Comm control, std::shared_ptr<Device> device)
      : Communicator(control, std::move(device)), control_comm_(control) {
    LB_MPI_CHECK(MPI_Comm_dup(control, &comm_));
    LB_MPI_CHECK(MPI_Op_create(&bf16_sum, 1, &bf16_sum_op_));
  }
  ~MpiCommunicator() override {
    if (std::uncaught_exceptions() > 0) return;  // see MpiHandle: never block while unwinding
    MPI_Op_free(&bf16_sum_op_);
    MPI_Comm_free(&comm_);
    MPI_Comm_free(&control_comm_);
  }

  void barrier(Stream s) override {
    ObservedCollective obs(*this, "barrier", 0, s);
    LB_MPI_CHECK(MPI_Barrier(comm_));
  }

  // Synchronous forms call the blocking MPI collectives: Open MPI often serves MPI_I* through a
  // different component (libnbc) whose cost is not what the blocking call pays.
  void all_gather(const void* send, void* recv, std::size_t count, DType t, Stream s) override {
    ObservedCollective obs(*this, "all_gather", count * dtype_size(t), s);
    const int n = to_int(count, "all_gather");
    const auto* at = static_cast<const char*>(recv) + static_cast<std::size_t>(rank()) * count * dtype_size(t);
    if (send == at) {
      LB_MPI_CHECK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, n, type(t), comm_));
    } else {
      LB_MPI_CHECK(MPI_Allgather(send, n, type(t), recv, n, type(t), comm_));
    }
  }
  std::unique_ptr<Handle> all_gather_async(const void* send, void* recv, std::size_t count, DType t,
                                           Stream s) override {
    auto h = std::make_unique<MpiHandle>();
    ObservedCollective obs(*this, "all_gather", count * dtype_size(t), s, true);
    const int n = to_int(count, "all_gather");
    // In place (NCCL convention): send == recv + rank * count, the part already in position.
    const auto* at = static_cast<const char*>(recv) + static_cast<std::size_t>(rank()) * count * dtype_size(t);
    if (send == at) {
      LB_MPI_CHECK(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, n, type(t), comm_, h->req()));
    } else {
      LB_MPI_CHECK(MPI_Iallgather(send, n, type(t), recv, n, type(t), comm_, h->req()));
    }
    h->observed = obs.release();
    return h;
  }

  void all_to_allv(const void* send, std::span<const std::size_t> sc, std::span<const std::size_t> sd,
                   void* recv, std::span<const std::size_t> rc, std::span<const std::size_t> rd, DType t,
                   Stream s) override {
    check_sizes(sc.size(), sd.size(), rc.size(), rd.size());
    ObservedCollective obs(*this, "all_to_allv", total(sc) * dtype_size(t), s);
    const auto a = to_ints(sc, "all_to_allv"), b = to_ints(sd, "all_to_allv"), c = to_ints(rc, "all_to_allv"),
               d = to_ints(rd, "all_to_allv");
    LB_MPI_CHECK(MPI_Alltoallv(send, a.data(), b.data(), type(t), recv, c.data(), d.data(), type(t), comm_));
  }
  std::unique_ptr<Handle> all_to_allv_async(const void* send, std::span<const std::size_t> sc,
                                            std::span<const std::size_t> sd, void* recv,
                                            std::span<const std::size_t> rc,
                                            std::span<const std::size_t> rd, DType t, Stream s) override {
    check_sizes(sc.size(), sd.size(), rc.size(), rd.size());
    auto h = std::make_unique<MpiHandle>();
    ObservedCollective obs(*this, "all_to_allv", total(sc) * dtype_size(t), s, true);
    h->keep[0] = to_ints(sc, "all_to_allv");
    h->keep[1] = to_ints(sd, "all_to_allv");
    h->keep[2] = to_ints(rc, "all_to_allv");
    h->keep[3] = to_ints(rd, "all_to_allv");
    LB_MPI_CHECK(MPI_Ialltoallv(send, h->keep[0].data(), h->keep[1].data(), type(t), recv,
                                h->keep[2].data(), h->keep[3].data(), type(t), comm_, h->req()));
    h->observed = obs.release();
    return h;
  }

  void all_reduce(const void* send, void* recv, std::size_t count, DType t, Stream s) override {
    ObservedCollective obs(*this, "all_reduce", count * dtype_size(t), s);
    const void* src = send == recv ? MPI_IN_PLACE : send;
    LB_MPI_CHECK(MPI_Allreduce(src, recv, to_int(count, "all_reduce"), type(t), sum_op(t), comm_));
  }
  std::unique_ptr<Handle> all_reduce_async(const void* send, void* recv, std::size_t count, DType t,
                                           Stream s) override {
    auto h = std::make_unique<MpiHandle>();
    ObservedCollective obs(*this, "all_reduce", count * dtype_size(t), s, true);
    const void* src = send == recv ? MPI_IN_PLACE : send;
    LB_MPI_CHECK(MPI_Iallreduce(src, recv, to_int(count, "all_reduce"), type(t), sum_op(t), comm_, h->req()));
    h->observed = obs.release();
    return h;
  }

  void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DType t, Stream s) override {
    ObservedCollective obs(*this, "reduce_scatter", recv_count * dtype_size(t) * static_cast<std::size_t>(size()), s);
    const int n = to_int(recv_count, "reduce_scatter");
    // In place (NCCL convention): recv == send + rank * recv_count. MPI leaves an in-place
    // result at the start of the buffer, so move it to this rank's block afterwards.
    const std::size_t block = recv_count * dtype_size(t);
    auto* base = static_cast<char*>(const_cast<void*>(send));
    if (recv == base + static_cast<std::size_t>(rank()) * block) {
      LB_MPI_CHECK(MPI_Reduce_scatter_block(MPI_IN_PLACE, base, n, type(t), sum_op(t), comm_));
      if (rank() != 0) std::memmove(recv, base, block);
    } else {
      LB_MPI_CHECK(MPI_Reduce_scatter_block(send, recv, n, type(t), sum_op(t), comm_));
    }
  }

  void broadcast(void* buf, std::size_t count, DType t, int root, Stream s) override {
    ObservedCollective obs(*this, "broadcast", count * dtype_size(t), s);
    LB_MPI_CHECK(MPI_Bcast(buf, to_int(count, "broadcast"), type(t), root, comm_));
  }

  void sendrecv(const void* send, int dst, void* recv, int src, std::size_t count, DType t, Stream s) override {
    ObservedCollective obs(*this, "sendrecv", count * dtype_size(t), s, false, peers_of(dst, src));
    const int n = to_int(count, "sendrecv");
    LB_MPI_CHECK(MPI_Sendrecv(send, n, type(t), dst, 7, recv, n, type(t), src, 7, comm_, MPI_STATUS_IGNORE));
  }

  std::unique_ptr<Handle> sendrecv_async(const void* send, int dst, void* recv, int src, std::size_t count,
                                         DType t, Stream s) override {
    auto h = std::make_unique<MpiHandle>();
    ObservedCollective obs(*this, "sendrecv", count * dtype_size(t), s, true, peers_of(dst, src));
    const int n = to_int(count, "sendrecv");
    LB_MPI_CHECK(MPI_Irecv(recv, n, type(t), src, 8, comm_, h->req2()));
    LB_MPI_CHECK(MPI_Isend(send, n, type(t), dst, 8, comm_, h->req()));
    h->observed = obs.release();
    return h;
  }

  std::unique_ptr<Communicator> split(int color, int key) override {
    MPI_Comm sub;
    LB_MPI_CHECK(MPI_Comm_split(control_comm_, color, key, &sub));
    return std::make_unique<MpiCommunicator>(sub, device_ptr());
  }

 private:
  static MPI_Datatype type(DType t) {
    switch (t) {
      case DType::bf16: return MPI_UINT16_T;
      case DType::fp32: return MPI_FLOAT;
      case DType::int64: return MPI_INT64_T;
    }
    return MPI_BYTE;
  }
  MPI_Op sum_op(DType t) const { return t == DType::bf16 ? bf16_sum_op_ : MPI_SUM; }
  static std::size_t total(std::span<const std::size_t> v) {
    std::size_t n = 0;
    for (auto x : v) n += x;
    return n;
  }
  void check_sizes(std::size_t a, std::size_t b, std::size_t c, std::size_t d) const {
    const auto p = static_cast<std::size_t>(size());
    LB_CHECK(a == p && b == p && c == p && d == p, "all_to_allv needs one count and displacement per rank");
  }

  MPI_Comm control_comm_;
  MPI_Comm comm_{};
  MPI_Op bf16_sum_op_{};
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm, std::shared_ptr<Device> device) {
  MPI_Comm dup;
  LB_MPI_CHECK(MPI_Comm_dup(comm, &dup));
  return std::make_unique<MpiCommunicator>(dup, std::move(device));
}

}  // namespace layerbench
