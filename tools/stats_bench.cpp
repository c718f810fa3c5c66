// Speed of the paired statistics engine. The reference point is scipy.stats.bootstrap with the
// same settings (n = 31, 200k resamples, BCa); results/stats-speed.md records both.
#include "common/cli/version.hpp"

#include <cstdio>
#include <string_view>
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <vector>

#include "stats/bootstrap.hpp"
#include "stats/paired.hpp"

namespace {

namespace ls = layerbench::stats;

// Deterministic deltas shaped like the seeds' study: small positive effect, sd ~2.5, two outliers.
std::vector<double> make_deltas(std::size_t n) {
  std::vector<double> d(n);
  for (std::size_t i = 0; i < n; ++i) d[i] = 0.9 + 2.0 * std::sin(static_cast<double>(i) * 1.7);
  if (n > 20) {
    d[5] = -6.65;
    d[20] = 5.70;
  }
  return d;
}

void register_all() {
  for (std::size_t threads : {std::size_t{1}, std::size_t{0}}) {
    const std::string suffix = threads == 1 ? "/threads:1" : "/threads:auto";
    benchmark::RegisterBenchmark(("bootstrap_mean_pct_bca/n:31/B:200000" + suffix).c_str(),
                                 [threads](benchmark::State& state) {
                                   const auto d = make_deltas(31);
                                   const auto mean = [&d](std::span<const std::uint32_t> idx) {
                                     return ls::mean_of_indices(d, idx);
                                   };
                                   ls::BootstrapOptions o;
                                   o.num_threads = threads;
                                   for (auto _ : state) benchmark::DoNotOptimize(ls::bootstrap(d.size(), mean, o));
                                 })
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("bootstrap_mean_median_pct_bca/n:31/B:200000" + suffix).c_str(),
                                 [threads](benchmark::State& state) {
                                   const auto d = make_deltas(31);
                                   ls::BootstrapOptions o;
                                   o.num_threads = threads;
                                   for (auto _ : state) benchmark::DoNotOptimize(ls::bootstrap_mean_median(d, o));
                                 })
        ->Unit(benchmark::kMillisecond);
  }
  for (std::size_t n : {std::size_t{31}, std::size_t{10000}}) {
    auto* b = benchmark::RegisterBenchmark(("full_paired_analysis/B:200000/n:" + std::to_string(n)).c_str(),
                                 [n](benchmark::State& state) {
                                   const auto d = make_deltas(n);
                                   std::vector<double> base(n), cand(n);
                                   for (std::size_t i = 0; i < n; ++i) {
                                     base[i] = 236.0 + 0.5 * std::cos(static_cast<double>(i));
                                     cand[i] = base[i] - d[i];
                                   }
                                   for (auto _ : state) benchmark::DoNotOptimize(ls::analyze_paired(base, cand));
                                 })
        ->Unit(benchmark::kMillisecond);
    if (n > 1000) b->Iterations(1);  // seconds per run: one iteration is enough
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--version") {
      std::puts(layerbench::cli::version_text("layerbench-ab-bench").c_str());
      return 0;
    }
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
