// The device-side expert schedule: tiles built on the device from the counts
// (build_expert_tiles) against the host's list (fill_expert_tiles, experts in id order, compact
// rows), including more experts than one block's scan (the carry), empty experts, counts that
// are multiples of the tile and the empty padding up to the launch bound; then the Hopper
// gate/up and down kernels over the padded device list give bit-identical results to the same
// kernels over the host's exact list.
#include "collectives/cuda_internal.hpp"
#include "collectives/device.hpp"
#include "collectives/types.hpp"
#include "moe/magi2/cuda_kernels.cuh"
#include "moe/expert_buckets.hpp"
#include "moe/init.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <utility>
#include <vector>

namespace layerbench::moe {
namespace {

std::vector<int> seeded_counts(std::size_t n, std::uint32_t tensor, int max) {
  std::vector<int> c(n);
  for (std::size_t e = 0; e < n; ++e) {
    const float u = seeded_value(17, tensor, e, 1.0f);  // [-1, 1)
    c[e] = u < -0.6f ? 0 : static_cast<int>(std::lround((u + 1.0f) * 0.5f * static_cast<float>(max)));
  }
  return c;
}

struct DeviceList {
  std::vector<ExpertTile> tiles, wide;  // wide: the 192-row list of the same launch
  int live = -1;
  std::int64_t max_tiles = 0, max_wide = 0;
};

// dwide != nullptr: the launch also writes the kWideTileRows list there.
DeviceList build_on_device(Device& dev, const std::vector<int>& counts, Buffer& dtiles, Buffer& dlive, bool paired,
                           Buffer* dwide = nullptr) {
  const auto G = static_cast<std::int64_t>(counts.size());
  std::vector<int> off(counts.size());
  std::exclusive_scan(counts.begin(), counts.end(), off.begin(), 0);
  const std::int64_t A = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
  DeviceList d;
  d.max_tiles = cuda::max_expert_tiles(A, G);
  Buffer dc = dev.upload(counts), doff = dev.upload(off);
  dtiles = dev.upload(std::vector<std::uint8_t>(static_cast<std::size_t>(d.max_tiles) * sizeof(ExpertTile), 0xab));
  dlive = dev.upload(std::vector<int>{-1});
  cuda::WideTiles wide;
  if (dwide != nullptr) {
    d.max_wide = cuda::max_expert_tiles(A, G, kWideTileRows);
    *dwide = dev.upload(std::vector<std::uint8_t>(static_cast<std::size_t>(d.max_wide) * sizeof(ExpertTile), 0xab));
    wide = {dwide->as<ExpertTile>(), d.max_wide, kWideTileRows};
  }
  cuda::build_expert_tiles(dc.as<int>(), doff.as<int>(), dtiles.as<ExpertTile>(), dlive.as<int>(), G, d.max_tiles,
                           paired, detail::cuda_stream(dev.compute_stream()), wide);
  if (dwide != nullptr) {
    const auto w = dev.download<std::uint8_t>(dwide->data(), static_cast<std::size_t>(d.max_wide) * sizeof(ExpertTile));
    d.wide.resize(static_cast<std::size_t>(d.max_wide));
    std::memcpy(d.wide.data(), w.data(), w.size());
  }
  const auto raw = dev.download<std::uint8_t>(dtiles.data(), static_cast<std::size_t>(d.max_tiles) * sizeof(ExpertTile));
  d.tiles.resize(static_cast<std::size_t>(d.max_tiles));
  std::memcpy(d.tiles.data(), raw.data(), raw.size());
  d.live = dev.download<int>(dlive.data(), 1)[0];
  return d;
}

// The host's list (experts in id order, compact rows); paired: after every expert's odd last
// tile, its copy with valid negated.
std::vector<ExpertTile> host_list(const std::vector<int>& counts, bool paired = false,
                                  std::int64_t rows = kExpertTileRows) {
  std::vector<std::int64_t> base(counts.size());
  std::exclusive_scan(counts.begin(), counts.end(), base.begin(), std::int64_t{0});
  std::vector<int> order(counts.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<ExpertTile> t(static_cast<std::size_t>(expert_tile_count(counts, order, rows)));
  fill_expert_tiles(counts, base, order, t, rows);
  if (!paired) return t;
  std::vector<ExpertTile> p;
  for (std::size_t i = 0; i < t.size(); ++i) {
    p.push_back(t[i]);
    const bool last_of_expert = i + 1 == t.size() || t[i + 1].expert != t[i].expert;
    if (last_of_expert && (p.size() % 2 == 1)) p.push_back(ExpertTile{t[i].row0, t[i].expert, -t[i].valid});
  }
  return p;
}

TEST(ExpertScheduleGpu, DeviceTileListMatchesTheHostList) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  auto dev = make_cuda_device(0);
  std::vector<std::vector<int>> cases = {seeded_counts(3072, 1, 704), seeded_counts(7, 2, 300), {128, 0, 256, 1, 0}};
  cases.push_back(std::vector<int>(1500, 0));  // nothing routed
  for (const auto& counts : cases)
    for (const bool paired : {false, true}) {
    Buffer dt, dl, dw;
    const DeviceList d = build_on_device(*dev, counts, dt, dl, paired, &dw);
    const auto want = host_list(counts, paired);
    const auto want_wide = host_list(counts, false, kWideTileRows);
    ASSERT_LE(static_cast<std::int64_t>(want_wide.size()), d.max_wide);
    std::int64_t bad_wide = 0;
    for (std::size_t i = 0; i < d.wide.size(); ++i) {
      const ExpertTile w = i < want_wide.size() ? want_wide[i] : ExpertTile{0, 0, 0};
      bad_wide += d.wide[i].row0 != w.row0 || d.wide[i].expert != w.expert || d.wide[i].valid != w.valid;
    }
    EXPECT_EQ(bad_wide, 0) << counts.size() << " experts, " << want_wide.size() << " wide tiles";
    ASSERT_EQ(d.live, static_cast<int>(want.size())) << counts.size() << " experts";
    ASSERT_LE(static_cast<std::int64_t>(want.size()), d.max_tiles);
    std::int64_t bad = 0;
    for (std::size_t i = 0; i < want.size(); ++i)
      bad += d.tiles[i].row0 != want[i].row0 || d.tiles[i].expert != want[i].expert || d.tiles[i].valid != want[i].valid;
    for (std::size_t i = want.size(); i < d.tiles.size(); ++i) bad += d.tiles[i].valid != 0;
    EXPECT_EQ(bad, 0) << counts.size() << " experts, " << want.size() << " tiles of " << d.max_tiles
                      << (paired ? ", paired" : "");
    EXPECT_EQ(d.max_tiles % 2, 0);
    }
}

void check_kernels_over_device_list(std::size_t experts, int max_rows) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  constexpr std::int64_t d = 256, I = 256;
  if (!cuda::gate_up_swiglu_sm90_supported(d, I) || !cuda::down_sm90_supported(d, I))
    GTEST_SKIP() << "not a compute capability 9.0 device";
  auto dev = make_cuda_device(0);
  const auto st = detail::cuda_stream(dev->compute_stream());
  const auto counts = seeded_counts(experts, 3, max_rows);
  const auto E = static_cast<std::int64_t>(counts.size());
  const std::int64_t rows = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
  Buffer dt, dl, dw;
  const DeviceList dlist = build_on_device(*dev, counts, dt, dl, true, &dw);
  const auto hl = host_list(counts);
  std::vector<std::uint8_t> hbytes(hl.size() * sizeof(ExpertTile));
  std::memcpy(hbytes.data(), hl.data(), hbytes.size());
  Buffer ht = dev->upload(hbytes);
  Buffer x = dev->alloc(static_cast<std::size_t>(rows * d) * 2), w13 = dev->alloc(static_cast<std::size_t>(E * d * 2 * I) * 2);
  Buffer wd = dev->alloc(static_cast<std::size_t>(E * I * d) * 2);
  cuda::fill(x.data(), true, {.seed = 5, .tensor = 1, .scale = 1.5f, .rows = rows, .cols = d, .full_cols = d, .ld = d}, st);
  cuda::fill(w13.data(), true, {.seed = 5, .tensor = 2, .scale = 0.06f, .rows = E * d, .cols = 2 * I, .full_cols = 2 * I, .ld = 2 * I}, st);
  cuda::fill(wd.data(), true, {.seed = 5, .tensor = 3, .scale = 0.06f, .rows = E * I, .cols = d, .full_cols = d, .ld = d}, st);
  Buffer w13k = dev->alloc(static_cast<std::size_t>(cuda::w13_kmajor_elems(E, d, I)) * 2);
  Buffer wdk = dev->alloc(static_cast<std::size_t>(cuda::wdown_kmajor_elems(E, I)) * 2);
  cuda::prepare_w13_kmajor(w13.as<cuda::bf16>(), w13k.as<cuda::bf16>(), E, d, I, st);
  cuda::prepare_wdown_kmajor(wd.as<cuda::bf16>(), wdk.as<cuda::bf16>(), E, d, I, st);
  std::vector<std::uint16_t> act[2], y[2];
  for (int v = 0; v < 2; ++v) {
    const auto* tl = v == 0 ? ht.as<ExpertTile>() : dt.as<ExpertTile>();
    const std::int64_t n = v == 0 ? static_cast<std::int64_t>(hl.size()) : dlist.max_tiles;
    Buffer a = dev->upload(std::vector<std::uint16_t>(static_cast<std::size_t>(rows * I), 0x7f7f));
    Buffer o = dev->upload(std::vector<std::uint16_t>(static_cast<std::size_t>(rows * d), 0x7f7f));
    cuda::gate_up_swiglu_sm90(x.as<cuda::bf16>(), rows, w13k.as<cuda::bf16>(), E, a.as<cuda::bf16>(), tl, n, d, I, st);
    cuda::down_sm90(a.as<cuda::bf16>(), rows, wdk.as<cuda::bf16>(), E, o.as<cuda::bf16>(), tl, n, d, I, st,
                    v == 0 ? nullptr : dl.as<int>(), v == 1);
    act[v] = dev->download<std::uint16_t>(a.data(), static_cast<std::size_t>(rows * I));
    y[v] = dev->download<std::uint16_t>(o.data(), static_cast<std::size_t>(rows * d));
  }
  std::int64_t poisoned = 0;
  for (auto v : y[0]) poisoned += v == 0x7f7f;
  EXPECT_EQ(poisoned, 0) << "every live row written";
  EXPECT_TRUE(act[0] == act[1]) << "gate/up over the device list";
  // The wide (192-row, three consumer warpgroups) gate/up kernel over the device's wide list:
  // the same MMAs per row, so the same bits.
  Buffer a = dev->upload(std::vector<std::uint16_t>(static_cast<std::size_t>(rows * I), 0x7f7f));
  cuda::gate_up_swiglu_sm90(x.as<cuda::bf16>(), rows, w13k.as<cuda::bf16>(), E, a.as<cuda::bf16>(), dw.as<ExpertTile>(),
                            dlist.max_wide, d, I, st, false, {}, kWideTileRows);
  EXPECT_TRUE(act[0] == dev->download<std::uint16_t>(a.data(), static_cast<std::size_t>(rows * I)))
      << "wide gate/up over the device's wide list, " << experts << " experts";
  EXPECT_TRUE(y[0] == y[1]) << "down over the device list, " << experts << " experts";
}

TEST(ExpertScheduleGpu, KernelsOverThePaddedDeviceListMatchTheHostList) {
  check_kernels_over_device_list(40, 300);
  check_kernels_over_device_list(300, 420);  // more pairs than co-resident clusters: the loop wraps
}

// Assignments of T tokens x hv heads x k choices to hv * E experts (each head its own bank),
// sorted stably by expert as the layer's radix sort does; then the gathered kernel against the
// gather kernel + the copy-reading kernel, at d 256 and at d 200 (k tail zero-filled).
void check_gathered(std::int64_t d, std::int64_t I) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  if (!cuda::gate_up_swiglu_sm90_supported(d, I)) GTEST_SKIP() << "not a compute capability 9.0 device";
  auto dev = make_cuda_device(0);
  const auto st = detail::cuda_stream(dev->compute_stream());
  constexpr std::int64_t T = 700, hl = 3, hv = 2, k = 4, E = 8;  // ~350 rows per expert: pairs and lone tiles
  const std::int64_t A = T * hv * k, G = hv * E;
  std::vector<std::pair<int, int>> kv(static_cast<std::size_t>(A));  // (expert, assignment)
  for (std::int64_t a = 0; a < A; ++a) {
    const std::int64_t h = (a / k) % hv;
    const float u = seeded_value(19, 1, static_cast<std::uint64_t>(a), 1.0f);
    kv[a] = {static_cast<int>(h * E + std::min<std::int64_t>(E - 1, static_cast<std::int64_t>((u + 1.0f) * 0.5f * E))),
             static_cast<int>(a)};
  }
  std::stable_sort(kv.begin(), kv.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<int> keys(kv.size()), vals(kv.size()), counts(static_cast<std::size_t>(G), 0), off(counts.size());
  for (std::size_t i = 0; i < kv.size(); ++i) {
    keys[i] = kv[i].first;
    vals[i] = kv[i].second;
    ++counts[static_cast<std::size_t>(kv[i].first)];
  }
  std::exclusive_scan(counts.begin(), counts.end(), off.begin(), 0);
  const auto tl = host_list(counts);
  std::vector<std::uint8_t> tbytes(tl.size() * sizeof(ExpertTile));
  std::memcpy(tbytes.data(), tl.data(), tbytes.size());
  Buffer dt = dev->upload(tbytes), dk = dev->upload(keys), dv = dev->upload(vals), doff = dev->upload(off);
  Buffer x = dev->alloc(static_cast<std::size_t>(T * hl * d) * 2), w13 = dev->alloc(static_cast<std::size_t>(G * d * 2 * I) * 2);
  cuda::fill(x.data(), true, {.seed = 6, .tensor = 1, .scale = 1.5f, .rows = T * hl, .cols = d, .full_cols = d, .ld = d}, st);
  cuda::fill(w13.data(), true, {.seed = 6, .tensor = 2, .scale = 0.06f, .rows = G * d, .cols = 2 * I, .full_cols = 2 * I, .ld = 2 * I}, st);
  Buffer w13k = dev->alloc(static_cast<std::size_t>(cuda::w13_kmajor_elems(G, d, I)) * 2);
  cuda::prepare_w13_kmajor(w13.as<cuda::bf16>(), w13k.as<cuda::bf16>(), G, d, I, st);
  Buffer xs = dev->alloc(static_cast<std::size_t>(A * d) * 2);
  Buffer inv[2] = {dev->alloc(static_cast<std::size_t>(A) * 4), dev->alloc(static_cast<std::size_t>(A) * 4)};
  Buffer act[3] = {dev->upload(std::vector<std::uint16_t>(static_cast<std::size_t>(A * I), 0x7f7f)),
                   dev->upload(std::vector<std::uint16_t>(static_cast<std::size_t>(A * I), 0x7f7f)),
                   dev->upload(std::vector<std::uint16_t>(static_cast<std::size_t>(A * I), 0x7f7f))};
  const auto n = static_cast<std::int64_t>(tl.size());
  cuda::gather(x.as<cuda::bf16>(), dk.as<int>(), dv.as<int>(), doff.as<int>(), xs.as<cuda::bf16>(), inv[0].as<int>(), A, hl,
               hv, k, d, 0, nullptr, st);
  cuda::gate_up_swiglu_sm90(xs.as<cuda::bf16>(), A, w13k.as<cuda::bf16>(), G, act[0].as<cuda::bf16>(), dt.as<ExpertTile>(),
                            n, d, I, st);
  cuda::invert_permutation(dv.as<int>(), inv[1].as<int>(), A, st);
  cuda::gate_up_swiglu_sm90_gathered(x.as<cuda::bf16>(), T * hl, dv.as<int>(), hl, hv, k, w13k.as<cuda::bf16>(), G,
                                     act[1].as<cuda::bf16>(), dt.as<ExpertTile>(), n, d, I, st);
  // Paired (2-CTA clusters): pairs of tiles sharing each weight stage, lone tiles split by columns.
  const auto pl = host_list(counts, true);
  std::vector<std::uint8_t> pbytes(pl.size() * sizeof(ExpertTile));
  std::memcpy(pbytes.data(), pl.data(), pbytes.size());
  Buffer dp = dev->upload(pbytes);
  cuda::gate_up_swiglu_sm90_gathered(x.as<cuda::bf16>(), T * hl, dv.as<int>(), hl, hv, k, w13k.as<cuda::bf16>(), G,
                                     act[2].as<cuda::bf16>(), dp.as<ExpertTile>(), static_cast<std::int64_t>(pl.size()),
                                     d, I, st, true);
  const auto a0 = dev->download<std::uint16_t>(act[0].data(), static_cast<std::size_t>(A * I));
  const auto a1 = dev->download<std::uint16_t>(act[1].data(), static_cast<std::size_t>(A * I));
  const auto a2 = dev->download<std::uint16_t>(act[2].data(), static_cast<std::size_t>(A * I));
  EXPECT_TRUE(a0 == a2) << "d " << d << ": paired gathered gate/up differs from gather + copy";
  std::int64_t poisoned = 0;
  for (auto v : a1) poisoned += v == 0x7f7f;
  EXPECT_EQ(poisoned, 0) << "d " << d;
  EXPECT_TRUE(a0 == a1) << "d " << d << ": gathered gate/up differs from gather + copy";
  EXPECT_TRUE(dev->download<int>(inv[0].data(), static_cast<std::size_t>(A)) ==
              dev->download<int>(inv[1].data(), static_cast<std::size_t>(A)))
      << "inverse permutation";
}

TEST(ExpertScheduleGpu, GatheredGateUpMatchesTheCopyPath) {
  check_gathered(256, 192);
  check_gathered(200, 72);
  check_gathered(128, 64);  // one column block: a lone tile stays with the first CTA of its pair
}

}  // namespace
}  // namespace layerbench::moe
