#include "study/study.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "study/errors.hpp"

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

namespace {

// What reading a study gives: every run as JSON and the excluded pairs, or the error.
std::string read_outcome(const std::string& text) {
  try {
    const auto s = ab::parse_study(text, "s.jsonl");
    std::string out;
    for (const auto& r : s.runs) out += ab::run_json(r).dump() + "\n";
    for (auto p : s.excluded) out += "excluded " + std::to_string(p) + "\n";
    return out;
  } catch (const std::exception& e) {
    return std::string("error: ") + e.what();
  }
}

}  // namespace

// Run records in the form `run` writes are read without a JSON document; any other form goes
// through nlohmann::json. Each record read both ways ("telemetry": null sends a line through the
// document path and changes nothing else) gives the same runs or the same error.
TEST(Study, RecordsReadWithoutADocumentAgreeWithTheDocumentPath) {
  const std::string header = R"({"type":"study","version":1,"base":"a","candidate":"b","pairs":2})";
  const std::string ok0 = R"({"type":"run","pair":0,"attempt":0,"arm":"base","position":0,"start":1.5,"metric":0.5,)"
                          R"("wall":0.5,"user":0.1,"sys":0.01,"peak_rss_kib":1024,"metrics":{"wall":0.5,"t":3},)"
                          R"("exit":0,"status":"ok","stdout_tail":"x\ny"})";
  const std::vector<std::string> variants = {
      ok0,
      R"({"type":"run","pair":0,"arm":"candidate","metric":null,"status":"failed","exit":-1})",
      R"({"type":"run","pair":0,"arm":"candidate","metric":2,"status":"ok","output_hash":"ab12"})",
      R"({"type":"run","pair":1,"attempt":3,"arm":"base","metric":1,"status":"ok","extra":{"z":[1]}})",
      R"({"type":"run","pair":0,"arm":"base","metric":1,"status":"ok","metrics":{"a":1,"a":"s"}})",  // repeated key
      R"({"type":"run","pair":0,"arm":"base","metric":1,"status":"ok","metrics":{"n":{"deep":1},"s":"t"}})",
      R"({"type":"run","pair":0,"arm":"base","metric":1,"status":"ok","metrics":5})",
      R"({"type":"run","pair":1.5,"arm":"base","metric":1,"status":"ok"})",   // float pair
      R"({"type":"run","pair":-1,"arm":"base","metric":1,"status":"ok"})",    // negative pair
      R"({"type":"run","pair":"1","arm":"base","metric":1,"status":"ok"})",
      R"({"type":"run","arm":"base","metric":1,"status":"ok"})",              // no pair
      R"({"type":"run","pair":0,"arm":"base","status":"ok"})",                // no metric
      R"({"type":"run","pair":0,"arm":"base","metric":"1","status":"ok"})",
      R"({"type":"run","pair":0,"arm":"base","metric":null,"status":"ok"})",  // ok without a metric
      R"({"type":"run","pair":0,"arm":"other","metric":1,"status":"ok"})",
      R"({"type":"run","pair":0,"arm":"other","metric":1,"status":"ok","start":"late"})",  // arm error first
      R"({"type":"run","pair":0,"arm":"base","metric":1,"status":"ok","position":4294967296})",
      R"({"type":"run","pair":0,"arm":"base","metric":1,"status":"ok","position":-3,"exit":2.5})",
      R"({"type":"run","pair":0,"arm":"base","metric":1,"status":"ok","attempt":null})",
      R"({"type":"run","pair":0,"arm":"base","metric":1,"status":"ok","stdout_tail":null})",
      R"({"type":"run","pair":0,"arm":"base","metric":1,"status":3})",
      R"({"type":"run","pair":0,"arm":"base","metric":1,"status":"ok","wall":true})",
      R"({"type":"run","pair":0,"arm":"base","metric":1,"status":"ok","pair":1})",  // repeated: the last counts
      R"({"type":"pair_excluded","pair":1})",
  };
  for (const auto& v : variants) {
    for (const auto& second : {std::string{}, ok0}) {  // also as a duplicate after ok0
      const std::string fast = header + "\n" + second + (second.empty() ? "" : "\n") + v + "\n";
      std::string slow_v = v;
      slow_v.insert(1, "\"telemetry\":null,");
      std::string slow_ok0 = ok0;
      slow_ok0.insert(1, "\"telemetry\":null,");
      const std::string slow =
          header + "\n" + (second.empty() ? "" : slow_ok0 + "\n") + slow_v + "\n";
      EXPECT_EQ(read_outcome(fast), read_outcome(slow)) << v;
    }
  }
  // Out of (pair, attempt) order, duplicates are still found.
  const auto run = [](int pair, int attempt, const char* arm) {
    return "{\"type\":\"run\",\"pair\":" + std::to_string(pair) + ",\"attempt\":" + std::to_string(attempt) +
           ",\"arm\":\"" + arm + "\",\"metric\":1,\"status\":\"ok\"}\n";
  };
  const auto out_of_order = header + "\n" + run(2, 0, "base") + run(1, 0, "base") + run(2, 1, "base") +
                            run(2, 0, "candidate") + run(1, 0, "base");
  EXPECT_NE(read_outcome(out_of_order).find("s.jsonl:6: pair 1 attempt 0 has a second base run"), std::string::npos)
      << read_outcome(out_of_order);
  const auto in_order = header + "\n" + run(0, 0, "base") + run(0, 0, "candidate") + run(0, 1, "base") + run(0, 0, "base");
  EXPECT_NE(read_outcome(in_order).find("s.jsonl:5: pair 0 attempt 0 has a second base run"), std::string::npos)
      << read_outcome(in_order);
}

