// The standard expert-parallel MoE block under mpirun (8 ranks, oversubscribed): every router
// family and every preset scaled down, at EP 1, 2, 4 and 8 with uneven token splits, against the
// single-rank CPU oracle (moe/standard/std_reference.hpp) token by token — bit for bit on the host
// backend. With --gpu (one rank per GPU) the cuda block is checked against the same oracle with
// bf16 tolerances. Also: an expert that receives no token, and components run on their own; the
// FP8 dispatch (e4m3 + fp32 scale per 128 channels) against the oracle that quantizes the same
// way, and its byte counts. At EP 1 on one GPU: the device path (no host synchronisation) against
// the host path bit for bit, and the forward captured in a CUDA graph and replayed.
#include "collectives/communicator.hpp"
#include "collectives/error.hpp"
#include "tests/moe/mpi_world.hpp"
#include "moe/config/model.hpp"
#include "moe/fp8.hpp"
#include "moe/init.hpp"
#include "moe/standard/fp8_dispatch.hpp"
#include "moe/standard/std_block.hpp"
#include "moe/standard/std_reference.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
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
                                          std::uint64_t seed, std::unique_ptr<StdBlock>* keep = nullptr,
                                          DispatchPrecision dispatch = DispatchPrecision::act,
                                          std::vector<float>* out = nullptr,
                                          ExpertPrecision experts = ExpertPrecision::act) {
  StdPlan plan = make_std_plan(m, group.rank(), group.size(), splits);
  plan.dispatch = dispatch;
  plan.experts = plan.shared = experts;
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
  StdReference ref(m, seed, 0, bf16, dispatch, experts, m.shared.intermediate() > 0 ? experts : ExpertPrecision::act);
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
  if (out) *out = ys;
  if (keep) *keep = std::move(owned);
  return {err[0], err[1]};
}

