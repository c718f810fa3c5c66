// The shared command-line pieces: fractions and percentages, the atomic output writer, the
// version text (the progress display: progress_test.cpp).
#include "common/cli/app.hpp"
#include "common/cli/output_file.hpp"
#include "common/cli/version.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace lc = layerbench::cli;

TEST(Cli, FractionsAndPercentages) {
  EXPECT_DOUBLE_EQ(lc::parse_fraction("--alpha", "0.05"), 0.05);
  EXPECT_DOUBLE_EQ(lc::parse_fraction("--alpha", "5%"), 0.05);
  EXPECT_DOUBLE_EQ(lc::parse_fraction("--confidence", "99.9%"), 0.999);
  EXPECT_THROW(lc::parse_fraction("--alpha", "five"), CLI::ValidationError);
  EXPECT_THROW(lc::parse_fraction("--alpha", "%"), CLI::ValidationError);
  EXPECT_THROW(lc::parse_fraction("--alpha", "0.05x"), CLI::ValidationError);
}

TEST(Cli, ConfidenceAndAlphaAreOneSetting) {
  auto parse = [](std::vector<std::string> args, double& confidence, double& alpha) {
    CLI::App app;
    lc::add_confidence_options(app, confidence, alpha);
    std::vector<std::string> rev(args.rbegin(), args.rend());
    app.parse(rev);
  };
  double c = 0.95, a = 0.05;
  parse({"--alpha", "1%"}, c, a);
  EXPECT_DOUBLE_EQ(a, 0.01);
  EXPECT_NEAR(c, 0.99, 1e-15);
  parse({"--confidence", "0.9"}, c, a);
  EXPECT_DOUBLE_EQ(c, 0.9);
  EXPECT_NEAR(a, 0.1, 1e-15);
  EXPECT_THROW(parse({"--alpha", "1.5"}, c, a), CLI::ParseError);
  EXPECT_THROW(parse({"--confidence", "0"}, c, a), CLI::ParseError);
  EXPECT_THROW(parse({"--alpha", "0.05", "--confidence", "0.95"}, c, a), CLI::ParseError);
}

TEST(Cli, HelpShowsProgramNameDefaultsAndVersion) {
  CLI::App app("what it does");
  lc::init_app(app, "layerbench-x");
  int n = 30;
  app.add_option("--n", n, "a count");
  const auto help = app.help();
  EXPECT_NE(help.find("Usage: layerbench-x"), std::string::npos) << help;
  EXPECT_NE(help.find("INT=30"), std::string::npos) << help;
  EXPECT_NE(help.find("--version"), std::string::npos) << help;
  try {
    app.parse(std::vector<std::string>{"--version"});
    FAIL() << "--version did not stop the parse";
  } catch (const CLI::CallForVersion& e) {
    EXPECT_EQ(std::string(e.what()).rfind("layerbench-x " + lc::build_info().version + " (git ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("built with: CUDA "), std::string::npos);
  }
}

TEST(Cli, OutputFilesAreReplacedWhole) {
  const auto dir = std::filesystem::temp_directory_path() / ("lb-cli-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "out.json").string();
  lc::write_output(path, "first\n");
  lc::write_output(path, "second\n");
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "second\n");
  // Nothing but the target is left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator{}), 1);
  EXPECT_THROW(lc::write_output((dir / "missing" / "x").string(), "x"), std::runtime_error);
  std::filesystem::remove_all(dir);
}