TEST(Study, CompletedPairsOutOfOrderKeepPairOrderAndTheFirstCompleteAttempt) {
  ab::Study s;
  s.config.pairs = 3;
  s.runs = {rec(2, 0, "base", 0, "ok", 2.0),      rec(1, 1, "base", 0, "ok", 1.5),  rec(1, 1, "candidate", 1, "ok", 1.4),
            rec(1, 0, "candidate", 0, "ok", 1.1), rec(2, 0, "candidate", 1, "ok", 1.9), rec(1, 0, "base", 1, "ok", 1.2),
            rec(0, 0, "base", 1, "failed", 0),    rec(0, 0, "candidate", 0, "ok", 0.5)};
  const auto pairs = ab::completed_pairs(s);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].pair, 1u);
  EXPECT_DOUBLE_EQ(pairs[0].base, 1.2);  // attempt 0, although attempt 1 came first in the file
  EXPECT_FALSE(pairs[0].base_first);
  EXPECT_EQ(pairs[1].pair, 2u);
  EXPECT_DOUBLE_EQ(pairs[1].candidate, 1.9);
  EXPECT_TRUE(ab::completed_pairs(s, "candidate3").empty());
}

TEST(Study, AValuesOnlyReadKeepsEveryValueAndDropsTheRunsText) {
  // Runs as `run` writes them (one with telemetry, read through the document path), with stdout
  // tails and output hashes: the gate's and the report's read keeps the values, not the text.
  ab::StudyConfig c;
  c.base = "a";
  c.candidate = "b";
  c.pairs = 2;
  std::string text = ab::header_json(c).dump() + "\n";
  for (std::size_t pair = 0; pair < 2; ++pair) {
    for (const char* arm : {"base", "candidate"}) {
      auto r = rec(pair, 0, arm, arm[0] == 'b' ? 0 : 1, "ok", 1.0 + static_cast<double>(pair) + (arm[0] == 'c'));
      r.wall = *r.metric;
      r.metrics = {{"lat", 2.0 * *r.metric}};
      r.stdout_tail = std::string(300, 'x');
      r.output_hash = "abc123";
      if (pair == 1) r.telemetry = {{"combined", {{"sm_clock_mhz", 1500}}}};
      text += ab::run_json(r).dump() + "\n";
    }
  }
  const auto all = ab::parse_study(text, "s.jsonl");
  const auto values = ab::parse_study(text, "s.jsonl", ab::Keep::values);
  ASSERT_EQ(all.runs.size(), 4u);
  ASSERT_EQ(values.runs.size(), 4u);
  EXPECT_EQ(all.runs[0].stdout_tail.size(), 300u);
  EXPECT_FALSE(all.runs[3].telemetry.is_null());
  for (std::size_t i = 0; i < 4; ++i) {
    const auto &a = all.runs[i], &v = values.runs[i];
    EXPECT_EQ(v.pair, a.pair);
    EXPECT_EQ(v.arm, a.arm);
    EXPECT_EQ(v.status, a.status);
    EXPECT_EQ(v.metric, a.metric);
    EXPECT_EQ(v.wall, a.wall);
    EXPECT_EQ(v.metrics, a.metrics);
    EXPECT_TRUE(v.stdout_tail.empty());
    EXPECT_TRUE(v.output_hash.empty());
    EXPECT_TRUE(v.telemetry.is_null());
  }
  for (const char* metric : {"", "lat", "wall"}) {
    const auto p = ab::paired_values(all, "s.jsonl", metric);
    const auto q = ab::paired_values(values, "s.jsonl", metric);
    EXPECT_EQ(p.base, q.base) << metric;
    EXPECT_EQ(p.candidate, q.candidate) << metric;
    EXPECT_EQ(p.pair_ids, q.pair_ids) << metric;
  }
}
