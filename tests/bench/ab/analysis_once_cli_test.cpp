// One analysis per run, through the command line: `layerbench-ab run` and `layerbench-ab analyze`
// asked for text, --json, --markdown and --csv at once analyse the study once; the printers only
// print that analysis (study_analyses_run counts the calls in this process).
#include "bench/ab/cli.hpp"
#include "study/study_report.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

namespace ab = layerbench::ab;
namespace fs = std::filesystem;

namespace {

int cli(std::vector<std::string> args) {
  args.insert(args.begin(), "layerbench-ab");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  return ab::run_cli(static_cast<int>(args.size()), argv.data());
}

struct Dir {
  fs::path path = fs::temp_directory_path() / ("lb-ab-once-" + std::to_string(::getpid()));
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

}  // namespace

TEST(AnalysisOnce, RunAndAnalyzeWithEveryFormat) {
  ::setenv("LAYERBENCH_PROGRESS", "off", 1);
  const Dir d;
  const auto study = d / "s.jsonl";
  auto before = ab::study_analyses_run();
  ASSERT_EQ(cli({"run", "--metric", "t(ms)=regex:t=([0-9]+)", "--metric", "wall", "--pairs", "5", "--resamples", "1000",
                 "--study", study, "--json", d / "run.json", "--markdown", d / "run.md", "--csv", d / "run.csv",
                 "echo t=$((10 + LAYERBENCH_AB_PAIR % 3))", "echo t=$((12 + LAYERBENCH_AB_PAIR % 2))"}),
            0);
  EXPECT_EQ(ab::study_analyses_run() - before, 1u);
  before = ab::study_analyses_run();
  ASSERT_EQ(cli({"analyze", study, "--resamples", "1000", "--json", d / "a.json", "--markdown", d / "a.md", "--csv",
                 d / "a.csv"}),
            0);
  EXPECT_EQ(ab::study_analyses_run() - before, 1u);
  for (const auto* name : {"run.json", "run.md", "run.csv", "a.json", "a.md", "a.csv"})
    EXPECT_GT(fs::file_size(d / name), 0u) << name;
}
