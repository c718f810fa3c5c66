#include "collectives/runtime.hpp"

#include "collectives/error.hpp"
#include "collectives/watchdog.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <ctime>

#ifndef LAYERBENCH_GIT_SHA
#define LAYERBENCH_GIT_SHA "unknown"
#endif

namespace layerbench {

nlohmann::json cuda_versions();  // runtime_cuda.cpp, or the stub below

#if !defined(LAYERBENCH_HAVE_CUDA)
nlohmann::json cuda_versions() { return nlohmann::json::object(); }
#endif

BackendChoice parse_backend(const std::string& s) {
  if (s == "auto") return BackendChoice::automatic;
  if (s == "cuda") return BackendChoice::cuda;
  if (s == "host") return BackendChoice::host;
  throw UsageError(fmt::format("unknown backend '{}' (expected auto, cuda or host)", s));
}

MpiEnvironment::MpiEnvironment(int* argc, char*** argv) {
  int provided = 0;
  LB_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided));
  // Errors come back as codes that the check macros turn into exceptions with context.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  LB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  LB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  MPI_Comm local;
  LB_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
  LB_MPI_CHECK(MPI_Comm_rank(local, &local_rank_));
  LB_MPI_CHECK(MPI_Comm_size(local, &local_size_));
  MPI_Comm_free(&local);
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  host_ = name;
  set_process_identity(rank_, host_);
  watchdog::start(300);  // the binaries set --timeout once parsed
}

MpiEnvironment::~MpiEnvironment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  watchdog::stop();
  MPI_Finalize();
}

Backend resolve_backend(BackendChoice c, const MpiEnvironment& env) {
  (void)env;
  switch (c) {
    case BackendChoice::host: return Backend::host;
    case BackendChoice::cuda:
    case BackendChoice::automatic: {
      // Every rank must agree, or half the job would wait in NCCL for the other half.
      int have = cuda_device_count() > 0 ? 1 : 0, all = 0;
      LB_MPI_CHECK(MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
      if (c == BackendChoice::cuda && !all)
        throw UsageError("--backend cuda: at least one rank sees no CUDA device (build with nvcc and run where GPUs are visible)");
      return all ? Backend::cuda : Backend::host;
    }
  }
  return Backend::host;
}

std::unique_ptr<Communicator> make_world(Backend b, const MpiEnvironment& env, const NcclSettings& nccl) {
  if (b == Backend::host) {
    std::shared_ptr<Device> dev = make_host_device();
    return make_mpi_communicator(MPI_COMM_WORLD, dev);
  }
  std::shared_ptr<Device> dev = make_cuda_device(env.local_rank());
  return make_nccl_communicator(MPI_COMM_WORLD, dev, nccl);
}

nlohmann::json provenance(Communicator& world, const MpiEnvironment& env) {
  nlohmann::json j;
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  j["date"] = date;
  j["git_sha"] = LAYERBENCH_GIT_SHA;
  j["backend"] = std::string(to_string(world.backend()));
  j["world_size"] = world.size();
  char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(mpi_version, &len);
  std::string mpi(mpi_version, static_cast<std::size_t>(len));
  if (auto nl = mpi.find_first_of(",\n"); nl != std::string::npos) mpi.resize(nl);
  nlohmann::json versions = cuda_versions();
  versions["mpi"] = mpi;
  j["versions"] = versions;
  const auto hosts = world.control_gather_strings(env.host());
  const auto devices = world.control_gather_strings(world.device().name());
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t r = 0; r < hosts.size(); ++r) ranks.push_back({{"rank", r}, {"host", hosts[r]}, {"device", devices[r]}});
  j["ranks"] = ranks;
  return j;
}

}  // namespace layerbench
