#include "bench/harness/gbench.hpp"

#include <benchmark/benchmark.h>

#include <memory>

namespace layerbench::harness {

std::pair<std::vector<std::string>, std::vector<std::string>> split_gbench_args(
    const std::vector<std::string>& argv) {
  std::vector<std::string> gb, rest;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (i == 0) {
      gb.push_back(argv[i]);
      rest.push_back(argv[i]);
    } else if (argv[i].rfind("--benchmark_", 0) == 0) {
      gb.push_back(argv[i]);
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (gb.size() == 1) gb.clear();  // no GB flags given: no GB report
  return {gb, rest};
}

std::string gbench_name(const std::string& binary, const reports::Measurement& m) {
  std::string name = binary + "/" + m.name;
  if (!m.group.empty()) name += "/" + m.group;
  for (auto it = m.params.begin(); it != m.params.end(); ++it) {
    const auto& v = it.value();
    name += "/" + it.key() + ":" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return name;
}

void report_to_gbench(const std::string& binary, const std::vector<std::string>& gb_args,
                      const std::vector<reports::Measurement>& results) {
  std::vector<std::string> storage = gb_args;
  std::vector<char*> cargv;
  for (auto& s : storage) cargv.push_back(s.data());
  int argc = static_cast<int>(cargv.size());
  benchmark::Initialize(&argc, cargv.data());
  for (const auto& m : results) {
    if (m.samples_ms.empty()) continue;
    auto samples = std::make_shared<std::vector<double>>(m.samples_ms);
    auto next = std::make_shared<std::size_t>(0);
    benchmark::RegisterBenchmark(gbench_name(binary, m).c_str(),
                                 [samples, next](benchmark::State& state) {
                                   for (auto _ : state) {
                                     state.SetIterationTime((*samples)[*next % samples->size()] / 1e3);
                                     ++*next;
                                   }
                                 })
        ->UseManualTime()
        ->Iterations(1)
        ->Repetitions(static_cast<int>(m.samples_ms.size()))
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}

}  // namespace layerbench::harness
