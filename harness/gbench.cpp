#include "harness/gbench.hpp"
#include "common/json_text.hpp"

#include "common/cli/version.hpp"
#include "common/output_file.hpp"
#include "stats/summary.hpp"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <limits>
#include <set>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <unistd.h>
#include <stdexcept>

namespace layerbench::harness {
namespace {

benchmark::TimeUnit to_gb(GbTimeUnit u) {
  switch (u) {
    case GbTimeUnit::ns: return benchmark::kNanosecond;
    case GbTimeUnit::us: return benchmark::kMicrosecond;
    case GbTimeUnit::ms: return benchmark::kMillisecond;
    case GbTimeUnit::s: return benchmark::kSecond;
  }
  return benchmark::kMillisecond;
}

// Passes every run on to `inner` with cpu_time set to real_time (aggregates included: Google
// Benchmark computes them before reporting, from the replay loop's CPU time otherwise).
class CpuIsRealReporter : public benchmark::BenchmarkReporter {
 public:
  explicit CpuIsRealReporter(std::unique_ptr<benchmark::BenchmarkReporter> inner) : inner_(std::move(inner)) {}
  bool ReportContext(const Context& context) override {
    // Google Benchmark points the file reporter's streams at --benchmark_out: hand them on.
    inner_->SetOutputStream(&GetOutputStream());
    inner_->SetErrorStream(&GetErrorStream());
    return inner_->ReportContext(context);
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> copy = runs;
    for (auto& r : copy) r.cpu_accumulated_time = r.real_accumulated_time;
    inner_->ReportRuns(copy);
  }
  void Finalize() override { inner_->Finalize(); }

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> inner_;
};

std::unique_ptr<benchmark::BenchmarkReporter> make_reporter(const std::string& format,
                                                            benchmark::ConsoleReporter::OutputOptions opts) {
  std::unique_ptr<benchmark::BenchmarkReporter> r;
  if (format == "json") {
    r = std::make_unique<benchmark::JSONReporter>();
  } else if (format == "csv") {
    // Deprecated upstream, yet what --benchmark_format=csv gives with Google Benchmark itself.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    r = std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
  } else {
    r = std::make_unique<benchmark::ConsoleReporter>(opts);
  }
  return std::make_unique<CpuIsRealReporter>(std::move(r));
}

benchmark::ConsoleReporter::OutputOptions console_options(const GbenchOptions& gb) {
  int o = benchmark::ConsoleReporter::OO_None;
  // "auto" is no colour: under mpirun a rank's standard output is a pseudo-terminal even when
  // the job's output goes to a file, so a terminal test would colour files too.
  if (gb.color == "true") o |= benchmark::ConsoleReporter::OO_Color;
  if (gb.counters_tabular) o |= benchmark::ConsoleReporter::OO_Tabular;
  return static_cast<benchmark::ConsoleReporter::OutputOptions>(o);
}

}  // namespace

std::string gbench_name(const std::string& binary, const reports::Measurement& m) {
  std::string name = binary + "/" + m.name;
  if (!m.group.empty()) name += "/" + m.group;
  for (auto it = m.params.begin(); it != m.params.end(); ++it) {
    const auto& v = it.value();
    const std::string text = v.is_string() ? v.get<std::string>() : json_text(v);
    if (it.key() == "op" && text == m.name) continue;
    name += "/" + it.key() + ":" + text;
  }
  return name;
}

std::string gbench_run_name(const std::string& binary, const reports::Measurement& m, int repetitions) {
  return gbench_name(binary, m) + "/iterations:1/repeats:" + std::to_string(repetitions) + "/manual_time";
}

bool gbench_selects_any(const GbenchOptions& gb, const std::string& binary,
                        const std::vector<reports::Measurement>& ids, int repetitions) {
  if (gb.list_tests) return false;
  for (const auto& id : ids)
    if (gb.selects(gbench_run_name(binary, id, repetitions))) return true;
  return false;
}

GbTimeUnit auto_time_unit(double median_ms) {
  if (median_ms >= 1e3) return GbTimeUnit::s;
  if (median_ms >= 1) return GbTimeUnit::ms;
  if (median_ms >= 1e-3) return GbTimeUnit::us;
  return GbTimeUnit::ns;
}

std::vector<std::pair<std::string, double>> gbench_counters(const reports::Measurement& m, double sample_ms) {
  // The rates of this one sample, derived where every rate is (reports::rates_of).
  reports::Measurement one = m;
  one.samples_ms = {sample_ms};
  const reports::Rates r = reports::rates_of(one);
  std::vector<std::pair<std::string, double>> out;
  auto add = [&](const char* name, double v) {
    if (std::isfinite(v)) out.emplace_back(name, v);
  };
  add("bytes_per_second", r.algbw_bytes_per_s);
  add("algbw", r.algbw_bytes_per_s);
  add("busbw", r.busbw_bytes_per_s);
  add("FLOP/s", r.flop_per_s);
  return out;
}

void report_to_gbench(const GbenchOptions& gb, const GbenchContext& ctx,
                      const std::vector<reports::Measurement>& results) {
  if (gb.list_tests) {
    for (const auto& m : results) {
      const int reps = m.samples_ms.empty() ? ctx.repetitions : static_cast<int>(m.samples_ms.size());
      const std::string name = gbench_run_name(ctx.binary, m, reps);
      if (gb.selects(name)) std::printf("%s\n", name.c_str());
    }
    std::fflush(stdout);
    return;
  }
  // Google Benchmark reads the (already checked) flags itself: filter, aggregates-only, time unit.
  std::vector<std::string> storage{ctx.binary};
  const std::string tmp_out = gb.out.empty() ? "" : fmt::format("{}.tmp.{}", gb.out, ::getpid());
  for (const auto& a : gb.args)
    if (a.rfind("--benchmark_out=", 0) != 0) storage.push_back(a);
  if (!tmp_out.empty()) storage.push_back("--benchmark_out=" + tmp_out);
  std::vector<char*> cargv;
  for (auto& s : storage) cargv.push_back(s.data());
  int argc = static_cast<int>(cargv.size());
  benchmark::Initialize(&argc, cargv.data());
  const auto& build = cli::build_info();
  benchmark::AddCustomContext("layerbench_binary", ctx.binary);
  benchmark::AddCustomContext("layerbench_version", build.version);
  benchmark::AddCustomContext("git_sha", build.git_sha);
  benchmark::AddCustomContext("backend", ctx.backend);
  benchmark::AddCustomContext("ranks", std::to_string(ctx.ranks));
  for (auto it = ctx.timing.begin(); it != ctx.timing.end(); ++it)
    benchmark::AddCustomContext("timing_" + it.key(), it->is_string() ? it->get<std::string>() : it->dump());
  benchmark::ClearRegisteredBenchmarks();
  // Google Benchmark's CSV reporter takes one set of counter columns for every run (it aborts on
  // a run that lacks one): there, a rate a measurement has no work for is NaN.
  std::set<std::string> columns;
  if (gb.format == "csv" || (!gb.out.empty() && gb.out_format == "csv"))
    for (const auto& m : results)
      if (!m.samples_ms.empty())
        for (const auto& c : gbench_counters(m, stats::summarize(m.samples_ms).median)) columns.insert(c.first);
  for (const auto& m : results) {
    if (m.samples_ms.empty()) continue;
    auto shared = std::make_shared<const reports::Measurement>(m);
    auto next = std::make_shared<std::size_t>(0);
    auto* b = benchmark::RegisterBenchmark(gbench_name(ctx.binary, m).c_str(), [shared, next, columns](benchmark::State& state) {
      const auto& samples = shared->samples_ms;
      const double ms = samples[*next % samples.size()];
      ++*next;
      for (auto _ : state) state.SetIterationTime(ms / 1e3);
      for (const auto& c : columns) state.counters[c] = benchmark::Counter(std::numeric_limits<double>::quiet_NaN());
      for (const auto& [name, value] : gbench_counters(*shared, ms)) state.counters[name] = benchmark::Counter(value);
    });
    b->UseManualTime()->Iterations(1)->Repetitions(static_cast<int>(m.samples_ms.size()));
    // An explicit --benchmark_time_unit is Google Benchmark's default unit; otherwise each
    // benchmark gets the unit of its own median.
    if (!gb.time_unit) b->Unit(to_gb(auto_time_unit(stats::summarize(m.samples_ms).median)));
  }
  auto display = make_reporter(gb.format, console_options(gb));
  std::unique_ptr<benchmark::BenchmarkReporter> file;
  if (!gb.out.empty()) file = make_reporter(gb.out_format, benchmark::ConsoleReporter::OO_None);
  benchmark::RunSpecifiedBenchmarks(display.get(), file.get());
  // No benchmark::Shutdown(): in Google Benchmark 1.7 it frees the custom context without
  // resetting the pointer, so any later report in this process would use freed memory.
  std::fflush(stdout);
  if (!tmp_out.empty()) {
    std::ifstream in(tmp_out, std::ios::binary);
    const bool opened = in.is_open();
    std::stringstream text;
    if (opened) text << in.rdbuf();
    in.close();
    std::remove(tmp_out.c_str());
    if (!opened) throw std::runtime_error(fmt::format("--benchmark_out={}: Google Benchmark wrote no report", gb.out));
    write_file_atomic(gb.out, text.str());
  }
}

}  // namespace layerbench::harness
