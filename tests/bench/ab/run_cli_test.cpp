// layerbench-ab run end to end with small shell commands (sleep, printf): interleaving, metrics,
// resume after SIGKILL, retries, timeouts, Ctrl-C, output checks and every bad-input case.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "tests/bench/ab/cli_test_util.hpp"

using namespace layerbench::ab::testing;
using nlohmann::json;

namespace {

// A command that prints the next value of a fixed list on each call: a deterministic metric.
std::string sequence_command(const std::filesystem::path& dir) {
  return fmt::format("cd '{}' && n=$(cat counter 2>/dev/null || echo 0); echo $((n+1)) > counter; "
                     "printf 'value=%s\\n' \"$(sed -n \"$((n+1))p\" values)\"",
                     dir.string());
}

}  // namespace

// The significance and its sign on known data: a metric the arms print, fixed per pair (30 against
// 20 with noise from a fixed generator), so the verdict is the tests' and never the machine's.
TEST(RunCli, RealDifferenceIsSignificantWithTheRightSign) {
  TempDir dir;
  const auto out = dir.path() / "study.jsonl";
  dir.file("base.txt", noisy_values(30, 8, 12, 11));
  dir.file("candidate.txt", noisy_values(20, 8, 12, 22));
  const auto r = run_ab({"run", "--base", pair_value_command(dir.path() / "base.txt"), "--candidate",
                         pair_value_command(dir.path() / "candidate.txt"), "--metric", "ms=regex:value=([0-9.]+)",
                         "--metric", "wall", "--pairs", "12", "--out", out.string(), "--json", "-", "--resamples",
                         "2000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json::parse(r.out);
  EXPECT_EQ(j["n"], 12);
  EXPECT_LT(j["delta"]["mean"].get<double>(), 0.0);  // candidate - base < 0: the candidate is faster
  EXPECT_LT(j["wilcoxon"]["p_exact"].get<double>(), 0.01);
  EXPECT_GT(j["wilcoxon"]["w_minus"].get<double>(), j["wilcoxon"]["w_plus"].get<double>());
  // Interleaved: alternate order, both arms of a pair back to back, fsync'ed lines; the wall time
  // is recorded beside the metric for every run.
  const auto runs = records(out, "run");
  ASSERT_EQ(runs.size(), 24u);
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const std::size_t pair = k / 2;
    EXPECT_EQ(runs[k]["pair"], pair);
    EXPECT_EQ(runs[k]["position"], k % 2);
    const bool base_first = pair % 2 == 0;
    EXPECT_EQ(runs[k]["arm"], (k % 2 == 0) == base_first ? "base" : "candidate");
    EXPECT_EQ(runs[k]["status"], "ok");
    EXPECT_TRUE(runs[k]["wall"].is_number()) << runs[k].dump();
    EXPECT_TRUE(runs[k]["metrics"]["wall"].is_number()) << runs[k].dump();
  }
  EXPECT_EQ(j["diagnostics"]["order"]["base_first"], 6);
  EXPECT_EQ(j["diagnostics"]["order"]["candidate_first"], 6);
  EXPECT_NE(r.err.find("pair 0 done"), std::string::npos);  // plain progress lines off a TTY
}

// The wall time measures the command: run directly (no shell start-up subtracted), `sleep S`
// takes at least S, however loaded the machine (a lower bound only: load can only add to it).
TEST(RunCli, WallTimeCoversTheCommand) {
  TempDir dir;
  const auto out = dir.path() / "wall.jsonl";
  const auto r = run_ab({"run", "-N", "--base", "sleep 0.03", "--candidate", "sleep 0.02", "--pairs", "2", "--out",
                         out.string(), "--resamples", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto runs = records(out, "run");
  ASSERT_EQ(runs.size(), 4u);
  for (const auto& run : runs) {
    EXPECT_GE(run["wall"].get<double>(), run["arm"] == "base" ? 0.03 : 0.02) << run.dump();
    EXPECT_GE(run["user"].get<double>(), 0.0) << run.dump();
  }
}

// A true null on known data: both arms drawn from one distribution (apart), 12 pairs.
TEST(RunCli, AANoisyMetricIsNotSignificant) {
  TempDir dir;
  dir.file("base.txt", noisy_values(10, 8, 12, 33));
  dir.file("candidate.txt", noisy_values(10, 8, 12, 44));
  const auto r = run_ab({"run", "--base", pair_value_command(dir.path() / "base.txt"), "--candidate",
                         pair_value_command(dir.path() / "candidate.txt"), "--metric", "regex:value=([0-9.]+)",
                         "--pairs", "12", "--out", (dir.path() / "aa.jsonl").string(), "--json", "-", "--resamples",
                         "2000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json::parse(r.out);
  EXPECT_GT(j["wilcoxon"]["p_exact"].get<double>(), 0.05);
  EXPECT_GT(j["t_test"]["p"].get<double>(), 0.05);
}

TEST(RunCli, AADeterministicMetricReadsAsNull) {
  TempDir dir;
  // Deltas +1, -1, +2, -2, ... in run order (alternate: even pairs run base first).
  std::string values;
  for (int i = 0; i < 12; ++i) {
    const int d = (i % 2 == 0 ? 1 : -1) * (1 + i / 2);
    const bool base_first = i % 2 == 0;
    values += base_first ? fmt::format("{}\n10\n", 10 + d) : fmt::format("10\n{}\n", 10 + d);
  }
  dir.file("values", values);
  const auto cmd = sequence_command(dir.path());
  const auto r = run_ab({"run", "--base", cmd, "--candidate", cmd, "--pairs", "12", "--metric",
                         "regex:value=([0-9.]+)", "--out", (dir.path() / "s.jsonl").string(), "--json", "-",
                         "--resamples", "2000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["delta"]["mean"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j["wilcoxon"]["p_exact"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["t_test"]["p"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["sign_test"]["p"].get<double>(), 1.0);
}

TEST(RunCli, SigkillThenResumeEndsWithExactlyNPairsAndMatchesAnalyze) {
  TempDir dir;
  const auto out = dir.path() / "study.jsonl";
  const std::vector<std::string> args{"run", "--base", "sleep 0.05", "--candidate", "sleep 0.04", "--pairs", "8",
                                      "--out", out.string(), "--json", "-", "--resamples", "2000"};
  EXPECT_EQ(interrupt_after_lines(args, dir.path(), out, 1 + 7), 128 + SIGKILL);  // header and 3.5 pairs
  const auto before = read_lines(out);
  ASSERT_LT(before.size(), 1u + 16u);

  auto resumed_args = args;
  resumed_args.push_back("--resume");
  const auto r = run_ab(resumed_args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("resuming"), std::string::npos);
  const auto after = read_lines(out);
  for (std::size_t i = 0; i + 1 < before.size(); ++i) EXPECT_EQ(after[i], before[i]);  // nothing rewritten

  // Exactly 8 pairs, each complete exactly once.
  std::map<std::pair<int, int>, std::set<std::string>> arms;  // (pair, attempt) -> ok arms
  for (const auto& run : records(out, "run")) {
    if (run["status"] == "ok") arms[{run["pair"].get<int>(), run["attempt"].get<int>()}].insert(run["arm"]);
  }
  std::map<int, int> complete;
  for (const auto& [key, set] : arms) complete[key.first] += set.size() == 2;
  ASSERT_EQ(complete.size(), 8u);
  for (const auto& [pair, count] : complete) EXPECT_EQ(count, 1) << "pair " << pair;

  const auto j = json::parse(r.out);
  EXPECT_EQ(j["n"], 8);
  const auto analyzed = run_ab({"analyze", out.string(), "--json", "-", "--resamples", "2000"});
  ASSERT_EQ(analyzed.exit_code, 0) << analyzed.err;
  EXPECT_EQ(json::parse(analyzed.out), j);  // the same records give the same analysis
}

TEST(RunCli, ResumeRefusesOtherCommandsAndExistingFileNeedsResume) {
  TempDir dir;
  const auto out = (dir.path() / "s.jsonl").string();
  ASSERT_EQ(run_ab({"run", "--base", "true", "--candidate", "true", "--pairs", "2", "--out", out, "--resamples",
                    "1000"}).exit_code, 0);
  const auto again = run_ab({"run", "--base", "true", "--candidate", "true", "--pairs", "2", "--out", out});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("--resume"), std::string::npos) << again.err;
  const auto other = run_ab({"run", "--base", "true", "--candidate", "sleep 0", "--pairs", "2", "--out", out,
                             "--resume"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("refusing to resume with 'sleep 0'"), std::string::npos) << other.err;
  // Resuming a finished study runs nothing new and prints the same analysis.
  const auto done = run_ab({"run", "--base", "true", "--candidate", "true", "--pairs", "2", "--out", out, "--resume",
                            "--resamples", "1000", "--json", "-"});
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(records(out, "run").size(), 4u);
}

TEST(RunCli, BadInputExitsTwo) {
  TempDir dir;
  const auto out = (dir.path() / "s.jsonl").string();
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  const std::vector<Case> cases{
      {{"run", "--base", "true", "--pairs", "2", "--out", out}, "--candidate"},
      {{"run", "--base", "", "--candidate", "true", "--pairs", "2", "--out", out}, "missing command"},
      {{"run", "--base", "true", "--candidate", "true", "--pairs", "0", "--out", out}, "--pairs"},
      {{"run", "--base", "true", "--candidate", "true", "--pairs", "2", "--metric", "regex:t=[0-9]+", "--out", out},
       "capture group"},
      {{"run", "--base", "true", "--candidate", "true", "--pairs", "2", "--out", "/nonexistent-dir/s.jsonl"},
       "directory '/nonexistent-dir' does not exist"},
      {{"run", "--base", "true", "--candidate", "true", "--pairs", "2", "--order", "zigzag", "--out", out}, "--order"},
  };
  for (const auto& c : cases) {
    const auto r = run_ab(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.expect;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.expect << ": " << r.err;
  }
  const auto never = run_ab({"run", "--base", "echo hello", "--candidate", "echo hello", "--pairs", "3", "--metric",
                             "regex:time=([0-9.]+)", "--out", (dir.path() / "never.jsonl").string()});
  EXPECT_EQ(never.exit_code, 2);
  EXPECT_NE(never.err.find("never found"), std::string::npos) << never.err;
}

TEST(RunCli, FailedRunsAreRetriedOrExcluded) {
  TempDir dir;
  // The candidate fails on its first call only.
  const auto flaky = fmt::format("test -f '{0}/flag' || {{ touch '{0}/flag'; exit 3; }}", dir.path().string());
  const auto out = dir.path() / "retry.jsonl";
  const auto r = run_ab({"run", "--base", "true", "--candidate", flaky, "--pairs", "3", "--retries", "1", "--out",
                         out.string(), "--json", "-", "--resamples", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json::parse(r.out);
  EXPECT_EQ(j["n"], 3);
  EXPECT_EQ(j["diagnostics"]["failed_runs"], 1);
  EXPECT_TRUE(j["diagnostics"]["excluded_pairs"].empty());
  const auto failed = records(out, "run")[1];  // pair 0 runs base first, then the failing candidate
  EXPECT_EQ(failed["arm"], "candidate");
  EXPECT_EQ(failed["status"], "failed");
  EXPECT_EQ(failed["exit"], 3);

  std::filesystem::remove(dir.path() / "flag");
  const auto out2 = dir.path() / "exclude.jsonl";
  // Without --retries a failure stops the study unless --ignore-failure excludes the pair instead.
  const auto stop = run_ab({"run", "--base", "true", "--candidate", flaky, "--pairs", "4", "--out",
                            (dir.path() / "stop.jsonl").string()});
  EXPECT_EQ(stop.exit_code, 2);
  EXPECT_NE(stop.err.find("stopped at the first failure"), std::string::npos) << stop.err;
  std::filesystem::remove(dir.path() / "flag");
  const auto x = run_ab({"run", "--base", "true", "--candidate", flaky, "--pairs", "4", "--out", out2.string(),
                         "--ignore-failure", "--json", "-", "--resamples", "1000"});
  ASSERT_EQ(x.exit_code, 0) << x.err;
  const auto k = json::parse(x.out);
  EXPECT_EQ(k["n"], 3);
  EXPECT_EQ(k["diagnostics"]["excluded_pairs"], json::array({0}));
}

TEST(RunCli, TimeoutKillsTheRunAndIsRecorded) {
  TempDir dir;
  // Real time, as a timeout is: the first base run sleeps 300 s and is killed after 2 s; every other
  // run is `true`, which no load stretches to 2 s. The bound (120 s) only tells the kill from the
  // full sleep, with room for a loaded machine.
  const auto slow_once =
      fmt::format("test -f '{0}/flag' || {{ touch '{0}/flag'; sleep 300; }}", dir.path().string());
  const auto out = dir.path() / "t.jsonl";
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_ab({"run", "--base", slow_once, "--candidate", "true", "--pairs", "2", "--timeout", "2",
                         "--retries", "1", "--out", out.string(), "--json", "-", "--resamples", "1000"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(120));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto first = records(out, "run")[0];
  EXPECT_EQ(first["status"], "timeout");
  EXPECT_EQ(json::parse(r.out)["n"], 2);
}

TEST(RunCli, CtrlCStopsAfterWritingWhatFinished) {
  TempDir dir;
  const auto out = dir.path() / "int.jsonl";
  EXPECT_EQ(interrupt_after_lines({"run", "--base", "sleep 0.02", "--candidate", "sleep 0.02", "--pairs", "500", "--out",
                                   out.string(), "--resamples", "1000"},
                                  dir.path(), out, 1 + 8, SIGINT),
            130);
  const auto lines = read_lines(out);
  EXPECT_LT(lines.size(), 1u + 1000u);
  for (const auto& line : lines) EXPECT_TRUE(json::accept(line)) << line;
  EXPECT_NE(read_text(dir.path() / "bg.out").find("Paired delta"), std::string::npos);
  EXPECT_NE(read_text(dir.path() / "bg.err").find("interrupted"), std::string::npos);
}

TEST(RunCli, MetricsOrderAndOutputCheck) {
  TempDir dir;
  const auto outfile = (dir.path() / "decoded.bin").string();
  const auto r = run_ab({"run", "--base", "printf '{\"gen\": {\"ms\": 12.5}}'; printf abc > " + outfile,
                         "--candidate", "printf '{\"gen\": {\"ms\": 11.0}}'; printf abc > " + outfile, "--pairs", "6",
                         "--metric", "json:gen.ms", "--order", "random", "--seed", "11", "--check-output", outfile,
                         "--out", (dir.path() / "m.jsonl").string(), "--json", "-", "--resamples", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["delta"]["mean"].get<double>(), -1.5);
  EXPECT_EQ(j["diagnostics"]["output_check"]["identical_pairs"], 6);
  const auto first_arms = [&](const std::filesystem::path& p) {
    std::string s;
    for (const auto& run : records(p, "run")) {
      if (run["position"] == 0) s += run["arm"] == "base" ? 'B' : 'C';
    }
    return s;
  };
  const auto order = first_arms(dir.path() / "m.jsonl");
  EXPECT_NE(order.find('B'), std::string::npos);
  EXPECT_NE(order.find('C'), std::string::npos);

  const auto differ = run_ab({"run", "--base", "printf abc > " + outfile, "--candidate", "printf abd > " + outfile,
                              "--pairs", "3", "--metric", "user", "--order", "random", "--seed", "11",
                              "--check-output", outfile, "--out", (dir.path() / "d.jsonl").string(), "--json", "-",
                              "--resamples", "1000"});
  ASSERT_EQ(differ.exit_code, 0) << differ.err;
  EXPECT_EQ(json::parse(differ.out)["diagnostics"]["output_check"]["differing_pairs"], 3);
  EXPECT_EQ(first_arms(dir.path() / "d.jsonl"), order.substr(0, 3));  // seeded order reproduces

  // An "output" that is a FIFO is never opened (reading it would stall the study until a writer
  // came): the pairs' outputs are counted missing, as no file.
  const auto fifo = run_ab({"run", "--base", "mkfifo " + outfile, "--candidate", "mkfifo " + outfile, "--pairs", "3",
                            "--metric", "user", "--check-output", outfile, "--out", (dir.path() / "f.jsonl").string(),
                            "--json", "-", "--resamples", "1000"});
  ASSERT_EQ(fifo.exit_code, 0) << fifo.err;
  EXPECT_EQ(json::parse(fifo.out)["diagnostics"]["output_check"]["missing"], 3);
}

TEST(RunCli, PrepareRunsBeforeEveryRunAndWarmupIsNotRecorded) {
  TempDir dir;
  const auto log = (dir.path() / "prep.log").string();
  const auto out = dir.path() / "p.jsonl";
  const auto r = run_ab({"run", "--base", "echo b >> " + log, "--candidate", "echo c >> " + log, "--prepare",
                         "echo p >> " + log, "--warmup", "1", "--pairs", "3", "--order", "fixed", "--out",
                         out.string(), "--json", "-", "--resamples", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // One warm-up round (p b p c) and three fixed-order pairs (p b p c each).
  EXPECT_EQ(read_text(log), "p\nb\np\nc\np\nb\np\nc\np\nb\np\nc\np\nb\np\nc\n");
  EXPECT_EQ(records(out, "run").size(), 6u);
  EXPECT_EQ(json::parse(r.out)["diagnostics"]["order"]["candidate_first"], 0);
}
