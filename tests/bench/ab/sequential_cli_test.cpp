// layerbench-ab run --sequential end to end: an early stop with the right sign on a real
// difference, an A/A study that stops on equivalence, and a killed study that resumes and stops at
// the same pair as an uninterrupted one. The arms print a metric fixed per pair (known data with
// noise from a fixed generator), so each verdict is the sequential rule's on that data: no
// machine load can move it.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/bench/ab/cli_test_util.hpp"

using namespace layerbench::ab::testing;
using nlohmann::json;

TEST(SequentialCli, RealDifferenceStopsEarlyWithTheRightSign) {
  TempDir dir;
  const auto out = dir.path() / "seq.jsonl";
  // 30 against 20 (as sleep 0.03 against 0.02 in ms), each with noise of sd ~2.3.
  dir.file("base.txt", noisy_values(30, 4, 60, 101));
  dir.file("candidate.txt", noisy_values(20, 4, 60, 202));
  const auto r = run_ab({"run", "--base", pair_value_command(dir.path() / "base.txt"), "--candidate",
                         pair_value_command(dir.path() / "candidate.txt"), "--metric", "ms=regex:value=([0-9.]+)",
                         "--sequential", "--max-pairs", "60", "--out", out.string(), "--json", "-", "--resamples",
                         "2000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  const auto& s = j["sequential"];
  EXPECT_EQ(s["stop"], "effect");
  EXPECT_LT(s["pairs"].get<int>(), 60);  // early: before the cap
  EXPECT_LT(s["interval"]["high"].get<double>(), 0.0);  // candidate - base < 0: the candidate is faster
  EXPECT_EQ(j["n"], s["pairs"]);  // the fixed-n analysis runs on the pairs up to the stop
  EXPECT_NE(s["note"].get<std::string>().find("not the design's error rates"), std::string::npos);
  EXPECT_EQ(records(out, "run").size(), 2 * s["pairs"].get<std::size_t>());  // nothing ran after the stop
  const auto header = records(out, "study").at(0);
  EXPECT_EQ(header["pairs"], 60);
  EXPECT_TRUE(header["sequential"].is_object());

  // The markdown carries the stop too, and `analyze` reads the same stop back from the file.
  const auto md = run_ab({"analyze", out.string(), "--markdown", "-", "--resamples", "2000"});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find(fmt::format("Sequential stop after {} pairs: effect", s["pairs"].get<int>())),
            std::string::npos) << md.out;
  EXPECT_NE(md.out.find("not the design's error rates"), std::string::npos);
}

TEST(SequentialCli, AAStudyStopsOnEquivalence) {
  TempDir dir;
  const auto out = dir.path() / "aa.jsonl";
  // Both arms about 100 (as sleep 0.1 in ms), with noise of sd ~2.3 drawn apart for each.
  dir.file("base.txt", noisy_values(100, 4, 150, 303));
  dir.file("candidate.txt", noisy_values(100, 4, 150, 404));
  const auto r = run_ab({"run", "--base", pair_value_command(dir.path() / "base.txt"), "--candidate",
                         pair_value_command(dir.path() / "candidate.txt"), "--metric", "ms=regex:value=([0-9.]+)",
                         "--sequential", "--equivalence", "5%", "--max-pairs", "150", "--out", out.string(), "--json",
                         "-", "--resamples", "2000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  const auto& s = j["sequential"];
  ASSERT_EQ(s["stop"], "equivalence") << s.dump();
  const double margin = s["margin"].get<double>();
  EXPECT_NEAR(margin, 0.05 * j["base"]["mean"].get<double>(), 1e-12);
  EXPECT_GT(s["interval"]["low"].get<double>(), -margin);
  EXPECT_LT(s["interval"]["high"].get<double>(), margin);
  EXPECT_TRUE(s["equivalence_relative"].get<bool>());
}

TEST(SequentialCli, KilledAndResumedStudyStopsWhereAnUninterruptedOneDoes) {
  TempDir dir;
  // Base about 100, candidate about 97, noise from a fixed generator: a stop after a dozen or more
  // pairs. Every pair's values are fixed (see pair_value_command).
  dir.file("base.txt", noisy_values(100, 7, 200, 12345));
  dir.file("candidate.txt", noisy_values(97, 7, 200, 54321));
  auto args_for = [&](const std::string& study) {
    return std::vector<std::string>{
        "run", "--base", pair_value_command(dir.path() / "base.txt"), "--candidate",
        pair_value_command(dir.path() / "candidate.txt"), "--metric", "regex:value=([0-9.]+)",
        "--sequential", "--equivalence", "1%", "--max-pairs", "150", "--order", "random", "--seed", "5", "--out",
        (dir.path() / study).string(), "--json", "-", "--resamples", "2000"};
  };
  const auto whole = run_ab(args_for("whole.jsonl"));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const auto expected = json::parse(whole.out)["sequential"];
  ASSERT_EQ(expected["stop"], "effect") << expected.dump();
  const int stop_pair = expected["pairs"].get<int>();
  ASSERT_GE(stop_pair, 8) << "the data should need more than a few pairs";

  const auto part = dir.path() / "part.jsonl";
  // Killed after the header, four pairs and one run of the fifth.
  EXPECT_EQ(interrupt_after_lines(args_for("part.jsonl"), dir.path(), part, 1 + 2 * 4 + 1), 128 + SIGKILL);
  ASSERT_LT(records(part, "run").size(), 2u * stop_pair) << "killed after the stop: nothing to resume";

  auto resumed = args_for("part.jsonl");
  resumed.push_back("--resume");
  const auto r = run_ab(resumed);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto got = json::parse(r.out)["sequential"];
  EXPECT_EQ(got["stop"], expected["stop"]);
  EXPECT_EQ(got["pairs"], expected["pairs"]);
  EXPECT_DOUBLE_EQ(got["interval"]["low"].get<double>(), expected["interval"]["low"].get<double>());
  EXPECT_DOUBLE_EQ(got["interval"]["high"].get<double>(), expected["interval"]["high"].get<double>());
  EXPECT_EQ(records(part, "run").size() - records(part, "run").size() % 2, 2u * stop_pair);

  // Resuming a stopped study runs nothing more; a different stop rule is refused.
  const auto lines = read_lines(part).size();
  const auto again = run_ab(resumed);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(read_lines(part).size(), lines);
  auto other = resumed;
  *(std::find(other.begin(), other.end(), "--equivalence") + 1) = "2%";
  const auto refused = run_ab(other);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("stop rule"), std::string::npos) << refused.err;
}

TEST(SequentialCli, BadSequentialOptionsExitTwo) {
  TempDir dir;
  const auto out = (dir.path() / "s.jsonl").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"run", "--base", "true", "--candidate", "true", "--sequential", "--out", out}, "--max-pairs"},
      {{"run", "--base", "true", "--candidate", "true", "--sequential", "--max-pairs", "1", "--out", out},
       "--max-pairs"},
      {{"run", "--base", "true", "--candidate", "true", "--sequential", "--max-pairs", "9", "--equivalence", "five",
        "--out", out}, "--equivalence"},
      {{"run", "--base", "true", "--candidate", "true", "--sequential", "--max-pairs", "9", "--equivalence", "-5%",
        "--out", out}, "--equivalence"},
      {{"run", "--base", "true", "--candidate", "true", "--pairs", "9", "--equivalence", "5%", "--out", out},
       "--sequential"},
  };
  for (const auto& [args, expect] : cases) {
    const auto r = run_ab(args);
    EXPECT_EQ(r.exit_code, 2) << expect << ": " << r.err;
    EXPECT_NE(r.err.find(expect), std::string::npos) << expect << ": " << r.err;
  }
}
