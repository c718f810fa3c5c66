// layerbench-ab run for real engines: metrics read from stderr and from a file the run writes (with
// the stale-file check), peak RSS of every run, several metrics with names and units, three export
// files in one call, and a three-arm study compared against the base with Holm's adjustment.
#include <gtest/gtest.h>

#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/bench/ab/cli_test_util.hpp"

using namespace layerbench::ab::testing;
using nlohmann::json;

TEST(EngineCli, MetricPrintedOnStderrLikePythonLogging) {
  TempDir dir;
  const auto r = run_ab({"run", "--base", "echo 'INFO:root:generation time: 2.5 s' >&2", "--candidate",
                         "echo 'INFO:root:generation time: 2.0 s' >&2", "--pairs", "4", "--metric",
                         "gen(s)=regex:generation time: ([0-9.]+) s", "--out", (dir.path() / "s.jsonl").string(),
                         "--json", "-", "--resamples", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["delta"]["mean"].get<double>(), -0.5);  // candidate - base
  EXPECT_EQ(j["metric"]["name"], "gen");
  EXPECT_EQ(j["metric"]["unit"], "s");
  // stdout: only stdout is searched, so the metric is never found.
  const auto only_out = run_ab({"run", "--base", "echo 'generation time: 2.5 s' >&2", "--candidate",
                                "echo 'generation time: 2.0 s' >&2", "--pairs", "3", "--metric",
                                "stdout:regex:generation time: ([0-9.]+) s", "--out",
                                (dir.path() / "o.jsonl").string()});
  EXPECT_EQ(only_out.exit_code, 2);
  EXPECT_NE(only_out.err.find("never found"), std::string::npos) << only_out.err;
}

TEST(EngineCli, MetricWrittenToAFileIsReReadAndStaleFilesAreRejected) {
  TempDir dir;
  const auto file = (dir.path() / "result.json").string();
  const auto r = run_ab({"run", "--base", fmt::format("printf '{{\"latency_ms\": 12.5}}' > '{}'", file),
                         "--candidate", fmt::format("printf '{{\"latency_ms\": 11.0}}' > '{}'", file), "--pairs", "4",
                         "--metric", fmt::format("latency(ms)=file:{}:json:latency_ms", file), "--out",
                         (dir.path() / "f.jsonl").string(), "--json", "-", "--resamples", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_DOUBLE_EQ(json::parse(r.out)["delta"]["mean"].get<double>(), -1.5);

  // The candidate never writes the file: what it would read is the base's stale value.
  const auto number = (dir.path() / "n.txt").string();
  const auto out = dir.path() / "stale.jsonl";
  const auto stale = run_ab({"run", "--base", fmt::format("echo 3.25 > '{}'", number), "--candidate", "true",
                             "--pairs", "3", "--metric", "file:" + number, "--out", out.string()});
  EXPECT_EQ(stale.exit_code, 2);
  EXPECT_NE(stale.err.find("stale"), std::string::npos) << stale.err;
  for (const auto& run : records(out, "run")) {
    if (run["arm"] == "base") EXPECT_DOUBLE_EQ(run["metric"].get<double>(), 3.25);
    else EXPECT_EQ(run["status"], "no_metric");
  }
}

TEST(EngineCli, PeakRssIsRecordedForEveryRun) {
  TempDir dir;
  const auto out = dir.path() / "rss.jsonl";
  // The candidate's shell holds a 32 MB string: its peak RSS is at least that much larger.
  const auto r = run_ab({"run", "--base", "true", "--candidate",
                         "x=$(head -c 32000000 /dev/zero | tr '\\000' a); echo ${#x} > /dev/null", "--pairs", "3",
                         "--metric", "wall", "--metric", "peak_rss", "--out", out.string(), "--json", "-", "--resamples",
                         "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto runs = records(out, "run");
  ASSERT_EQ(runs.size(), 6u);
  for (const auto& run : runs) {
    EXPECT_GT(run["peak_rss_kib"].get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(run["metrics"]["peak_rss"].get<double>(), run["peak_rss_kib"].get<double>());
    if (run["arm"] == "candidate") {
      EXPECT_GT(run["peak_rss_kib"].get<double>(), 31000.0);
    }
  }
  const auto j = json::parse(r.out);
  ASSERT_EQ(j["comparisons"].size(), 2u);
  const auto& rss = j["comparisons"][1];
  EXPECT_EQ(rss["metric"], "peak_rss");
  EXPECT_EQ(rss["unit"], "KiB");
  EXPECT_GT(rss["delta_mean"].get<double>(), 30000.0);  // candidate - base: the candidate uses more
}

TEST(EngineCli, ThreeExportFilesInOneCall) {
  TempDir dir;
  const auto jf = dir.path() / "r.json", mf = dir.path() / "r.md", cf = dir.path() / "r.csv";
  const auto r = run_ab({"run", "--base", "sleep 0.01; echo n=1", "--candidate", "sleep 0.02; echo n=2", "--pairs",
                         "4", "--metric", "wall", "--metric", "count=regex:n=([0-9])", "--out",
                         (dir.path() / "e.jsonl").string(), "--resamples", "1000", "--json", jf.string(), "--markdown",
                         mf.string(), "--csv", cf.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Paired delta"), std::string::npos);  // the text report still goes to stdout
  const auto j = json::parse(read_text(jf));
  EXPECT_EQ(j["n"], 4);
  EXPECT_EQ(j["comparisons"].size(), 2u);  // wall and count
  const auto md = read_text(mf);
  EXPECT_NE(md.find("| Statistic | Value |"), std::string::npos) << md;
  EXPECT_NE(md.find("Every arm against the base"), std::string::npos);
  const auto lines = read_lines(cf);
  ASSERT_EQ(lines.size(), 1u + 8u);
  EXPECT_EQ(lines[0], "pair,attempt,arm,name,position,start,status,exit,wall_s,user_s,sys_s,peak_rss_kib,count");
  for (std::size_t i = 1; i < lines.size(); ++i) {
    std::stringstream ss(lines[i]);
    std::vector<std::string> cells;
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    ASSERT_EQ(cells.size(), 13u) << lines[i];
    EXPECT_EQ(cells[6], "ok");
    EXPECT_TRUE(std::isfinite(std::stod(cells[8]))) << lines[i];  // the wall time (less the shell's start-up)
    EXPECT_GT(std::stod(cells[11]), 0.0) << lines[i];              // the peak RSS
    EXPECT_EQ(cells[12], cells[2] == "base" ? "1" : "2");
  }
  // `analyze` writes the same files from the study file.
  const auto jf2 = dir.path() / "again.json", cf2 = dir.path() / "again.csv";
  const auto a = run_ab({"analyze", (dir.path() / "e.jsonl").string(), "--resamples", "1000", "--json", jf2.string(),
                         "--csv", cf2.string()});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(json::parse(read_text(jf2)), j);
  EXPECT_EQ(read_text(cf2), read_text(cf));
}

TEST(EngineCli, ThreeArmStudyComparesEachCandidateWithTheBase) {
  TempDir dir;
  const auto out = dir.path() / "three.jsonl";
  const auto r = run_ab({"run", "--base", "echo t=10", "--candidate", "echo t=8", "--candidate", "echo t=10",
                         "--name", "main", "--name", "fast", "--name", "same", "--metric", "t(ms)=regex:t=([0-9]+)",
                         "--pairs", "6", "--out", out.string(), "--json", "-", "--resamples", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json::parse(r.out);
  ASSERT_EQ(j["arms"].size(), 3u);
  EXPECT_EQ(j["arms"][1]["name"], "fast");
  ASSERT_EQ(j["comparisons"].size(), 2u);
  EXPECT_EQ(j["comparisons"][0]["name"], "fast");
  EXPECT_DOUBLE_EQ(j["comparisons"][0]["delta_mean"].get<double>(), -2.0);
  EXPECT_DOUBLE_EQ(j["comparisons"][1]["delta_mean"].get<double>(), 0.0);
  // Holm over the two candidates: the smallest p is doubled (6 pairs: exact p = 1/32).
  EXPECT_DOUBLE_EQ(j["comparisons"][0]["p_wilcoxon"].get<double>(), 0.03125);
  EXPECT_DOUBLE_EQ(j["comparisons"][0]["p_holm"].get<double>(), 0.0625);
  EXPECT_EQ(j["multiplicity"]["method"], "holm");
  EXPECT_EQ(j["multiplicity"]["family_size"], 2);
  // Alternate order rotates: over 3 rounds every arm runs in every position once.
  std::set<std::pair<std::string, int>> seen;
  for (const auto& run : records(out, "run")) {
    if (run["pair"].get<int>() < 3) seen.insert({run["arm"].get<std::string>(), run["position"].get<int>()});
  }
  EXPECT_EQ(seen.size(), 9u);
  const auto text = run_ab({"analyze", out.string(), "--resamples", "1000"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Holm"), std::string::npos);
  EXPECT_NE(text.out.find("fast = 'echo t=8'"), std::string::npos) << text.out;
}

TEST(EngineCli, SmallInconclusiveStudySaysSoOnce) {
  TempDir dir;
  dir.file("b.txt", "10\n10.1\n9.9\n10.2\n10\n10.1\n");
  dir.file("c.txt", "10.2\n10\n10.1\n10.1\n9.8\n10.3\n");
  auto cmd = [&](const char* f) {
    return fmt::format("printf 'v=%s' \"$(sed -n \"$((LAYERBENCH_AB_PAIR+1))p\" '{}')\"", (dir.path() / f).string());
  };
  const auto r = run_ab({"run", "--base", cmd("b.txt"), "--candidate", cmd("c.txt"), "--metric", "regex:v=([0-9.]+)",
                         "--pairs", "6", "--out", (dir.path() / "six.jsonl").string(), "--resamples", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::size_t count = 0;
  for (auto at = r.out.find("nconclusive"); at != std::string::npos; at = r.out.find("nconclusive", at + 1)) ++count;
  EXPECT_EQ(count, 1u) << r.out;
}
