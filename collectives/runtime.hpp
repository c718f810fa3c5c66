#pragma once
// Process start-up: MPI, the backend choice, the device (GPU by node-local rank) and the world
// communicator; plus the provenance every result file records.
#include "collectives/communicator.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace layerbench {

enum class BackendChoice { automatic, cuda, host };
BackendChoice parse_backend(const std::string& s);  // "auto" | "cuda" | "host"; UsageError otherwise

// RAII MPI environment (MPI_Init_thread / MPI_Finalize). Records rank and host for messages.
class MpiEnvironment {
 public:
  MpiEnvironment(int* argc, char*** argv);
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;
  int world_rank() const { return rank_; }
  int world_size() const { return size_; }
  int local_rank() const { return local_rank_; }  // via MPI_Comm_split_type(SHARED)
  int local_size() const { return local_size_; }
  const std::string& host() const { return host_; }

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  std::string host_;
};

// auto = cuda when a GPU is visible (on every rank), else host.
Backend resolve_backend(BackendChoice c, const MpiEnvironment& env);

// The world communicator of the chosen backend over MPI_COMM_WORLD.
std::unique_ptr<Communicator> make_world(Backend b, const MpiEnvironment& env, const NcclSettings& nccl = {});

// Versions (git sha, CUDA runtime/driver, NCCL, cuDNN, MPI), hosts and device names of all ranks.
nlohmann::json provenance(Communicator& world, const MpiEnvironment& env);

}  // namespace layerbench
