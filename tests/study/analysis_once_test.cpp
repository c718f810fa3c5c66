// A study is analysed once per run, whatever the number of output formats: `run` with text,
// --json, --markdown and --csv calls analyze_study exactly once, and the printers only print it.
#include "study/runner.hpp"
#include "study/study_report.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace ab = layerbench::ab;

TEST(StudyAnalysis, OneAnalysisPerRun) {
  const auto dir = std::filesystem::temp_directory_path() / ("lb-analysis-once-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ab::RunOptions o;
  o.config.base = "echo t=$((10 + LAYERBENCH_AB_PAIR % 3))";
  o.config.candidate = "echo t=$((12 + LAYERBENCH_AB_PAIR % 2))";
  o.config.metric = "t(ms)=regex:t=([0-9]+)";
  o.config.metrics = {"wall"};
  o.config.pairs = 6;
  o.config.shell = "sh";
  o.out = (dir / "s.jsonl").string();
  o.json = (dir / "a.json").string();
  o.markdown = (dir / "a.md").string();
  o.csv = (dir / "a.csv").string();
  o.analysis.resamples = 1000;
  const auto before = ab::study_analyses_run();
  ASSERT_EQ(ab::run_study(o), 0);
  EXPECT_EQ(ab::study_analyses_run() - before, 1u);  // text, JSON, markdown: one analysis
  std::ifstream in(o.json);
  std::stringstream ss;
  ss << in.rdbuf();
  const auto j = nlohmann::json::parse(ss.str());
  EXPECT_EQ(j["pairs"]["base"].size(), 6u);  // the analysis carries its pairs
  EXPECT_GT(j["delta"]["mean"].get<double>(), 0);  // candidate - base: the candidate is larger
  std::filesystem::remove_all(dir);
}
