#include "collectives/communicator.hpp"

#include "collectives/error.hpp"

#include <algorithm>

namespace layerbench {

Communicator::Communicator(MPI_Comm control, std::shared_ptr<Device> device)
    : control_(control), device_(std::move(device)) {
  LB_MPI_CHECK(MPI_Comm_rank(control_, &rank_));
  LB_MPI_CHECK(MPI_Comm_size(control_, &size_));
  {
    MPI_Group mine, world;
    LB_MPI_CHECK(MPI_Comm_group(control_, &mine));
    LB_MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    std::vector<int> local(static_cast<std::size_t>(size_));
    for (int i = 0; i < size_; ++i) local[static_cast<std::size_t>(i)] = i;
    world_ranks_.resize(local.size());
    LB_MPI_CHECK(MPI_Group_translate_ranks(mine, size_, local.data(), world, world_ranks_.data()));
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
  }
  scalar_in_ = device_->alloc(sizeof(std::int64_t));
  scalar_out_ = device_->alloc(sizeof(std::int64_t) * static_cast<std::size_t>(size_));
}

std::vector<std::int64_t> Communicator::scalar_exchange(std::int64_t value) {
  auto& dev = device();
  const Stream s = dev.compute_stream();
  // The value starts on the host as a framework's length would (a shape), is placed in a
  // device tensor, gathered, and read back: H2D + all_gather + D2H + host sync.
  dev.copy_from_host(scalar_in_.data(), &value, sizeof value, s);
  all_gather(scalar_in_.data(), scalar_out_.data(), 1, DType::int64, s);
  std::vector<std::int64_t> out(static_cast<std::size_t>(size()));
  dev.copy_to_host(out.data(), scalar_out_.data(), out.size() * sizeof(std::int64_t), s);
  dev.synchronize(s);
  ++scalar_exchanges_;
  return out;
}

void Communicator::scalar_exchange_device(const void* scratch, void* out, Stream s) {
  all_gather(scratch, out, 1, DType::int64, s);
}

void Communicator::control_barrier() const { LB_MPI_CHECK(MPI_Barrier(control_)); }

void Communicator::control_max(std::span<double> values) const {
  LB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()),
                             MPI_DOUBLE, MPI_MAX, control_));
}

void Communicator::control_sum(std::span<double> values) const {
  LB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()),
                             MPI_DOUBLE, MPI_SUM, control_));
}

std::int64_t Communicator::control_max(std::int64_t v) const {
  std::int64_t out = v;
  LB_MPI_CHECK(MPI_Allreduce(&v, &out, 1, MPI_INT64_T, MPI_MAX, control_));
  return out;
}

void Communicator::control_broadcast(std::span<std::int64_t> values, int root) const {
  LB_MPI_CHECK(MPI_Bcast(values.data(), static_cast<int>(values.size()), MPI_INT64_T, root, control_));
}

std::vector<std::string> Communicator::control_gather_strings(const std::string& s) const {
  const int len = static_cast<int>(s.size());
  std::vector<int> lens(static_cast<std::size_t>(size_));
  LB_MPI_CHECK(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, control_));
  std::vector<int> displs(lens.size(), 0);
  for (std::size_t i = 1; i < lens.size(); ++i) displs[i] = displs[i - 1] + lens[i - 1];
  std::string all(static_cast<std::size_t>(displs.back() + lens.back()), '\0');
  LB_MPI_CHECK(MPI_Allgatherv(s.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(),
                              MPI_CHAR, control_));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < lens.size(); ++i)
    out.push_back(all.substr(static_cast<std::size_t>(displs[i]), static_cast<std::size_t>(lens[i])));
  return out;
}

}  // namespace layerbench

#if !defined(LAYERBENCH_HAVE_CUDA)
namespace layerbench {
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm, std::shared_ptr<Device>, const NcclSettings&) {
  throw UsageError("this build of layerbench has no NCCL backend (configure with nvcc present)");
}
}  // namespace layerbench
#endif
