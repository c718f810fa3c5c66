// Distributed correctness of the MoE layer under mpirun (4 ranks; cuda with --gpu, 2 ranks):
// SP2 / SP4 with uneven splits and TP2 / TP4 against a single-rank oracle built from the same
// seeded weights; reused split sizes perform zero scalar exchanges and match the per-layer
// exchange bit for bit.
#include "collectives/communicator.hpp"
#include "collectives/error.hpp"
#include "tests/moe/mpi_world.hpp"
#include "moe/magi2/expert_check.hpp"
#include "moe/magi2/layer.hpp"
#include "bench/moe/profile.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

using namespace layerbench;
using namespace layerbench::moe;

namespace {

struct Env {
  std::unique_ptr<Communicator> world;
  bool gpu = false;
  ExpertPath expert_gemm = ExpertPath::automatic;  // --expert-gemm=X selects the cuda expert path
};
Env* g_env = nullptr;

RunConfig small_config(const std::string& layout) {
  RunConfig c;
  c.geo.hidden = 64;
  c.geo.heads = 4;  // d_head 16
  c.geo.experts = 4;
  c.geo.topk = 2;
  c.geo.intermediate = 32;
  c.layout = layout;
  c.tokens = 6;
  c.expert_gemm = g_env->expert_gemm;
  return c;
}

std::vector<float> to_float(MoeLayer& l, const void* p) {
  auto& dev = l.ep().device();
  const auto n = static_cast<std::size_t>(l.plan().local_tokens * l.plan().hidden);
  std::vector<float> out(n);
  if (l.act_bytes() == 4) return dev.download<float>(p, n);
  const auto raw = dev.download<std::uint16_t>(p, n);
  for (std::size_t i = 0; i < n; ++i) out[i] = bf16_bits_to_float(raw[i]);
  return out;
}

// Runs the layer on `group` and the oracle on a one-rank group; returns the rank-max error
// and the rank-max |oracle|.
std::pair<double, double> compare_with_oracle(Communicator& group, RunConfig c) {
  const std::uint64_t seed = 1234;
  auto dist = make_layer(c, group, seed);
  const Stream s = group.device().compute_stream();
  Buffer x = dist->make_activation(), y = dist->make_activation();
  dist->fill_input(x.data(), seed, s);
  dist->forward(x.data(), y.data(), std::span<const std::int64_t>(dist->plan().splits), s);
  const auto got = to_float(*dist, y.data());

  auto solo = group.split(group.rank(), 0);  // a one-rank EP group
  RunConfig oc = c;
  if (c.layout == "sp") {
    std::int64_t total = 0;
    for (auto v : dist->plan().splits) total += v;
    oc.split_sizes = {total};
  }
  auto oracle = make_layer(oc, *solo, seed);
  Buffer ox = oracle->make_activation(), oy = oracle->make_activation();
  oracle->fill_input(ox.data(), seed, s);
  oracle->forward(ox.data(), oy.data(), std::span<const std::int64_t>(oracle->plan().splits), s);
  const auto want = to_float(*oracle, oy.data());

  const auto H = static_cast<std::size_t>(dist->plan().hidden);
  const auto row0 = static_cast<std::size_t>(dist->plan().token0);
  double err[2] = {0, 0};
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double w = want[row0 * H + i];
    err[0] = std::max(err[0], std::fabs(got[i] - w));
    err[1] = std::max(err[1], std::fabs(w));
    if (!std::isfinite(got[i])) err[0] = INFINITY;
  }
  group.control_max(err);
  return {err[0], err[1]};
}

double tolerance(double scale) { return g_env->gpu ? 0.03 * scale + 0.03 : 1e-4 * scale + 1e-5; }

std::unique_ptr<Communicator> subgroup(int size) {
  Communicator& w = *g_env->world;
  return w.split(w.rank() / size, w.rank());
}

}  // namespace