// An FP8 variant's output (y8) against the act-type one (ya), over the group: changed (the
// quantization ran), and by a little (e4m3 keeps 3 mantissa bits).
void expect_small_change(Communicator& g, const std::vector<float>& y8, const std::vector<float>& ya,
                         const std::string& what) {
  double diff[2] = {0, 0};
  for (std::size_t i = 0; i < ya.size(); ++i) {
    diff[0] = std::max(diff[0], std::fabs(double(y8[i]) - ya[i]));
    diff[1] = std::max(diff[1], std::fabs(double(ya[i])));
  }
  g.control_max(diff);
  EXPECT_GT(diff[0], 0.0) << what << " changed nothing";
  EXPECT_LT(diff[0], 0.25 * diff[1]) << what << " is far from the act-type output";
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

// FP8 dispatch at EP 1, 2 and 4 (uneven splits), every family, against the oracle that quantizes
// each token's routed-expert input the same way: bit for bit on the host. The output differs
// from the act-type dispatch's (the quantization ran) by a little (e4m3 keeps 3 mantissa bits).
TEST_F(StdBlockTest, Fp8DispatchMatchesTheOracleAtEp1To4) {
  const int W = g_env->world->size();
  for (int p : {1, 2, 4}) {  // 1: the one-GPU run's coverage
    if (p > W || W % p != 0) continue;
    auto g = subgroup(p);
    for (auto [name, m] : families()) {
      if (m.experts % p != 0) continue;
      for (std::int64_t hidden : {m.hidden, std::int64_t{200}}) {  // 200: a full group of 128 and a partial one of 72
        m.hidden = hidden;
        std::vector<float> y8, ya;
        const auto [err, scale] = block_vs_oracle(*g, m, uneven(p), 5 + p, nullptr, DispatchPrecision::fp8, &y8);
        ASSERT_GT(scale, 0.0) << name;
        const double tol = g_env->gpu ? 3e-2 * scale + 1e-3 : 0.0;
        EXPECT_LE(err, tol) << name << " at EP " << p << ", hidden " << hidden << " (|oracle| max " << scale << ")";
        (void)block_vs_oracle(*g, m, uneven(p), 5 + p, nullptr, DispatchPrecision::act, &ya);
        expect_small_change(*g, y8, ya, name + ": the FP8 dispatch");
      }
    }
  }
}

// FP8 experts (routed and shared), both recipes, at EP 1, 2 and 4 (uneven splits), every family
// the kernels take, against the oracle that quantizes the weights, each MLP's rows and its
// activation the same way: bit for bit on the host; on a GPU within the bf16 tolerance. Shapes
// with K off the 128-element block (a partial scale group). The output differs from the BF16
// experts' by a little (the quantization ran).
TEST_F(StdBlockTest, Fp8ExpertsMatchTheOracleAtEp1To4) {
  const int W = g_env->world->size();
  struct Size { std::int64_t hidden, inter, shared; };
  const std::vector<Size> sizes = g_env->gpu ? std::vector<Size>{{256, 144, 48}}
                                             : std::vector<Size>{{32, 16, 24}, {200, 144, 40}};
  int ran = 0;
  for (int p : {1, 2, 4}) {  // 1: the one-GPU run's coverage
    if (p > W || W % p != 0) continue;
    auto g = subgroup(p);
    for (auto [name, m] : families()) {
      if (m.experts % p != 0) continue;
      for (const auto& z : sizes)
        for (auto e : {ExpertPrecision::fp8_block, ExpertPrecision::fp8_rowwise}) {
          m.hidden = z.hidden;
          m.moe_intermediate = z.inter;
          if (m.shared.count > 0) m.shared.size = z.shared / m.shared.count;
          if (g_env->gpu && (!cuda_fp8_experts_unsupported({e, m.experts / p, m.hidden, m.moe_intermediate, 1024, m.activation}).empty() ||
                             !cuda_fp8_experts_unsupported({e, 1, m.hidden, std::max<std::int64_t>(m.shared.intermediate(), 16), 1024, m.activation}).empty()))
            continue;  // a shape or activation the FP8 kernels do not take (UsageError: tested below)
          std::vector<float> y8, ya;
          const auto [err, scale] = block_vs_oracle(*g, m, uneven(p), 11 + p, nullptr, DispatchPrecision::act, &y8, e);
          ASSERT_GT(scale, 0.0) << name;
          const double tol = g_env->gpu ? 3e-2 * scale + 1e-3 : 0.0;
          EXPECT_LE(err, tol) << name << " " << to_string(e) << " at EP " << p << ", hidden " << z.hidden
                              << " (|oracle| max " << scale << ")";
          (void)block_vs_oracle(*g, m, uneven(p), 11 + p, nullptr, DispatchPrecision::act, &ya);
          expect_small_change(*g, y8, ya, name + ": the FP8 experts");
          ++ran;
        }
    }
  }
  EXPECT_GT(ran, 0) << "no family ran with FP8 experts";
}

// On CUDA a shape the FP8 kernels do not take is a UsageError at construction naming the part,
// the recipe and the kernels' limit (never a BF16 layer timed in its place).
TEST_F(StdBlockTest, Fp8ExpertsRefuseWhatTheKernelsDoNotTake) {
  if (!g_env->gpu) GTEST_SKIP() << "the host backend runs every shape";
  auto g = subgroup(1);
  Model m = scaled("qwen3-30b-a3b");
  m.hidden = 200;  // not a multiple of 16
  StdPlan plan = make_std_plan(m, 0, 1, {8});
  plan.experts = ExpertPrecision::fp8_block;
  try {
    StdBlock b(m, plan, *g, ops_for(*g), 3);
    FAIL() << "hidden 200 was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("the routed experts in fp8-block"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("multiples of 16"), std::string::npos) << e.what();
  }
}

// The byte counts of the last dispatch and combine: per copy hidden e4m3 bytes + 4 per 128
// channels (FP8) or hidden x act size, the copies this rank sent; the component table declares
// the same; over the group, the bytes sent are the bytes received.
TEST_F(StdBlockTest, DispatchAndCombineBytes) {
  const int W = g_env->world->size();
  for (int p : {1, 2, 4}) {  // 1: the one-GPU run's coverage
    if (p > W || W % p != 0) continue;
    auto g = subgroup(p);
    for (std::int64_t hidden : {32, 128, 200, 7168}) {
      for (auto d : {DispatchPrecision::act, DispatchPrecision::fp8}) {
        Model m = scaled("deepseek-v3");
        m.hidden = hidden;
        StdPlan plan = make_std_plan(m, g->rank(), p, uneven(p));
        plan.dispatch = d;
        StdBlock b(m, plan, *g, ops_for(*g), 13);
        const Stream s = g->device().compute_stream();
        Buffer x = b.make_activation(), y = b.make_activation();
        b.fill_input(x.data(), 13, s);
        b.forward(x.data(), y.data(), s);
        g->device().synchronize(s);
        const auto act = static_cast<std::int64_t>(b.act_bytes());
        const std::int64_t groups = (hidden + 127) / 128;
        const std::int64_t row = d == DispatchPrecision::fp8 ? hidden + 4 * groups : hidden * act;
        EXPECT_EQ(b.dispatch_precision(), d);
        EXPECT_EQ(b.dispatch_row_bytes(), row) << hidden;
        EXPECT_EQ(b.combine_row_bytes(), hidden * act) << hidden;
        EXPECT_EQ(b.sent_rows(), plan.tokens * m.topk);
        EXPECT_EQ(b.dispatch_bytes(), plan.tokens * m.topk * row) << hidden;
        EXPECT_EQ(b.combine_bytes(), b.received_rows() * hidden * act) << hidden;
        for (const auto& c : b.components()) {
          if (c.name == "ep_dispatch") {
            EXPECT_EQ(c.work.bytes, double(b.dispatch_bytes())) << hidden;
          } else if (c.name == "ep_combine") {
            EXPECT_EQ(c.work.bytes, double(b.combine_bytes())) << hidden;
          }
        }
        double sums[3] = {double(b.dispatch_bytes()), double(b.received_rows() * row), double(plan.tokens)};
        g->control_sum(sums);
        EXPECT_EQ(sums[0], sums[1]);
        EXPECT_EQ(sums[0], sums[2] * double(m.topk * row));
        if (hidden == 7168 && d == DispatchPrecision::fp8) {  // DeepEP's figure: 7392 of BF16's 14336 bytes
          EXPECT_EQ(row, 7392);
        }
        EXPECT_EQ(b.received_fp8() != nullptr, d == DispatchPrecision::fp8);
      }
    }
  }
}

// The received FP8 rows stay available (for experts that read FP8): on the host, every one is a
// token of the group in fp8::quantize's 1x128 recipe (e4m3 bytes, then the scales of the full
// group of 128 channels and of the partial one of 72), byte for byte.
TEST_F(StdBlockTest, ReceivedFp8RowsAreQuantizedTokens) {
  if (g_env->gpu) GTEST_SKIP() << "reads the packed rows on the host";
  const int p = std::min(g_env->world->size(), 4);
  auto g = subgroup(p);
  Model m = scaled("qwen3-30b-a3b");
  m.hidden = 200;
  const std::int64_t H = m.hidden;
  StdPlan plan = make_std_plan(m, g->rank(), p, uneven(p));
  plan.dispatch = DispatchPrecision::fp8;
  StdBlock b(m, plan, *g, ops_for(*g), 21);
  const Stream s = g->device().compute_stream();
  Buffer x = b.make_activation(), y = b.make_activation();
  b.fill_input(x.data(), 21, s);
  b.forward(x.data(), y.data(), s);
  // Every token of the group, as fill_input writes it (rows token0.. of one seeded matrix).
  std::vector<float> all(static_cast<std::size_t>(plan.global_tokens * H));
  b.ops().dense().fill(all.data(), DType::fp32, {.seed = 21, .tensor = kInput, .scale = std::sqrt(3.0f),
                      .rows = plan.global_tokens, .cols = H, .full_cols = H, .row0 = 0, .ld = H}, s);
  const auto mine = g->device().download<float>(x.data(), static_cast<std::size_t>(plan.tokens * H));
  for (std::int64_t i = 0; i < plan.tokens * H; ++i) ASSERT_EQ(mine[i], all[(plan.token0 * H) + i]);
  const auto q = fp8::quantize(all.data(), 1, plan.global_tokens, H, fp8::Scaling::block_1x128);
  const std::int64_t rb = b.dispatch_row_bytes();
  ASSERT_EQ(rb, H + 8);
  const auto* rows = b.received_fp8();
  ASSERT_NE(rows, nullptr);
  for (std::int64_t i = 0; i < b.received_rows(); ++i) {
    const std::uint8_t* r = rows + i * rb;
    bool found = false;
    for (std::int64_t t = 0; t < plan.global_tokens && !found; ++t)
      found = std::equal(r, r + H, q.q.begin() + t * H) && fp8::dispatch_row_scale(r, H, 0) == q.scales[2 * t] &&
              fp8::dispatch_row_scale(r, H, 1) == q.scales[2 * t + 1];
    EXPECT_TRUE(found) << "received row " << i << " is no quantized token";
  }
  double n = double(b.received_rows());
  g->control_sum(std::span<double>(&n, 1));
  EXPECT_EQ(n, double(plan.global_tokens * m.topk));
}

// The profile's sampled check (check_std_block) reads the dispatch precision from the block.
TEST_F(StdBlockTest, SampledCheckOfAnFp8Block) {
  const int p = std::min(g_env->world->size(), 4);
  auto g = subgroup(p);
  Model m = scaled("deepseek-v3");
  m.hidden = 160;
  StdPlan plan = make_std_plan(m, g->rank(), p, uneven(p));
  plan.dispatch = DispatchPrecision::fp8;
  StdBlock b(m, plan, *g, ops_for(*g), 17);
  const Stream s = g->device().compute_stream();
  Buffer x = b.make_activation(), y = b.make_activation();
  b.fill_input(x.data(), 17, s);
  b.forward(x.data(), y.data(), s);
  g->device().synchronize(s);
  const StdCheck c = check_std_block(b, x.data(), y.data(), 17, 8);
  EXPECT_TRUE(c.ok()) << c.to_json().dump();
  EXPECT_GT(c.sampled, 0);
  if (!g_env->gpu) {
    EXPECT_EQ(c.max_abs_err, 0.0);  // the host block is the oracle's order of operations
  }
}

TEST_F(StdBlockTest, Fp8DispatchNeedsAnEvenHidden) {
  Model m = scaled("mixtral-8x7b");
  m.hidden = 33;
  EXPECT_NO_THROW(check_dispatch(m, DispatchPrecision::act));
  EXPECT_THROW(check_dispatch(m, DispatchPrecision::fp8), UsageError);
  StdPlan plan = make_std_plan(m, 0, 1, {2});
  plan.dispatch = DispatchPrecision::fp8;
  auto g = subgroup(1);
  EXPECT_THROW(StdBlock(m, plan, *g, ops_for(*g), 1), UsageError);
}

// The host path reads back three times per forward (the ids, the exchanged counts, the expert-major
// plan); the host backend and EP > 1 say why they have no device path.
TEST_F(StdBlockTest, HostPathCountsItsHostSynchronisations) {
  const int p = std::min(g_env->world->size(), 2);
  auto g = subgroup(p);
  const Model m = scaled("qwen3-30b-a3b");
  StdBlock b(m, make_std_plan(m, g->rank(), p, uneven(p)), *g, ops_for(*g), 5);
  const Stream s = g->device().compute_stream();
  Buffer x = b.make_activation(), y = b.make_activation();
  b.fill_input(x.data(), 5, s);
  const auto before = b.host_syncs();
  b.forward(x.data(), y.data(), s);
  EXPECT_EQ(b.host_syncs() - before, 3);
  EXPECT_FALSE(b.device_path());
  const std::string why = b.graph_blocker();
  if (!g_env->gpu)
    EXPECT_EQ(why, "the host backend runs the layer on the host");
  else if (p > 1)
    EXPECT_NE(why.find("at EP 2 the dispatch is sized on the host"), std::string::npos) << why;
  else  // the per-expert or cuBLAS grouped path chosen above (or a device without wgmma)
    EXPECT_FALSE(why.empty());
}

// A preset at a shape the grouped wgmma kernels take (hidden and intermediate multiples of 8 that
// leave partial column blocks).
Model scaled_for_wgmma(const std::string& name) {
  Model m = scaled(name);
  m.hidden = 264;
  m.moe_intermediate = 136;
  return m;
}

std::vector<std::uint8_t> bytes_of(Communicator& c, const Buffer& b) {
  c.device().synchronize(c.device().compute_stream());
  return c.device().download<std::uint8_t>(b.data(), b.bytes());
}

// EP 1 on one GPU: the device path (permutation and counts on the device, the grouped wgmma
// kernels from the device counts) equals the host path bit for bit with no host synchronisation,
// matches the oracle, runs component by component, and captured in a CUDA graph replays the same
// output -- and follows a new input (new routing, new counts) written into the captured buffers.
TEST_F(StdBlockTest, DevicePathEqualsTheHostPathAndReplaysInAGraph) {
  if (!g_env->gpu) GTEST_SKIP() << "a GPU test (--gpu)";
  auto g = subgroup(1);  // every rank on its own GPU, EP 1
  Device& dev = g->device();
  const Stream s = dev.compute_stream();
  for (const char* name : {"deepseek-v3", "qwen3-30b-a3b", "gpt-oss-120b"}) {
    SCOPED_TRACE(name);
    const Model m = scaled_for_wgmma(name);
    const std::int64_t N = 301;
    auto ops = make_cuda_std_ops(dev);
    ops->set_expert_path(StdExpertPath::wgmma);
    StdBlock b(m, make_std_plan(m, 0, 1, {N}), *g, std::move(ops), 21);
    if (const auto why = b.graph_blocker(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(b.device_path());
    Buffer x = b.make_activation(), y_host = b.make_activation(), y_dev = b.make_activation(),
           y_parts = b.make_activation(), y_graph = b.make_activation();
    b.fill_input(x.data(), 21, s);

    b.set_device_path(false);
    auto syncs = b.host_syncs();
    b.forward(x.data(), y_host.data(), s);
    EXPECT_EQ(b.host_syncs() - syncs, 3);
    const auto rows = b.local_expert_rows();
    b.set_device_path(true);
    syncs = b.host_syncs();
    b.forward(x.data(), y_dev.data(), s);
    EXPECT_EQ(b.host_syncs() - syncs, 0) << "the device path reads nothing back";
    const auto want = bytes_of(*g, y_host);
    EXPECT_EQ(bytes_of(*g, y_dev), want) << "device path vs host path";
    EXPECT_EQ(b.local_expert_rows(), rows) << "the device counts are the host path's";

    // the oracle, token by token (bf16 tolerances; near ties skipped)
    {
      const auto H = static_cast<std::size_t>(m.hidden);
      const auto xs = to_float(*g, x.data(), N * H, true), ys = to_float(*g, y_dev.data(), N * H, true);
      const auto ids = b.routed_ids();
      StdReference ref(m, 21, 0, true);
      std::vector<float> w(H);
      std::vector<std::int32_t> rid(static_cast<std::size_t>(m.topk));
      double err = 0, scale = 0;
      for (std::int64_t t = 0; t < N; ++t) {
        const float margin = ref.token(xs.data() + t * H, w.data(), rid.data());
        bool same = true;
        for (std::int64_t j = 0; j < m.topk; ++j) same = same && rid[j] == ids[t * m.topk + j];
        if (!same && margin < 1e-2f) continue;
        EXPECT_TRUE(same) << "token " << t;
        for (std::size_t q = 0; q < H; ++q) {
          err = std::max(err, std::fabs(double(ys[t * H + q]) - w[q]));
          scale = std::max(scale, std::fabs(double(w[q])));
        }
      }
      ASSERT_GT(scale, 0.0);
      EXPECT_LE(err, 3e-2 * scale + 1e-3) << "|oracle| max " << scale;
    }

    // the device path's table (no exchange, no host clock), component by component
    int steps = 0;
    for (const auto& c : b.components()) {
      EXPECT_NE(c.role, reports::Role::communication) << c.name;
      EXPECT_FALSE(c.host_clock) << c.name;
      if (c.role == reports::Role::total) continue;
      b.run_component(c.name, s);
      ++steps;
    }
    EXPECT_EQ(steps, m.shared.count > 0 ? 5 : 4);
    b.finish(y_parts.data(), s);
    EXPECT_EQ(bytes_of(*g, y_parts), want) << "components run alone";
    EXPECT_THROW(b.run_component("ep_dispatch", s), Error);

    // captured once, replayed: the same bytes, and no host synchronisation while capturing
    syncs = b.host_syncs();
    auto graph = dev.capture(s, [&](Stream st) { b.forward(x.data(), y_graph.data(), st); });
    EXPECT_EQ(b.host_syncs() - syncs, 0);
    graph->launch(s);
    EXPECT_EQ(bytes_of(*g, y_graph), want) << "graph replay vs host path";
    // a new input in the captured buffer: the replay routes it afresh (other counts)
    b.fill_input(x.data(), 22, s);
    graph->launch(s);
    const auto replayed = bytes_of(*g, y_graph);
    b.set_device_path(false);
    b.forward(x.data(), y_host.data(), s);
    EXPECT_NE(b.local_expert_rows(), rows) << "the second input routes differently";
    EXPECT_EQ(replayed, bytes_of(*g, y_host)) << "graph replay on a new input vs the host path";
  }
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
