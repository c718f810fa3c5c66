#include "bench/ab/study.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "bench/ab/errors.hpp"

namespace ab = layerbench::ab;

namespace {

ab::RunRecord rec(std::size_t pair, std::size_t attempt, const char* arm, int position, const char* status,
                  double metric) {
  ab::RunRecord r;
  r.pair = pair;
  r.attempt = attempt;
  r.arm = arm;
  r.position = position;
  r.status = status;
  if (std::string(status) == "ok") r.metric = metric;
  return r;
}

std::filesystem::path write_study(const std::string& name, const std::vector<std::string>& lines) {
  const auto p = std::filesystem::temp_directory_path() / name;
  std::ofstream out(p);
  for (const auto& l : lines) out << l << "\n";
  return p;
}

}  // namespace

TEST(Study, CompletedPairsAndResumeStates) {
  ab::Study s;
  s.config.pairs = 4;
  s.runs = {rec(0, 0, "base", 0, "ok", 1.0),        rec(0, 0, "candidate", 1, "ok", 0.5),
            rec(1, 0, "candidate", 0, "failed", 0),  // failed attempt
            rec(1, 1, "candidate", 0, "ok", 0.7),     rec(1, 1, "base", 1, "ok", 1.1),
            rec(2, 0, "base", 0, "ok", 1.2)};  // killed before the candidate ran
  const auto pairs = ab::completed_pairs(s);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].pair, 0u);
  EXPECT_TRUE(pairs[0].base_first);
  EXPECT_DOUBLE_EQ(pairs[1].base, 1.1);
  EXPECT_DOUBLE_EQ(pairs[1].candidate, 0.7);
  EXPECT_FALSE(pairs[1].base_first);
  const auto states = ab::pair_states(s, 4);
  EXPECT_TRUE(states[0].completed);
  EXPECT_TRUE(states[1].completed);
  EXPECT_EQ(states[1].failed_attempts, 1u);
  EXPECT_FALSE(states[2].completed);
  EXPECT_EQ(states[2].failed_attempts, 0u);  // an interrupted attempt is not a failure
  EXPECT_EQ(states[2].next_attempt, 1u);
  EXPECT_EQ(states[3].next_attempt, 0u);
}

TEST(Study, RoundTripAndTruncatedLastLine) {
  ab::StudyConfig c;
  c.base = "sleep 0.01";
  c.candidate = "sleep 0.02";
  c.pairs = 2;
  auto r = rec(0, 0, "base", 0, "ok", 0.0123456789012345);
  r.stdout_tail = "line \"quoted\"\n";
  const auto path = write_study("lb-ab-study-roundtrip.jsonl",
                                {ab::header_json(c).dump(), ab::run_json(r).dump(), "{\"type\": \"run\", \"pai"});
  const auto s = ab::read_study(path.string());
  EXPECT_EQ(s.config.base, "sleep 0.01");
  ASSERT_EQ(s.runs.size(), 1u);  // the torn last line of a killed writer is ignored
  EXPECT_EQ(*s.runs[0].metric, 0.0123456789012345);  // doubles round-trip exactly
  EXPECT_EQ(s.runs[0].stdout_tail, r.stdout_tail);
  std::filesystem::remove(path);
}

TEST(Study, MalformedLinesNameFileAndLine) {
  const auto bad = write_study("lb-ab-study-bad.jsonl", {"{\"type\":\"study\",\"base\":\"a\",\"candidate\":\"b\"}",
                                                         "not json", "{\"type\":\"run\"}"});
  try {
    ab::read_study(bad.string());
    FAIL() << "expected InputError";
  } catch (const ab::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("lb-ab-study-bad.jsonl:2:"), std::string::npos) << e.what();
  }
  const auto headless = write_study("lb-ab-study-headless.jsonl", {"{\"type\":\"run\",\"pair\":0}"});
  EXPECT_THROW(ab::read_study(headless.string()), ab::InputError);
  std::filesystem::remove(bad);
  std::filesystem::remove(headless);
}