class MoeDistributed : public ::testing::Test {
 protected:
  void SetUp() override {
    if (g_env->gpu && cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(MoeDistributed, SpUnevenSplitsMatchTheOracle) {
  for (int p : {2, 4}) {
    if (g_env->world->size() % p != 0) continue;
    auto g = subgroup(p);
    RunConfig c = small_config("sp");
    c.split_sizes = p == 2 ? std::vector<std::int64_t>{2, 3} : std::vector<std::int64_t>{2, 3, 4, 5};
    const auto [err, scale] = compare_with_oracle(*g, c);
    EXPECT_LE(err, tolerance(scale)) << "SP" << p << " |oracle|max " << scale;
  }
}

TEST_F(MoeDistributed, SpWithPaddedHeadsMatchesTheOracle) {
  if (g_env->world->size() % 4 != 0) GTEST_SKIP() << "needs 4 ranks";
  auto g = subgroup(4);
  RunConfig c = small_config("sp");
  c.geo.heads = 2;  // P = 4 > heads: two ranks own only zero padding
  c.geo.hidden = 32;
  c.split_sizes = {2, 3, 4, 5};
  const auto [err, scale] = compare_with_oracle(*g, c);
  EXPECT_LE(err, tolerance(scale));
}

TEST_F(MoeDistributed, TpMatchesTheOracle) {
  for (int t : {2, 4}) {
    if (g_env->world->size() % t != 0) continue;
    auto g = subgroup(t);
    const auto [err, scale] = compare_with_oracle(*g, small_config("tp"));
    EXPECT_LE(err, tolerance(scale)) << "TP" << t;
  }
}

// The PR's regression: the request-scoped split passed to every layer means no scalar
// exchange at all, with output bit-identical to the legacy per-layer exchange. Dropping the
// split in run_stack (the propagation) makes the count non-zero and this test fail.
TEST_F(MoeDistributed, ReusedSplitSizesPerformNoScalarExchange) {
  Communicator& w = *g_env->world;
  RunConfig c = small_config("sp");
  c.split_sizes.clear();
  for (int r = 0; r < w.size(); ++r) c.split_sizes.push_back(2 + r);
  auto layer = make_layer(c, w, 99);
  const Stream s = w.device().compute_stream();
  Buffer x = layer->make_activation(), a = layer->make_activation(), b = layer->make_activation();
  Buffer x2 = layer->make_activation(), a2 = layer->make_activation(), b2 = layer->make_activation();
  layer->fill_input(x.data(), 99, s);
  layer->fill_input(x2.data(), 99, s);
  const int L = 3;
  const auto n0 = w.scalar_exchange_count();
  void* reused = run_stack(*layer, x.data(), a.data(), L, true, s, StackInput::chained);
  w.device().synchronize(s);
  const auto n1 = w.scalar_exchange_count();
  void* legacy = run_stack(*layer, x2.data(), a2.data(), L, false, s, StackInput::chained);
  w.device().synchronize(s);
  const auto n2 = w.scalar_exchange_count();
  EXPECT_EQ(n1 - n0, 0u) << "reused split sizes must not exchange";
  EXPECT_EQ(n2 - n1, static_cast<std::uint64_t>(L)) << "legacy path: one exchange per layer";
  const auto bytes = a.bytes();
  const auto r = w.device().download<std::uint8_t>(reused, bytes);
  const auto l = w.device().download<std::uint8_t>(legacy, bytes);
  double diff = std::memcmp(r.data(), l.data(), bytes) == 0 ? 0.0 : 1.0;
  w.control_max(std::span<double>(&diff, 1));
  EXPECT_EQ(diff, 0.0) << "reused vs per-layer exchange must be bit-identical";
  (void)b;
  (void)b2;
}

// The replication what-if runs a component k times per call: every replicable component must
// leave the layer's output bit for bit as one copy does (same inputs, same outputs), for k = 2
// and 3, in both layouts; skipping (k = 0) and the components that cannot be replicated are
// refused by set_copies.
TEST_F(MoeDistributed, ComponentCopiesAreIdempotent) {
  Communicator& w = *g_env->world;
  for (const char* layout : {"sp", "tp"}) {
    RunConfig c = small_config(layout);
    auto layer = make_layer(c, w, 77);
    const Stream s = w.device().compute_stream();
    Buffer x = layer->make_activation(), ref = layer->make_activation(), y = layer->make_activation();
    layer->fill_input(x.data(), 77, s);
    const auto splits = std::span<const std::int64_t>(layer->plan().splits);
    layer->forward(x.data(), ref.data(), splits, s);
    const auto want = w.device().download<std::uint8_t>(ref.data(), ref.bytes());
    int checked = 0;
    for (const auto& comp : MoeLayer::hook_points()) {
      if (!MoeLayer::replicable(comp)) continue;
      for (int k : {2, 3}) {
        layer->set_copies(comp, k);
        w.device().memset(y.data(), 0x7f, y.bytes(), s);  // poisoned: every element must be rewritten
        layer->forward(x.data(), y.data(), splits, s);
        layer->set_copies("", 1);
        const auto got = w.device().download<std::uint8_t>(y.data(), y.bytes());
        double diff = std::memcmp(got.data(), want.data(), want.size()) == 0 ? 0.0 : 1.0;
        w.control_max(std::span<double>(&diff, 1));
        EXPECT_EQ(diff, 0.0) << layout << ": " << comp << " x" << k << " changes the layer's output";
        ++checked;
      }
    }
    EXPECT_GE(checked, 12) << layout;
  }
  EXPECT_FALSE(MoeLayer::replicable("tp_reduction"));
  EXPECT_FALSE(MoeLayer::skippable("seq_size_exchange"));
  EXPECT_TRUE(MoeLayer::skippable("tp_reduction"));
  EXPECT_FALSE(MoeLayer::skippable("no_such_component"));
}

namespace {

// The layer's primitives with every call counted (then forwarded to the real ones): what a step
// ran is counted, not timed.
class CountingOps final : public Ops {
 public:
  explicit CountingOps(std::unique_ptr<Ops> base) : base_(std::move(base)) {}
  enum Call { rms_norm_call, linear_call, swiglu_call, transpose_call, add_call, route_call, experts_call, kCalls };
  std::array<std::int64_t, kCalls> calls{};

  DType act() const override { return base_->act(); }
  std::string describe() const override { return base_->describe(); }
  std::string route_path(std::int64_t e, std::int64_t d, std::int64_t k) const override { return base_->route_path(e, d, k); }
  void fill(void* dst, DType t, const SeededSlice& f, Stream s) override { base_->fill(dst, t, f, s); }
  void rms_norm(const void* x, const float* w, void* y, std::span<const Segment> segs, std::int64_t h, Stream s) override {
    ++calls[rms_norm_call];
    base_->rms_norm(x, w, y, segs, h, s);
  }
  void linear(const void* a, const void* w, void* c, const GemmShape& g, bool acc, Stream s) override {
    ++calls[linear_call];
    base_->linear(a, w, c, g, acc, s);
  }
  void swiglu_packed(const void* in, void* out, std::int64_t m, std::int64_t n, Stream s) override {
    ++calls[swiglu_call];
    base_->swiglu_packed(in, out, m, n, s);
  }
  void transpose_blocks(const void* in, void* out, std::int64_t a, std::int64_t b, std::int64_t w, Stream s) override {
    ++calls[transpose_call];
    base_->transpose_blocks(in, out, a, b, w, s);
  }
  void add(const void* x, const void* y, void* out, std::int64_t n, Stream s) override {
    ++calls[add_call];
    base_->add(x, y, out, n, s);
  }
  void route(const RoutedArgs& r, Stream s) override {
    ++calls[route_call];
    base_->route(r, s);
  }
  void experts(const RoutedArgs& r, Stream s) override {
    ++calls[experts_call];
    base_->experts(r, s);
  }
  void weights_changed() override { base_->weights_changed(); }
  std::vector<std::int64_t> expert_counts(const RoutedArgs& r) override { return base_->expert_counts(r); }
  std::int64_t host_syncs() const override { return base_->host_syncs(); }

 private:
  std::unique_ptr<Ops> base_;
};

// The components a forward runs (their begin edges seen), e.g. no dispatch in the TP layout.
class EdgeCount final : public DelayHook {
 public:
  void at(std::string_view component, Edge edge, Stream) override {
    if (edge == Edge::begin) ++seen[std::string(component)];
  }
  std::map<std::string, int> seen;
};

}  // namespace

// The replication what-if's unit, counted: with copy count k a component's step runs its body
// exactly k times per call (k = 0 where it can be left out), and nothing else runs more or less.
// Over one forward the primitives' calls are n(k) = n(1) + (k - 1) c with c >= 1 calls per copy;
// the router and the experts make exactly one call per copy on a rank with real heads.
TEST_F(MoeDistributed, ComponentCopiesRunTheStepExactlyKTimes) {
  Communicator& w = *g_env->world;
  for (const char* layout : {"sp", "tp"}) {
    RunConfig c = small_config(layout);
    const auto shape = make_layer(c, w, 91);
    auto counting = std::make_unique<CountingOps>(w.backend() == Backend::cuda ? make_cuda_ops(w.device(), c.expert_gemm)
                                                                                 : make_host_ops());
    CountingOps& ops = *counting;
    MoeLayer layer(shape->plan(), w, std::move(counting), 91);
    const Stream s = w.device().compute_stream();
    Buffer x = layer.make_activation(), y = layer.make_activation();
    layer.fill_input(x.data(), 91, s);
    const auto splits = std::span<const std::int64_t>(layer.plan().splits);
    EdgeCount edges;
    layer.set_delay_hook(&edges);
    layer.forward(x.data(), y.data(), splits, s);
    layer.set_delay_hook(nullptr);
    auto forward_calls = [&](const std::string& comp, int k) {
      layer.set_copies(comp, k);
      const auto before = ops.calls;
      layer.forward(x.data(), y.data(), splits, s);
      layer.set_copies("", 1);
      std::array<std::int64_t, CountingOps::kCalls> d{};
      for (std::size_t i = 0; i < d.size(); ++i) d[i] = ops.calls[i] - before[i];
      return d;
    };
    auto sum = [](const std::array<std::int64_t, CountingOps::kCalls>& d) {
      return std::accumulate(d.begin(), d.end(), std::int64_t{0});
    };
    const bool real_heads = layer.plan().heads_valid > 0;
    int checked = 0;
    for (const auto& comp : MoeLayer::hook_points()) {
      if (!MoeLayer::replicable(comp)) continue;
      const auto one = forward_calls(comp, 1), two = forward_calls(comp, 2), three = forward_calls(comp, 3);
      const std::int64_t per_copy = sum(two) - sum(one);
      if (!edges.seen.count(comp)) {  // not in this layout: nothing may run for it
        EXPECT_EQ(sum(one), sum(three)) << layout << ": " << comp;
        continue;
      }
      if (comp != "routing" && comp != "local_expert_compute") {
        EXPECT_GE(per_copy, 1) << layout << ": " << comp << " ran no primitive per extra copy";
      }
      for (std::size_t i = 0; i < one.size(); ++i)
        EXPECT_EQ(three[i] - one[i], 2 * (two[i] - one[i])) << layout << ": " << comp << ", primitive " << i;
      if (MoeLayer::skippable(comp)) {
        const auto none = forward_calls(comp, 0);
        for (std::size_t i = 0; i < one.size(); ++i)
          EXPECT_EQ(one[i] - none[i], two[i] - one[i]) << layout << ": " << comp << " x0, primitive " << i;
      }
      if (comp == "routing" || comp == "local_expert_compute") {
        const auto call = comp == "routing" ? CountingOps::route_call : CountingOps::experts_call;
        EXPECT_EQ(two[call] - one[call], real_heads ? 1 : 0) << layout << ": " << comp;
        EXPECT_EQ(per_copy, real_heads ? 1 : 0) << layout << ": " << comp << " ran other primitives per copy";
        EXPECT_EQ(one[call], real_heads ? 1 : 0) << layout << ": " << comp << " at one copy";
      }
      ++checked;
    }
    EXPECT_GE(checked, std::string(layout) == "sp" ? 8 : 6) << layout;
  }
}

// `--ab drop:` and the what-if's zero copies act on the same unit as a copy: in a same-input stack
// a component left out leaves its output buffer as it would have written it, so the stack's
// output is bit for bit the full stack's (the removal takes away the component's own work and
// nothing else, as an idempotent copy adds its own work only). In a chained stack the stale
// output flows into the later layers, which then route and compute on other data.
TEST_F(MoeDistributed, DroppedComponentLeavesTheSameInputStackDataUnchanged) {
  Communicator& w = *g_env->world;
  for (const char* layout : {"sp", "tp"}) {
    RunConfig c = small_config(layout);
    auto layer = make_layer(c, w, 55);
    auto& dev = w.device();
    const Stream s = dev.compute_stream();
    Buffer x = layer->make_activation(), a = layer->make_activation(), b = layer->make_activation();
    layer->fill_input(x.data(), 55, s);
    const int L = 3;
    auto stack = [&](StackInput input) {
      dev.copy(a.data(), x.data(), a.bytes(), s);
      void* y = run_stack(*layer, a.data(), b.data(), L, /*reuse=*/true, s, input);
      return dev.download<std::uint8_t>(y, a.bytes());
    };
    for (const StackInput input : {StackInput::same, StackInput::chained}) {
      const auto want = stack(input);
      std::vector<std::string> changed;
      int checked = 0;
      for (const auto& comp : MoeLayer::hook_points()) {
        if (!MoeLayer::skippable(comp)) continue;
        (void)stack(input);  // the base arm before each candidate, as the A/B alternates
        layer->set_copies(comp, 0);
        const auto got = stack(input);
        layer->set_copies("", 1);
        double diff = std::memcmp(got.data(), want.data(), want.size()) == 0 ? 0.0 : 1.0;
        w.control_max(std::span<double>(&diff, 1));
        if (diff != 0) changed.push_back(comp);
        ++checked;
      }
      EXPECT_GE(checked, 8) << layout;
      const std::string list = fmt::format("{}", fmt::join(changed, ", "));
      if (input == StackInput::same) {
        EXPECT_TRUE(changed.empty()) << layout << ", same input: leaving out " << list << " changes the stack's data";
      } else {
        // The routing left out keeps the last layer's top-k: the earlier layers' experts see other loads.
        EXPECT_NE(std::find(changed.begin(), changed.end(), "routing"), changed.end()) << layout << ", chained: " << list;
        EXPECT_NE(std::find(changed.begin(), changed.end(), "merge_linear"), changed.end()) << layout << ", chained: " << list;
      }
    }
  }
}

// The sampled expert reference the profile runs before timing: it passes on the layer's own
// output and fails when the expert output is wrong.
TEST_F(MoeDistributed, ExpertReferenceCheckCatchesACorruptOutput) {
  Communicator& w = *g_env->world;
  auto solo = w.split(w.rank(), 0);
  RunConfig c = small_config("sp");
  c.tokens = 4;
  c.split_sizes = {4};
  auto l = make_layer(c, *solo, 77);
  auto& dev = solo->device();
  const Stream s = dev.compute_stream();
  Buffer x = l->make_activation(), y = l->make_activation();
  l->fill_input(x.data(), 77, s);
  l->forward(x.data(), y.data(), std::span<const std::int64_t>(l->plan().splits), s);
  l->route(s);
  l->experts(s);
  dev.synchronize(s);
  const RoutedArgs r = l->routed_args();
  const auto good = check_routed_experts(dev, r, l->ops().act(), 5, 64);
  EXPECT_GT(good.sampled, 0);
  EXPECT_TRUE(good.ok()) << good.to_json().dump();
  // Zero the expert output: every compared row is then off.
  const std::size_t n = static_cast<std::size_t>(r.tokens * r.heads_local * r.d);
  const std::size_t bytes = n * static_cast<std::size_t>(l->act_bytes());
  std::vector<std::uint8_t> zeros(bytes, 0);
  dev.copy_from_host(r.y, zeros.data(), bytes, s);
  dev.synchronize(s);
  const auto bad = check_routed_experts(dev, r, l->ops().act(), 5, 64);
  EXPECT_FALSE(bad.ok()) << bad.to_json().dump();
}

// The cuda layer against the CPU implementation (fp32) at one rank, same seeds: the expert
// path's kernels, the dense GEMMs and the routing at geometries with whole 128-row expert tiles,
// row tails (~150 rows per expert), column tails (intermediate 232 = 3 x 64 + 40) and a K tail
// (d_head 200). Runs on every rank independently (one-rank groups).
TEST_F(MoeDistributed, GpuLayerMatchesTheCpuImplementation) {
  if (!g_env->gpu) GTEST_SKIP() << "the cuda layer is checked with --gpu";
  Communicator& w = *g_env->world;
  auto gpu = w.split(w.rank(), 0);
  auto cpu = make_mpi_communicator(MPI_COMM_SELF, std::shared_ptr<Device>(make_host_device()));
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{512, 192}, {512, 232}, {400, 192}};
  for (const auto& [hidden, inter] : shapes) {
    RunConfig c;
    c.geo.hidden = hidden;
    c.geo.heads = 2;  // d_head 256, 256, 200
    c.geo.experts = 4;
    c.geo.topk = 2;
    c.geo.intermediate = inter;
    c.layout = "sp";
    c.tokens = 300;
    c.expert_gemm = g_env->expert_gemm;
    const std::uint64_t seed = 4321;
    auto run = [&](Communicator& comm) {
      auto l = make_layer(c, comm, seed);
      const Stream s = comm.device().compute_stream();
      Buffer x = l->make_activation(), y = l->make_activation();
      l->fill_input(x.data(), seed, s);
      l->forward(x.data(), y.data(), std::span<const std::int64_t>(l->plan().splits), s);
      comm.device().synchronize(s);
      return to_float(*l, y.data());
    };
    const auto got = run(*gpu);
    const auto want = run(*cpu);
    ASSERT_EQ(got.size(), want.size());
    double scale = 0;
    for (float v : want) scale = std::max(scale, std::fabs(double(v)));
    ASSERT_GT(scale, 0.0);
    // bf16 activations can flip a near-tied top-k choice against the fp32 CPU path, which
    // changes that token's row legitimately: at most 1% of the rows may be off by more than 2%
    // of max |cpu|, and the typical (median) row must agree to 1%, so a systematic error in
    // any kernel fails even when it stays under the per-row bound.
    const auto H = static_cast<std::size_t>(c.geo.hidden);
    const std::size_t rows = got.size() / H;
    std::size_t bad = 0;
    std::vector<double> row_err(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      double e = 0;
      for (std::size_t i = r * H; i < (r + 1) * H; ++i)
        e = std::max(e, std::isfinite(got[i]) ? std::fabs(double(got[i]) - want[i]) : INFINITY);
      row_err[r] = e;
      if (e > 2e-2 * scale) ++bad;
    }
    std::nth_element(row_err.begin(), row_err.begin() + rows / 2, row_err.end());
    const double median_err = row_err[rows / 2];
    EXPECT_LE(bad, rows / 100) << "hidden " << hidden << ", intermediate " << inter << ": rows off the CPU result";
    EXPECT_LE(median_err, 1e-2 * scale) << "hidden " << hidden << ", intermediate " << inter;
    if (w.rank() == 0)
      std::printf("[ gpu vs cpu ] d_head %lld, intermediate %lld: %zu of %zu rows off by > 2%%, median row %.3g "
                  "(|cpu|max %.3g)\n",
                  static_cast<long long>(hidden / 2), static_cast<long long>(inter), bad, rows, median_err, scale);
  }
}

// MAGI-2's host outputs pinned bit for bit (tests/moe/data/magi2_host_golden.txt: one line per
// world size and layout, the FNV-1a hash of every rank's output bytes), so a refactor of the layer
// (its component table, the layer interface) cannot change a single bit of the result.
// LB_MOE_PRINT_GOLDEN=1 prints the lines instead of comparing.
TEST_F(MoeDistributed, Magi2HostOutputsAreBitIdenticalToTheGolden) {
  if (g_env->gpu) GTEST_SKIP() << "the golden is the host backend's";
  Communicator& w = *g_env->world;
  std::map<std::string, std::string> golden;
  {
    std::ifstream in(LB_MOE_GOLDEN);
    std::string key, layout, value;
    while (in >> key >> layout >> value) golden[key + " " + layout] = value;
  }
  for (const char* layout : {"sp", "tp"}) {
    RunConfig c = small_config(layout);
    if (std::string(layout) == "sp")
      for (int r = 0; r < w.size(); ++r) c.split_sizes.push_back(3 + r);
    auto l = make_layer(c, w, 2024);
    const Stream s = w.device().compute_stream();
    Buffer x = l->make_activation(), y = l->make_activation();
    l->fill_input(x.data(), 2024, s);
    l->forward(x.data(), y.data(), std::span<const std::int64_t>(l->plan().splits), s);
    const auto bytes = w.device().download<std::uint8_t>(y.data(), y.bytes());
    std::uint64_t h = 1469598103934665603ull;
    for (auto b : bytes) h = (h ^ b) * 1099511628211ull;
    std::string all;
    for (const auto& part : w.control_gather_strings(fmt::format("{:016x}", h))) all += (all.empty() ? "" : ",") + part;
    const std::string key = fmt::format("np{} {}", w.size(), layout);
    if (std::getenv("LB_MOE_PRINT_GOLDEN")) {
      if (w.rank() == 0) std::printf("%s %s\n", key.c_str(), all.c_str());
      continue;
    }
    ASSERT_TRUE(golden.count(key)) << "no golden line for " << key;
    EXPECT_EQ(all, golden[key]) << key;
  }
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  bool gpu = false;
  ExpertPath expert_gemm = ExpertPath::automatic;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    gpu = gpu || a == "--gpu";
    if (a.rfind("--expert-gemm=", 0) == 0) {
      const auto p = parse_expert_path(a.substr(14));
      if (!p) {
        std::fprintf(stderr, "unknown expert path '%s'\n", a.c_str() + 14);
        MPI_Finalize();
        return 2;
      }
      expert_gemm = *p;
    }
  }
  int rc = 0;
  {
    Env env;
    env.gpu = gpu;
    env.expert_gemm = expert_gemm;
    env.world = testing_mpi::make_world(gpu);
    g_env = &env;
    rc = testing_mpi::run_all_tests_on_every_rank();
    g_env = nullptr;
  }
  MPI_Finalize();
  return rc;
}
