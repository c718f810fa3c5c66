#include "study/metric.hpp"

#include <gtest/gtest.h>

#include "study/errors.hpp"
#include "study/process.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

namespace ab = layerbench::ab;

TEST(Metric, ParsesAndExtracts) {
  ab::ProcessResult run;
  run.wall_seconds = 1.5;
  run.user_seconds = 0.25;
  run.stdout_text = "warming up\ngeneration time: 236.58 s\n{\"timing\": {\"total\": 12.5, \"steps\": [1, 2.5]}}\n";
  EXPECT_EQ(*ab::extract_metric(ab::parse_metric("wall"), run), 1.5);
  EXPECT_EQ(*ab::extract_metric(ab::parse_metric("user"), run), 0.25);
  EXPECT_EQ(*ab::extract_metric(ab::parse_metric("regex:generation time: ([0-9.]+) s"), run), 236.58);
  EXPECT_EQ(*ab::extract_metric(ab::parse_metric("json:timing.total"), run), 12.5);
  EXPECT_EQ(*ab::extract_metric(ab::parse_metric("json:timing.steps.1"), run), 2.5);
  EXPECT_FALSE(ab::extract_metric(ab::parse_metric("json:timing.missing"), run).has_value());
  EXPECT_FALSE(ab::extract_metric(ab::parse_metric("regex:latency=([0-9.]+)"), run).has_value());
  run.stdout_text = "{\"t\": \"0.75\"}";
  EXPECT_EQ(*ab::extract_metric(ab::parse_metric("json:t"), run), 0.75);
}

TEST(Metric, RejectsBadSpecs) {
  EXPECT_THROW(ab::parse_metric("regex:time=[0-9.]+"), ab::InputError);  // no capture group
  EXPECT_THROW(ab::parse_metric("regex:(unclosed"), ab::InputError);
  EXPECT_THROW(ab::parse_metric("json:"), ab::InputError);
  EXPECT_THROW(ab::parse_metric("cycles"), ab::InputError);
}

TEST(Process, CapturesExitStatusTimeAndTimeout) {
  const auto ok = ab::run_shell("printf 'v=42\\n'; exit 3", 0, nullptr);
  EXPECT_EQ(ok.exit_code, 3);
  EXPECT_EQ(ok.stdout_text, "v=42\n");
  EXPECT_FALSE(ok.timed_out);
  EXPECT_GT(ok.wall_seconds, 0.0);
  // The timeout kills the whole process group, including the shell's background child.
  // Real time, as a timeout is: killed after 0.2 s, the bound only tells the kill from the 300 s
  // sleep, with room for a loaded machine.
  const auto slow = ab::run_shell("sleep 300 & sleep 300; echo never", 0.2, nullptr);
  EXPECT_TRUE(slow.timed_out);
  EXPECT_EQ(slow.exit_code, 128 + 9);
  EXPECT_LT(slow.wall_seconds, 120.0);
  EXPECT_EQ(slow.stdout_text.find("never"), std::string::npos);
  const auto burn = ab::run_shell("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done", 0, nullptr);
  EXPECT_GT(burn.user_seconds, 0.0);  // the child's CPU time comes from wait4's rusage
}

TEST(Metric, NamesUnitsSourcesAndFiles) {
  const auto named = ab::parse_metric("gen(s)=stderr:regex:time: ([0-9.]+)");
  EXPECT_EQ(named.name, "gen");
  EXPECT_EQ(named.unit, "s");
  EXPECT_EQ(named.source, ab::MetricSpec::Source::stderr_only);
  const auto rss = ab::parse_metric("peak_rss");
  EXPECT_EQ(rss.name, "peak_rss");
  EXPECT_EQ(rss.unit, "KiB");
  EXPECT_EQ(ab::parse_metric("mem=peak_rss").unit, "KiB");  // a name alone keeps the default unit
  EXPECT_EQ(ab::parse_metric("regex:a=([0-9]+)").name, "metric");  // '=' inside a regex is not a name
  const auto f = ab::parse_metric("file:/tmp/x:y.json:json:a.b");
  EXPECT_EQ(f.path, "/tmp/x:y.json");
  EXPECT_EQ(f.kind, ab::MetricSpec::Kind::json);
  EXPECT_THROW(ab::parse_metric("file:"), ab::InputError);
  EXPECT_THROW(ab::parse_metrics({"regex:a=([0-9]+)", "regex:b=([0-9]+)"}), ab::InputError);  // two "metric"s

  ab::ProcessResult run;
  run.stdout_text = "t=1\n";
  run.stderr_text = "t=2\n";
  EXPECT_EQ(*ab::extract_metric(ab::parse_metric("regex:t=([0-9])"), run), 1.0);  // both: stdout first
  EXPECT_EQ(*ab::extract_metric(ab::parse_metric("stderr:regex:t=([0-9])"), run), 2.0);
  run.stdout_text.clear();
  EXPECT_EQ(*ab::extract_metric(ab::parse_metric("regex:t=([0-9])"), run), 2.0);

  const auto path = (std::filesystem::temp_directory_path() / "lb-metric-file-test.txt").string();
  std::ofstream(path) << " 4.5\n";
  const auto spec = ab::parse_metric("file:" + path);
  EXPECT_EQ(*ab::extract_metric(spec, run, ab::FileStamp{}), 4.5);
  std::string why;
  EXPECT_FALSE(ab::extract_metric(spec, run, ab::stamp_of(path), &why).has_value());  // not rewritten
  EXPECT_NE(why.find("stale"), std::string::npos);
  std::filesystem::remove(path);
  EXPECT_FALSE(ab::extract_metric(spec, run, ab::FileStamp{}, &why).has_value());
  EXPECT_NE(why.find("missing"), std::string::npos);
}

TEST(Process, PeakRssAndStderrAreCaptured) {
  const auto r = ab::run_shell("echo to-err >&2; x=$(head -c 8000000 /dev/zero | tr '\\000' a); echo ${#x}", 0, nullptr);
  EXPECT_EQ(r.stdout_text, "8000000\n");
  EXPECT_EQ(r.stderr_text, "to-err\n");
  EXPECT_GT(r.peak_rss_kib, 7800.0);
  // The progress tick comes about every 100 ms with the seconds elapsed: over a 1 s run at least
  // two (a margin for a loaded machine, whose scheduler can delay a wake-up, never skip ten), and
  // the last reads at least the run's length (a lower bound: load only adds to it).
  std::vector<double> ticks;
  ab::run_shell("sleep 1", 0, nullptr, {}, [&](double s) { ticks.push_back(s); });
  ASSERT_GE(ticks.size(), 2u);
  EXPECT_TRUE(std::is_sorted(ticks.begin(), ticks.end()));
  EXPECT_GE(ticks.back(), 1.0);
  const auto env = ab::run_shell("printf %s \"$LB_X\"", 0, nullptr, {{"LB_X", "pair 3"}});
  EXPECT_EQ(env.stdout_text, "pair 3");
}

