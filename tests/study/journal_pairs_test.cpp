// The one reader of study files (study/study.hpp) and its pairing rule, as the report and the
// gate take a study (reports::parse_study_jsonl), on valid studies and each kind of bad line: the
// pairs, metric and header, or the error, compared with golden/journal_pairs.txt (first recorded
// from the document-based reader the report used before; since the journal has one reader, a
// layerbench-ab journal gets its strict rules here too, and other JSON Lines of pair/arm records
// the rules parse_study states for them). LB_UPDATE_GOLDEN=1 rewrites the file after an intended
// change; review its diff.
#include "reports/inputs.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// The pairs, metric and header a reader gives, or its error.
template <class Read>
std::string outcome(Read read) {
  try {
    const auto s = read();
    std::string out = "metric=" + s.metric + " header=" + s.header.dump() + "\n";
    for (std::size_t i = 0; i < s.base.size(); ++i)
      out += std::to_string(s.pair_ids[i]) + ": " + std::to_string(s.base[i]) + " " + std::to_string(s.candidate[i]) + "\n";
    return out;
  } catch (const std::exception& e) {
    return std::string("error: ") + e.what();
  }
}

std::string outcome_of_one_pass(const std::string& text, const std::string& metric) {
  return outcome([&] { return layerbench::reports::parse_study_jsonl(text, "s.jsonl", metric); });
}

const std::string kHeader = R"({"type":"study","version":1,"base":"a","candidate":"b","metric":"wall"})";

std::string run(int pair, const char* arm, double v, const std::string& extra = "") {
  return "{\"type\":\"run\",\"pair\":" + std::to_string(pair) + ",\"attempt\":0,\"arm\":\"" + arm +
         "\",\"metric\":" + std::to_string(v) + ",\"status\":\"ok\"" + extra + "}";
}

std::string study(const std::vector<std::string>& lines) {
  std::string t;
  for (const auto& l : lines) t += l + "\n";
  return t;
}

}  // namespace

