// layerbench-ab run --sequential end to end: an early stop with the right sign on a real timing
// difference, an A/A study that stops on equivalence, and a killed study that resumes and stops at
// the same pair as an uninterrupted one.
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

namespace {

// A command whose metric is line PAIR+1 of `values`: each pair's values are fixed, so a resumed
// study sees the same data as an uninterrupted one.
std::string pair_value_command(const std::filesystem::path& dir, const std::string& values) {
  return fmt::format("printf 'value=%s\\n' \"$(sed -n \"$((LAYERBENCH_AB_PAIR+1))p\" '{}')\"",
                     (dir / values).string());
}

}  // namespace

TEST(SequentialCli, RealDifferenceStopsEarlyWithTheRightSign) {
  TempDir dir;
  const auto out = dir.path() / "seq.jsonl";
  // Repeated (up to 5 times) until it stops on an effect: start-up noise can hide 10 ms now and then.
  const auto r = run_ab_until({"run", "--base", "sleep 0.03", "--candidate", "sleep 0.02", "--sequential",
                               "--max-pairs", "60", "--out", out.string(), "--json", "-", "--resamples", "2000"},
                              out, 5, [](const CliResult& c) { return json::parse(c.out)["sequential"]["stop"] == "effect"; });
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
  // An A/A study errs (stops on "effect") <= 5% of the time: up to 3 attempts.
  const auto r = run_ab_until({"run", "--base", "sleep 0.1", "--candidate", "sleep 0.1", "--sequential",
                               "--equivalence", "5%", "--max-pairs", "150", "--out", out.string(), "--json", "-",
                               "--resamples", "2000"},
                              out, 3,
                              [](const CliResult& c) { return json::parse(c.out)["sequential"]["stop"] == "equivalence"; });
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
  std::string base_values, candidate_values;
  std::uint64_t x = 12345;
  auto noise = [&] {
    double s = 0;
    for (int i = 0; i < 4; ++i) {  // a sum of uniforms: bell-shaped, deterministic
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      s += static_cast<double>(x >> 11) / 9007199254740992.0 - 0.5;
    }
    return 7 * s;
  };
  for (int i = 0; i < 200; ++i) {
    base_values += fmt::format("{:.4f}\n", 100 + noise());
    candidate_values += fmt::format("{:.4f}\n", 97 + noise());
  }
  dir.file("base.txt", base_values);
  dir.file("candidate.txt", candidate_values);
  auto args_for = [&](const std::string& study) {
    return std::vector<std::string>{
        "run", "--base", pair_value_command(dir.path(), "base.txt"), "--candidate",
        pair_value_command(dir.path(), "candidate.txt"), "--metric", "regex:value=([0-9.]+)",
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
