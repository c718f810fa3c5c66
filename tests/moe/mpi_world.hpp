#pragma once
// The MPI test mains of the MoE layers: one world communicator (NCCL on this node's GPU with
// --gpu when one is visible, else MPI on the host) and a GoogleTest run whose exit code is the
// worst over the ranks (only rank 0 prints).
#include "collectives/communicator.hpp"
#include "collectives/device.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>

namespace layerbench::moe::testing_mpi {

inline std::unique_ptr<Communicator> make_world(bool gpu) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (gpu && cuda_device_count() > 0) {
    int local = 0;
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    return make_nccl_communicator(MPI_COMM_WORLD, std::shared_ptr<Device>(make_cuda_device(local)));
  }
  return make_mpi_communicator(MPI_COMM_WORLD, std::shared_ptr<Device>(make_host_device()));
}

// RUN_ALL_TESTS on every rank; the worst exit code over the ranks.
inline int run_all_tests_on_every_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) ::testing::GTEST_FLAG(output) = "";
  const int rc = RUN_ALL_TESTS();
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

}  // namespace layerbench::moe::testing_mpi
