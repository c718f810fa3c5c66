#pragma once
// One communicator interface, two backends:
//   host: MPI over host memory (bf16 stored as 16 bits, reduced in fp32 and rounded back);
//   cuda: NCCL over device memory, bootstrapped over MPI (unique id broadcast on the MPI comm).
// Every data-plane call takes buffers from the communicator's Device and a Stream. The host
// backend completes the call before returning; the cuda backend enqueues it on the stream.
// Counts and displacements are in elements of `dtype`.
//
// A control plane (MPI on host memory, both backends) carries the harness's own traffic:
// broadcasting iteration counts, the per-iteration rank-max, agreement on errors.
#include "collectives/device.hpp"
#include "collectives/types.hpp"

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace layerbench {

// An in-flight asynchronous collective. wait(s) orders stream `s` after the collective
// (no host block on the cuda backend); on the host backend it completes the MPI request.
class Handle {
 public:
  virtual ~Handle() = default;
  virtual void wait(Stream s) = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm control() const { return control_; }
  Device& device() const { return *device_; }
  Backend backend() const { return device_->backend(); }
  // MPI_COMM_WORLD rank of each rank of this communicator (a trace names peers by them).
  const std::vector<int>& world_ranks() const { return world_ranks_; }
  // {world rank of dst, world rank of src}: the peers of a ring step.
  std::vector<int> peers_of(int dst, int src) const {
    return {world_ranks_.at(static_cast<std::size_t>(dst)), world_ranks_.at(static_cast<std::size_t>(src))};
  }

  // ---- data plane ----------------------------------------------------------------------
  virtual void barrier(Stream s) = 0;
  // recv holds size() * count elements, rank r's part at offset r * count.
  virtual void all_gather(const void* send, void* recv, std::size_t count, DType t, Stream s) = 0;
  // Uneven all-to-all: send_counts[p] elements at send_displs[p] go to rank p.
  virtual void all_to_allv(const void* send, std::span<const std::size_t> send_counts,
                           std::span<const std::size_t> send_displs, void* recv,
                           std::span<const std::size_t> recv_counts,
                           std::span<const std::size_t> recv_displs, DType t, Stream s) = 0;
  virtual void all_reduce(const void* send, void* recv, std::size_t count, DType t, Stream s) = 0;
  // send holds size() * recv_count elements; recv gets this rank's reduced block.
  virtual void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DType t,
                              Stream s) = 0;
  virtual void broadcast(void* buf, std::size_t count, DType t, int root, Stream s) = 0;
  // Simultaneous send to `dst` and receive from `src` (a ring step); no deadlock.
  virtual void sendrecv(const void* send, int dst, void* recv, int src, std::size_t count, DType t,
                        Stream s) = 0;

  // Asynchronous forms: run on the device's comm stream after the work already enqueued on
  // `s`, so compute enqueued on `s` afterwards overlaps them.
  virtual std::unique_ptr<Handle> all_to_allv_async(
      const void* send, std::span<const std::size_t> send_counts,
      std::span<const std::size_t> send_displs, void* recv,
      std::span<const std::size_t> recv_counts, std::span<const std::size_t> recv_displs, DType t,
      Stream s) = 0;
  virtual std::unique_ptr<Handle> all_gather_async(const void* send, void* recv, std::size_t count,
                                                   DType t, Stream s) = 0;
  virtual std::unique_ptr<Handle> all_reduce_async(const void* send, void* recv, std::size_t count,
                                                   DType t, Stream s) = 0;
  // A ring step that overlaps: send to `dst` and receive from `src` on the comm stream.
  virtual std::unique_ptr<Handle> sendrecv_async(const void* send, int dst, void* recv, int src,
                                                 std::size_t count, DType t, Stream s) = 0;

  // ---- the sequence-size exchange ------------------------------------------------------
  // all_gather of one int64 per rank, copied to the host and synchronised: exactly what a
  // framework's `.item()` / `.tolist()` after a scalar all_gather pays. Counted (see below).
  std::vector<std::int64_t> scalar_exchange(std::int64_t value);
  // Device-only form: the gathered values stay in device memory (`out`: size() int64),
  // `scratch` holds one int64 already filled on the device. No host synchronisation.
  void scalar_exchange_device(const void* scratch, void* out, Stream s);
  // How many host-synchronised scalar exchanges this communicator has performed.
  std::uint64_t scalar_exchange_count() const { return scalar_exchanges_; }

  // ---- control plane (MPI, host memory) ------------------------------------------------
  void control_barrier() const;
  // Element-wise maximum over ranks, in place.
  void control_max(std::span<double> values) const;
  void control_sum(std::span<double> values) const;
  std::int64_t control_max(std::int64_t v) const;
  void control_broadcast(std::span<std::int64_t> values, int root = 0) const;
  std::vector<std::string> control_gather_strings(const std::string& s) const;  // all ranks get all

  // ---- groups ----------------------------------------------------------------------------
  // MPI_Comm_split semantics: ranks with equal color form a group, ordered by key.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

 protected:
  Communicator(MPI_Comm control, std::shared_ptr<Device> device);
  std::shared_ptr<Device> device_ptr() const { return device_; }
  // Scratch for scalar_exchange (one int64 in, size() out), in device memory.
  Buffer scalar_in_, scalar_out_;

 private:
  MPI_Comm control_;
  std::shared_ptr<Device> device_;
  int rank_ = 0, size_ = 1;
  std::vector<int> world_ranks_;
  std::uint64_t scalar_exchanges_ = 0;
};

// Host backend over `comm` (duplicated; the communicator owns its duplicate).
std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm, std::shared_ptr<Device> device);
// Communicator-creation settings of the CUDA backend (ncclConfig_t fields; defaults = NCCL's).
struct NcclSettings {
  // config.nvlinkCentricSched (NCCL >= 2.28; nccl-tests sets it; NCCL applies it as a launch
  // attribute on compute capability >= 10.0 only). Older NCCL: UsageError.
  bool nvlink_centric_sched = false;
};
// CUDA backend: NCCL communicator over the ranks of `comm` (duplicated for control).
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, std::shared_ptr<Device> device,
                                                     const NcclSettings& settings = {});

}  // namespace layerbench
