// Runs under mpirun (2 and 4 ranks) on the host backend, or on GPUs with --backend=cuda.
#include "collectives/communicator.hpp"
#include "collectives/grid.hpp"
#include "collectives/runtime.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

using namespace layerbench;

namespace {
MpiEnvironment* g_env = nullptr;     // set once in main, read by the fixture
Backend g_backend = Backend::host;

class Collectives : public ::testing::Test {
 protected:
  void SetUp() override {
    if (g_backend == Backend::cuda && cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    world = make_world(g_backend, *g_env);
  }
  std::unique_ptr<Communicator> world;
  Device& dev() { return world->device(); }
  Stream s() { return dev().compute_stream(); }
};

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}
}  // namespace

TEST_F(Collectives, UnevenAllToAllv) {
  const int n = world->size(), me = world->rank();
  // Rank p sends (p + 1) * (q + 2) int64 values to rank q, each tagged with (p, q, index).
  auto cnt = [](int p, int q) { return static_cast<std::size_t>((p + 1) * (q + 2)); };
  std::vector<std::size_t> sc(n), sd(n), rc(n), rd(n);
  for (int q = 0; q < n; ++q) {
    sc[q] = cnt(me, q);
    rc[q] = cnt(q, me);
    if (q) {
      sd[q] = sd[q - 1] + sc[q - 1];
      rd[q] = rd[q - 1] + rc[q - 1];
    }
  }
  std::vector<std::int64_t> send(sd[n - 1] + sc[n - 1]);
  for (int q = 0; q < n; ++q)
    for (std::size_t i = 0; i < sc[q]; ++i) send[sd[q] + i] = me * 1000000 + q * 1000 + static_cast<std::int64_t>(i);
  auto dsend = dev().upload(send);
  auto drecv = dev().alloc((rd[n - 1] + rc[n - 1]) * sizeof(std::int64_t));
  world->all_to_allv(dsend.data(), sc, sd, drecv.data(), rc, rd, DType::int64, s());
  const auto recv = dev().download<std::int64_t>(drecv.data(), rd[n - 1] + rc[n - 1]);
  for (int p = 0; p < n; ++p)
    for (std::size_t i = 0; i < rc[p]; ++i)
      ASSERT_EQ(recv[rd[p] + i], p * 1000000 + me * 1000 + static_cast<std::int64_t>(i)) << "from " << p;
}

TEST_F(Collectives, AsyncAllToAllvMatchesSync) {
  const int n = world->size();
  const std::size_t per = 64;
  std::vector<std::size_t> c(n, per), d(n);
  for (int q = 0; q < n; ++q) d[q] = per * q;
  const auto host = random_floats(per * n, 7u + world->rank());
  auto src = dev().upload(host);
  auto a = dev().alloc(per * n * 4), b = dev().alloc(per * n * 4);
  world->all_to_allv(src.data(), c, d, a.data(), c, d, DType::fp32, s());
  auto h = world->all_to_allv_async(src.data(), c, d, b.data(), c, d, DType::fp32, s());
  h->wait(s());
  EXPECT_EQ(dev().download<float>(a.data(), per * n), dev().download<float>(b.data(), per * n));
}

TEST_F(Collectives, AllReduceAndReduceScatterMatchSerialReference) {
  const int n = world->size(), me = world->rank();
  const std::size_t count = 1000 * static_cast<std::size_t>(n);
  std::vector<std::vector<float>> all;
  for (int r = 0; r < n; ++r) all.push_back(random_floats(count, 100u + r));
  std::vector<double> ref(count, 0.0);
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < count; ++i) ref[i] += all[r][i];
  auto in = dev().upload(all[me]);
  auto out = dev().alloc(count * 4);
  world->all_reduce(in.data(), out.data(), count, DType::fp32, s());
  const auto got = dev().download<float>(out.data(), count);
  for (std::size_t i = 0; i < count; ++i) ASSERT_NEAR(got[i], ref[i], 1e-5) << i;

  const std::size_t block = count / n;
  auto rs = dev().alloc(block * 4);
  world->reduce_scatter(in.data(), rs.data(), block, DType::fp32, s());
  const auto part = dev().download<float>(rs.data(), block);
  for (std::size_t i = 0; i < block; ++i) ASSERT_NEAR(part[i], ref[me * block + i], 1e-5) << i;

  // In place (NCCL convention): recv = send + rank * block.
  auto inplace = dev().upload(all[me]);
  world->reduce_scatter(inplace.data(), inplace.as<float>() + me * block, block, DType::fp32, s());
  const auto ip = dev().download<float>(inplace.as<float>() + me * block, block);
  for (std::size_t i = 0; i < block; ++i) ASSERT_NEAR(ip[i], ref[me * block + i], 1e-5) << i;
}

TEST_F(Collectives, Bf16AllReduceRoundsTheFp32Sum) {
  const int n = world->size(), me = world->rank();
  const std::size_t count = 257;
  std::vector<std::uint16_t> mine(count);
  for (std::size_t i = 0; i < count; ++i) mine[i] = float_to_bf16_bits(static_cast<float>(me + 1) * 0.5f + static_cast<float>(i % 7));
  auto in = dev().upload(mine);
  world->all_reduce(in.data(), in.data(), count, DType::bf16, s());
  const auto got = dev().download<std::uint16_t>(in.data(), count);
  for (std::size_t i = 0; i < count; ++i) {
    float expect = 0;
    for (int r = 0; r < n; ++r) expect += static_cast<float>(r + 1) * 0.5f + static_cast<float>(i % 7);
    EXPECT_NEAR(bf16_bits_to_float(got[i]), expect, std::abs(expect) / 64) << i;
  }
}

