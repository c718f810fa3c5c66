// The standard expert-parallel MoE block under mpirun (8 ranks, oversubscribed): every router
// family and every preset scaled down, at EP 1, 2, 4 and 8 with uneven token splits, against the
// single-rank CPU oracle (moe/standard/std_reference.hpp) token by token — bit for bit on the host
// backend. With --gpu (one rank per GPU) the cuda block is checked against the same oracle with
// bf16 tolerances. Also: an expert that receives no token, and components run on their own.
#include "collectives/communicator.hpp"
#include "collectives/error.hpp"
#include "tests/moe/mpi_world.hpp"
#include "moe/config/model.hpp"
#include "moe/standard/std_block.hpp"
#include "moe/standard/std_reference.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace layerbench;
using namespace layerbench::moe;

namespace {

struct Env {
  std::unique_ptr<Communicator> world;
  bool gpu = false;
  bool grouped = false;  // --grouped: the CUDA expert MLPs as cuBLAS grouped GEMMs
};
Env* g_env = nullptr;

// A preset scaled down: same router, activation and shared structure, small sizes.
Model scaled(const std::string& name) {
  Model m = preset(name);
  m.hidden = 32;
  m.moe_intermediate = 16;
  if (m.shared.count > 0) m.shared.size = 24;
  m.experts = m.router.groups > 1 ? 16 : 8;
  m.topk = std::min<std::int64_t>(m.topk, m.router.groups > 1 ? 4 : 3);
  if (m.router.groups > 1) {
    m.router.groups = 4;
    m.router.topk_groups = 2;
  }
  m.block = Block::standard;
  m.moe_heads = 1;
  return m;
}

// Every router family (and the shared-expert variants) on a small shape.
std::vector<std::pair<std::string, Model>> families() {
  std::vector<std::pair<std::string, Model>> out;
  for (const char* p : {"deepseek-v3", "qwen3-30b-a3b", "mixtral-8x7b", "gpt-oss-120b", "glm-4.5-air"})
    out.emplace_back(std::string("preset ") + p, scaled(p));
  Model m = scaled("qwen3-30b-a3b");
  m.router.normalize = false;
  m.shared = {.count = 1, .size = 24, .gate = true};  // Qwen2-MoE: un-normalised, gated shared expert
  out.emplace_back("softmax, no renorm, gated shared", m);
  m = scaled("deepseek-v3");
  m.router = {.score = Score::softmax, .groups = 4, .topk_groups = 2, .group_score = GroupScore::max, .scale = 1.0};
  m.shared = {.count = 2, .size = 12};
  out.emplace_back("softmax, group_limited_greedy (DeepSeek-V2)", m);
  m = scaled("mixtral-8x7b");
  m.router = {.score = Score::sigmoid, .topk_before_score = true};
  m.topk = 1;
  m.shared = {.count = 1, .size = 16};
  out.emplace_back("sigmoid of the top-1 logit (Llama-4)", m);
  return out;
}

std::unique_ptr<StdOps> ops_for(Communicator& c) {
  if (c.backend() != Backend::cuda) return make_host_std_ops();
  auto ops = make_cuda_std_ops(c.device());
  ops->set_expert_path(g_env->grouped ? StdExpertPath::grouped : StdExpertPath::per_expert);
  return ops;
}

std::vector<float> to_float(Communicator& c, const void* p, std::size_t n, bool bf16) {
  if (!bf16) return c.device().download<float>(p, n);
  const auto raw = c.device().download<std::uint16_t>(p, n);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = bf16_bits_to_float(raw[i]);
  return v;
}

// The block on `group` (uneven splits) against the oracle, token by token. Returns the rank-max
// error and |oracle| max; counts near ties skipped (bf16 only).
std::pair<double, double> block_vs_oracle(Communicator& group, const Model& m, const std::vector<std::int64_t>& splits,
                                          std::uint64_t seed, std::unique_ptr<StdBlock>* keep = nullptr) {
  const StdPlan plan = make_std_plan(m, group.rank(), group.size(), splits);
  auto owned = std::make_unique<StdBlock>(m, plan, group, ops_for(group), seed);
  StdBlock& b = *owned;
  const Stream s = group.device().compute_stream();
  Buffer x = b.make_activation(), y = b.make_activation();
  b.fill_input(x.data(), seed, s);
  b.forward(x.data(), y.data(), s);
  group.device().synchronize(s);
  const bool bf16 = b.act_bytes() == 2;
  const auto H = static_cast<std::size_t>(m.hidden);
  const auto xs = to_float(group, x.data(), plan.tokens * H, bf16);
  const auto ys = to_float(group, y.data(), plan.tokens * H, bf16);
  const auto ids = b.routed_ids();
  StdReference ref(m, seed, 0, bf16);
  std::vector<float> want(H);
  std::vector<std::int32_t> rid(static_cast<std::size_t>(m.topk));
  double err[2] = {0, 0};
  for (std::int64_t t = 0; t < plan.tokens; ++t) {
    const float margin = ref.token(xs.data() + t * H, want.data(), rid.data());
    bool same = true;
    for (std::int64_t j = 0; j < m.topk; ++j) same = same && rid[j] == ids[t * m.topk + j];
    if (!same && bf16 && margin < 1e-2f) continue;  // a near tie decided differently in bf16
    if (!same) err[0] = INFINITY;
    for (std::size_t q = 0; q < H; ++q) {
      err[0] = std::max(err[0], std::fabs(double(ys[t * H + q]) - want[q]));
      err[1] = std::max(err[1], std::fabs(double(want[q])));
    }
  }
  group.control_max(err);
  if (keep) *keep = std::move(owned);
  return {err[0], err[1]};
}

std::unique_ptr<Communicator> subgroup(int size) {
  Communicator& w = *g_env->world;
  return w.split(w.rank() / size, w.rank());
}

std::vector<std::int64_t> uneven(int p) {
  std::vector<std::int64_t> v;
  for (int r = 0; r < p; ++r) v.push_back(2 + (3 * r) % 5);  // 2, 5, 3, 6, 4, 2, ...
  return v;
}

}  // namespace

class StdBlockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (g_env->gpu && cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

// Every family at EP 1, 2, 4, 8 (as many as the world holds), uneven splits.
TEST_F(StdBlockTest, EveryFamilyMatchesTheOracleAtEveryEpSize) {
  const int W = g_env->world->size();
  for (int p : {1, 2, 4, 8}) {
    if (p > W || W % p != 0) continue;
    auto g = subgroup(p);
    for (const auto& [name, m] : families()) {
      if (m.experts % p != 0) continue;
      const auto [err, scale] = block_vs_oracle(*g, m, uneven(p), 7 + p);
      ASSERT_GT(scale, 0.0) << name;
      // Host: the same operations in the same order as the oracle, so exactly equal.
      const double tol = g_env->gpu ? 3e-2 * scale + 1e-3 : 0.0;
      EXPECT_LE(err, tol) << name << " at EP " << p << " (|oracle| max " << scale << ")";
    }
  }
}

// A token count so small that most experts receive nothing (one expert gets every copy of the
// only token on a rank): the block must skip them and still match.
TEST_F(StdBlockTest, ExpertsWithoutTokensAreNormal) {
  const int W = g_env->world->size();
  const int p = std::min(W, 4);
  auto g = subgroup(p);
  Model m = scaled("qwen3-30b-a3b");
  m.experts = 16;
  m.topk = 2;
  std::unique_ptr<StdBlock> b;
  const auto [err, scale] = block_vs_oracle(*g, m, std::vector<std::int64_t>(static_cast<std::size_t>(p), 1), 3, &b);
  EXPECT_LE(err, g_env->gpu ? 3e-2 * scale + 1e-3 : 0.0);
  double empty = 0;
  for (auto v : b->local_expert_rows()) empty += v == 0;
  g->control_sum(std::span<double>(&empty, 1));
  EXPECT_GE(empty, 16 - 2 * p) << "1 token x top-2 per rank leaves most experts empty";
}

// Each component runs on its own over the block's buffers and leaves the result unchanged; the
// table declares one total and bytes for every collective.
TEST_F(StdBlockTest, ComponentsRunAloneAndDeclareTheirWork) {
  const int p = std::min(g_env->world->size(), 2);
  auto g = subgroup(p);
  const Model m = scaled("deepseek-v3");
  const StdPlan plan = make_std_plan(m, g->rank(), p, uneven(p));
  StdBlock b(m, plan, *g, ops_for(*g), 11);
  const Stream s = g->device().compute_stream();
  Buffer x = b.make_activation(), y = b.make_activation(), y2 = b.make_activation();
  b.fill_input(x.data(), 11, s);
  b.forward(x.data(), y.data(), s);
  int totals = 0;
  for (const auto& c : b.components()) {
    if (c.role == reports::Role::total) {
      ++totals;
      continue;
    }
    if (c.role == reports::Role::communication) {
      EXPECT_GT(c.work.bytes, 0) << c.name;
    }
    EXPECT_FALSE(c.parent.empty()) << c.name;
    b.run_component(c.name, s);
  }
  EXPECT_EQ(totals, 1);
  b.finish(y2.data(), s);
  g->device().synchronize(s);
  const auto a = g->device().download<std::uint8_t>(y.data(), y.bytes());
  const auto c = g->device().download<std::uint8_t>(y2.data(), y2.bytes());
  EXPECT_EQ(a, c);
  EXPECT_THROW(b.run_component("no_such_component", s), Error);
}

TEST_F(StdBlockTest, ExpertsMustDivideOverTheRanks) {
  Model m = scaled("mixtral-8x7b");
  m.experts = 6;
  EXPECT_THROW(make_std_plan(m, 0, 4, {1, 1, 1, 1}), UsageError);
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  bool gpu = false, grouped = false;
  for (int i = 1; i < argc; ++i) {
    gpu = gpu || std::string(argv[i]) == "--gpu";
    grouped = grouped || std::string(argv[i]) == "--grouped";
  }
  int rc = 0;
  {
    Env env;
    env.gpu = gpu;
    env.grouped = grouped;
    env.world = testing_mpi::make_world(gpu);
    g_env = &env;
    rc = testing_mpi::run_all_tests_on_every_rank();
    g_env = nullptr;
  }
  MPI_Finalize();
  return rc;
}