TEST(JournalPairs, OutcomesMatchTheRecordedRules) {
  const std::string ok = study({kHeader, run(0, "base", 1.0), run(0, "candidate", 0.9), run(1, "candidate", 0.8),
                                run(1, "base", 1.1)});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {ok, ""},
      {ok, "wall"},
      {ok + "{\"type\":\"run\",\"pa", ""},                                        // torn last line: skipped
      {ok + "{\"type\":\"run\",\"pa\n" + run(2, "base", 1) + "\n", ""},            // torn line in the middle
      {ok + "[1,2]\n", ""},                                                       // not an object
      {ok + run(1, "base", 2.0) + "\n", ""},                                      // duplicate
      {ok + "{\"pair\":\"x\",\"arm\":\"base\"}\n", ""},                             // pair not an integer
      {ok + "{\"pair\":1.5,\"arm\":\"base\"}\n", ""},
      {ok + "{\"pair\":3,\"arm\":\"other\"}\n", ""},                                // bad arm
      {ok + "{\"pair\":3,\"arm\":7}\n", ""},
      {ok + "{\"pair\":3,\"arm\":\"Candidate2\",\"metric\":1}\n", ""},              // not one of the journal's arms
      {ok + "{\"pair\":3,\"arm\":\"BASE\",\"metric\":1,\"status\":\"ok\"}\n", ""},  // a journal's arms are exact
      // A duplicate before a bad record and after it: the earlier error counts.
      {ok + run(1, "base", 2.0) + "\n{\"pair\":\"x\",\"arm\":\"base\"}\n", ""},
      {ok + "{\"pair\":\"x\",\"arm\":\"base\"}\n" + run(1, "base", 2.0) + "\n", ""},
      {ok + "{\"pair\":\"x\",\"arm\":\"base\"}\nnot json\n", ""},                   // a parse error comes first
      {ok + run(2, "base", -1.0) + "\n" + run(2, "candidate", 1.0) + "\n", ""},  // negative
      {study({kHeader}), ""},                                                     // no runs
      {study({kHeader, run(0, "base", 1.0)}), ""},                                // no complete pair
      {ok, "time_ms"},                                                            // "metric" numbers win
      // Retries: a failed arm voids its attempt; the first complete attempt counts.
      {study({kHeader, "{\"pair\":0,\"attempt\":0,\"arm\":\"base\",\"metric\":null,\"status\":\"failed\"}",
              "{\"pair\":0,\"attempt\":0,\"arm\":\"candidate\",\"metric\":2,\"status\":\"ok\"}",
              "{\"pair\":0,\"attempt\":1,\"arm\":\"base\",\"metric\":3,\"status\":\"ok\"}",
              "{\"pair\":0,\"attempt\":1,\"arm\":\"candidate\",\"metric\":4,\"status\":\"ok\"}",
              "{\"pair\":0,\"attempt\":2,\"arm\":\"base\",\"metric\":5,\"status\":\"ok\"}",
              "{\"pair\":0,\"attempt\":2,\"arm\":\"candidate\",\"metric\":6,\"status\":\"ok\"}", run(1, "base", 1),
              run(1, "candidate", 1)}),
       ""},
      // Other producers: values under "metrics", a top-level key, "value", ok/error flags.
      {study({"{\"metric_name\":\"t_ms\"}", "{\"pair\":0,\"arm\":\"base\",\"metrics\":{\"t_ms\":1,\"x\":2}}",
              "{\"pair\":0,\"arm\":\"candidate\",\"metrics\":{\"t_ms\":3}}",
              "{\"pair\":1,\"arm\":\"base\",\"t_ms\":4}", "{\"pair\":1,\"arm\":\"candidate\",\"t_ms\":5,\"ok\":false}",
              "{\"pair\":2,\"arm\":\"base\",\"metric\":\"t_ms\",\"value\":6}",
              "{\"pair\":2,\"arm\":\"candidate\",\"metric\":\"t_ms\",\"value\":7,\"error\":null}",
              "{\"pair\":3,\"arm\":\"base\",\"t_ms\":8,\"error\":\"boom\"}", "{\"pair\":3,\"arm\":\"candidate\",\"t_ms\":9}"}),
       ""},
      {study({"{\"pair\":0,\"arm\":\"base\",\"metrics\":{\"only\":1}}", "{\"pair\":0,\"arm\":\"candidate\",\"metrics\":{\"only\":2}}",
              "{\"pair\":1,\"arm\":\"base\",\"metrics\":{\"only\":3}}", "{\"pair\":1,\"arm\":\"candidate\",\"metrics\":{\"only\":4}}"}),
       ""},
      {study({"{\"pair\":0,\"arm\":\"base\",\"value\":1}", "{\"pair\":0,\"arm\":\"candidate\",\"value\":2}",
              "{\"pair\":1,\"arm\":\"base\",\"value\":3}", "{\"pair\":1,\"arm\":\"candidate\",\"value\":4}"}),
       ""},
      {study({"{\"pair\":0,\"arm\":\"base\",\"value\":1}", "{\"pair\":0,\"arm\":\"candidate\",\"value\":2}"}), "nothing"},
      // The header after the first run still names the metric.
      {study({"{\"pair\":0,\"arm\":\"base\",\"metrics\":{\"a\":1,\"b\":5}}",
              "{\"pair\":0,\"arm\":\"candidate\",\"metrics\":{\"a\":2,\"b\":6}}", "{\"metric\":\"b\"}",
              "{\"pair\":1,\"arm\":\"base\",\"metrics\":{\"a\":3,\"b\":7}}",
              "{\"pair\":1,\"arm\":\"candidate\",\"metrics\":{\"a\":4,\"b\":8}}"}),
       ""},
      // A "metric" that is neither a number nor a string makes the named-metric lookup throw.
      {study({"{\"pair\":0,\"arm\":\"base\",\"metric\":null,\"status\":\"ok\"}",
              "{\"pair\":0,\"arm\":\"candidate\",\"metric\":1,\"status\":\"ok\"}"}),
       "t"},
      {ok + run(5, "base", 1, ",\"metrics\":{\"wall\":{\"nested\":1}}") + "\n", "x"},
      {std::string(ok) + "{\"pair\":9,\"arm\":\"base\",\"metric\":1e999}\n" + run(9, "candidate", 1) + "\n", ""},
  };
  std::string all;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& [text, metric] = cases[i];
    all += "== case " + std::to_string(i) + " (metric '" + metric + "')\n" + outcome_of_one_pass(text, metric) + "\n";
  }
  const std::string path = std::string(LB_STUDY_GOLDEN) + "/journal_pairs.txt";
  if (std::getenv("LB_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << all;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), all);
}