TEST_F(Collectives, AllGatherInPlaceAndBroadcast) {
  const int n = world->size(), me = world->rank();
  const std::size_t count = 33;
  std::vector<std::int64_t> full(count * n, -1);
  for (std::size_t i = 0; i < count; ++i) full[me * count + i] = me * 100 + static_cast<std::int64_t>(i);
  auto buf = dev().upload(full);
  world->all_gather(buf.as<std::int64_t>() + me * count, buf.data(), count, DType::int64, s());
  const auto got = dev().download<std::int64_t>(buf.data(), count * n);
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(got[r * count + i], r * 100 + static_cast<std::int64_t>(i));

  std::vector<std::int64_t> b(count, me == 0 ? 42 : 0);
  auto bb = dev().upload(b);
  world->broadcast(bb.data(), count, DType::int64, 0, s());
  for (auto v : dev().download<std::int64_t>(bb.data(), count)) ASSERT_EQ(v, 42);
}

TEST_F(Collectives, ScalarExchangeGathersAndCounts) {
  const auto before = world->scalar_exchange_count();
  const auto v = world->scalar_exchange(10 + 3 * world->rank());
  ASSERT_EQ(static_cast<int>(v.size()), world->size());
  for (int r = 0; r < world->size(); ++r) EXPECT_EQ(v[r], 10 + 3 * r);
  EXPECT_EQ(world->scalar_exchange_count(), before + 1);
}

TEST_F(Collectives, RingSendRecv) {
  const int n = world->size(), me = world->rank();
  std::vector<std::int64_t> mine(16, me);
  auto in = dev().upload(mine);
  auto out = dev().alloc(16 * 8);
  world->sendrecv(in.data(), (me + 1) % n, out.data(), (me + n - 1) % n, 16, DType::int64, s());
  for (auto v : dev().download<std::int64_t>(out.data(), 16)) EXPECT_EQ(v, (me + n - 1) % n);
}

TEST_F(Collectives, AsyncRingSendRecvOverlapsAndDelivers) {
  const int n = world->size(), me = world->rank();
  auto in = dev().upload(std::vector<std::int64_t>(64, 100 + me));
  auto out = dev().alloc(64 * 8);
  auto h = world->sendrecv_async(in.data(), (me + 1) % n, out.data(), (me + n - 1) % n, 64, DType::int64, s());
  h->wait(s());
  for (auto v : dev().download<std::int64_t>(out.data(), 64)) EXPECT_EQ(v, 100 + (me + n - 1) % n);
}

// Three levels: rank p = i + inner * (m + middle * o); every group's members in key order.
TEST_F(Collectives, Grid3GroupsHaveTheRightMembers) {
  const int n = world->size(), r = world->rank();
  for (int inner = 1; inner <= n; ++inner)
    for (int middle = 1; inner * middle <= n; ++middle) {
      if (n % (inner * middle)) continue;
      const int outer = n / inner / middle;
      auto g = make_grid3(*world, inner, middle, outer);
      const int i = r % inner, m = (r / inner) % middle, o = r / inner / middle;
      const std::vector<std::pair<Communicator*, std::vector<int>>> groups = {
          {g.inner.get(), [&] { std::vector<int> v; for (int k = 0; k < inner; ++k) v.push_back(k + inner * (m + middle * o)); return v; }()},
          {g.middle.get(), [&] { std::vector<int> v; for (int k = 0; k < middle; ++k) v.push_back(i + inner * (k + middle * o)); return v; }()},
          {g.outer.get(), [&] { std::vector<int> v; for (int k = 0; k < outer; ++k) v.push_back(i + inner * (m + middle * k)); return v; }()}};
      for (const auto& [sub, expect] : groups) {
        ASSERT_EQ(sub->size(), static_cast<int>(expect.size()));
        auto in = dev().upload(std::vector<std::int64_t>{r});
        auto out = dev().alloc(8 * expect.size());
        sub->all_gather(in.data(), out.data(), 1, DType::int64, s());
        const auto members = dev().download<std::int64_t>(out.data(), expect.size());
        for (std::size_t k = 0; k < members.size(); ++k) EXPECT_EQ(members[k], expect[k]);
      }
    }
  EXPECT_THROW(make_grid3(*world, n + 1, 1, 1), std::invalid_argument);
}

TEST_F(Collectives, GridGroupsHaveTheRightMembers) {
  const int n = world->size();
  for (int u = 1; u <= n; ++u) {
    if (n % u) continue;
    auto g = make_grid(*world, u, n / u);
    ASSERT_EQ(g.inner->size(), u);
    ASSERT_EQ(g.outer->size(), n / u);
    for (auto* sub : {g.inner.get(), g.outer.get()}) {
      const std::int64_t me = world->rank();
      auto in = dev().upload(std::vector<std::int64_t>{me});
      auto out = dev().alloc(8 * static_cast<std::size_t>(sub->size()));
      sub->all_gather(in.data(), out.data(), 1, DType::int64, s());
      const auto members = dev().download<std::int64_t>(out.data(), static_cast<std::size_t>(sub->size()));
      const auto expect = sub == g.inner.get() ? g.layout.inner_members(g.layout.inner_group(world->rank()))
                                               : g.layout.outer_members(g.layout.outer_group(world->rank()));
      for (std::size_t i = 0; i < members.size(); ++i) EXPECT_EQ(members[i], expect[i]);
    }
  }
}

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  g_env = &env;
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--backend=cuda") g_backend = Backend::cuda;
  // Only rank 0 prints the gtest banner; failures print on every rank.
  if (env.world_rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int rc = RUN_ALL_TESTS();
  int any = 0;
  MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any;
}
