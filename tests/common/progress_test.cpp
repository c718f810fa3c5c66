// The one progress display (common/cli/progress): its three modes as LAYERBENCH_PROGRESS picks
// them, the lines a log gets, the terminal line, a resumed phase's ETA, and the one duration text.
// Elapsed times and ETAs are read from a scripted clock (the seconds set by the test), so every
// line is exact on any machine.
#include "common/cli/progress.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>

namespace lc = layerbench::cli;

namespace {

// What `body` writes through a Progress on a temporary file, with LAYERBENCH_PROGRESS set to
// `mode` ("" = unset: a file is not a terminal, so lines).
std::string written(const std::string& mode, const std::function<void(std::FILE*)>& body) {
  if (mode.empty()) ::unsetenv("LAYERBENCH_PROGRESS");
  else ::setenv("LAYERBENCH_PROGRESS", mode.c_str(), 1);
  std::FILE* f = std::tmpfile();
  EXPECT_NE(f, nullptr);
  body(f);
  std::rewind(f);
  std::string text(1 << 16, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), f));
  std::fclose(f);
  ::unsetenv("LAYERBENCH_PROGRESS");
  return text;
}

}  // namespace

TEST(Progress, Durations) {
  EXPECT_EQ(lc::format_duration(42.4), "42s");
  EXPECT_EQ(lc::format_duration(187), "3m07s");
  EXPECT_EQ(lc::format_duration(7500), "2h05m");
  EXPECT_EQ(lc::format_duration(-1), "?");
}

TEST(Progress, TheEnvironmentPicksTheMode) {
  std::FILE* f = std::tmpfile();
  ::unsetenv("LAYERBENCH_PROGRESS");
  EXPECT_EQ(lc::progress_mode(f), lc::ProgressMode::lines);  // a file is not a terminal
  for (const auto& [text, mode] : {std::pair{"tty", lc::ProgressMode::tty}, std::pair{"lines", lc::ProgressMode::lines},
                                   std::pair{"off", lc::ProgressMode::off}, std::pair{"bogus", lc::ProgressMode::lines}}) {
    ::setenv("LAYERBENCH_PROGRESS", text, 1);
    EXPECT_EQ(lc::progress_mode(f), mode) << text;
  }
  ::unsetenv("LAYERBENCH_PROGRESS");
  std::fclose(f);
}

TEST(Progress, WritesALinePerStepWithAnEtaWhenNotATerminal) {
  const auto text = written("", [](std::FILE* f) {
    double now = 100;  // the scripted clock, seconds
    lc::Progress p("sweep", 3, {1, 1, 2}, lc::Progress::Lines::per_step, f, 0, [&] { return now; });
    now = 104;
    p.step("a");
    EXPECT_DOUBLE_EQ(p.eta_seconds(), 12.0);  // 4 s for a weight of 1, 3 to go
    now = 108;
    p.step("b", "mean delta +0.5 over 2 pairs");
    now = 120;
    p.step("c");
  });
  EXPECT_NE(text.find("[sweep] 1/3 a (elapsed 4s, ETA 12s)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[sweep] 2/3 b (elapsed 8s, ETA 8s): "), std::string::npos) << text;
  EXPECT_NE(text.find("): mean delta +0.5 over 2 pairs\n"), std::string::npos) << text;  // the caller's status
  EXPECT_NE(text.find("[sweep] 3/3 c (elapsed 20s, ETA 0s)\n"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
  EXPECT_EQ(text.find('\r'), std::string::npos);
}

TEST(Progress, StaysQuietOffATerminalWhenTheCallerPrintsRows) {
  const auto text = written("", [](std::FILE* f) {
    lc::Progress p("sweep", 2, {}, lc::Progress::Lines::when_tty_only, f);
    p.step("a");
    p.step("b");
  });
  EXPECT_EQ(text, "");
  // LAYERBENCH_PROGRESS=lines asks for the lines anyway.
  const auto asked = written("lines", [](std::FILE* f) {
    lc::Progress p("sweep", 2, {}, lc::Progress::Lines::when_tty_only, f);
    p.step("a");
  });
  EXPECT_NE(asked.find("[sweep] 1/2 a (elapsed"), std::string::npos) << asked;
}

TEST(Progress, OffShowsOnlyMessages) {
  const auto text = written("off", [](std::FILE* f) {
    lc::Progress p("ab", 3, {}, lc::Progress::Lines::per_step, f);
    p.running("pair 0 base", 100);
    p.step("pair 0 done", "delta +1");
    p.message("a line that must be seen");
    p.finish();
    EXPECT_EQ(p.done(), 1u);
  });
  EXPECT_EQ(text, "a line that must be seen\n");
}

TEST(Progress, ALogGetsTheRunInFlightAfterThirtySecondsThenEveryMinute) {
  const auto text = written("lines", [](std::FILE* f) {
    lc::Progress p("ab", 4, {}, lc::Progress::Lines::per_step, f);
    p.running("pair 0 base", 5);   // quiet at first
    p.running("pair 0 base", 31);  // then a line after 30 s
    p.running("pair 0 base", 45);  // not again until the next minute
    p.running("pair 0 base", 91);
  });
  EXPECT_EQ(text, "pair 0 base: running for 31s\npair 0 base: running for 1m31s\n");
}

TEST(Progress, ATerminalGetsOneRedrawnLineWithABarTheStatusAndTheRunInFlight) {
  const auto text = written("tty", [](std::FILE* f) {
    double now = 0;  // the scripted clock, seconds
    lc::Progress p("ab", 4, {}, lc::Progress::Lines::per_step, f, 0, [&] { return now; });
    now = 2;
    p.step("pair 0 done", "mean delta +0.25 over 1 pairs");
    p.running("pair 1 candidate", 3.2);
    p.running("pair 1 candidate", 3.7);  // the same second: not redrawn
    p.message("a warning");
  });
  EXPECT_EQ(text.find('\n'), text.size() - 1) << text;  // only the message ends a line
  EXPECT_NE(text.find("\r[ab] [#####...............] 1/4 pair 0 done  elapsed 2s  ETA 6s  mean delta"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  mean delta +0.25 over 1 pairs\x1b[K"), std::string::npos) << text;
  EXPECT_NE(text.find("  mean delta +0.25 over 1 pairs  | pair 1 candidate: 3s\x1b[K"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 3) << text;  // step, one redraw, the clear
  EXPECT_NE(text.find("\r\x1b[Ka warning\n"), std::string::npos) << text;
}

TEST(Progress, AResumedPhaseCountsItsEarlierStepsButTimesOnlyItsOwn) {
  const auto text = written("lines", [](std::FILE* f) {
    lc::Progress p("ab", 10, {}, lc::Progress::Lines::per_step, f, 6);
    EXPECT_EQ(p.done(), 6u);
    EXPECT_LT(p.eta_seconds(), 0.0);  // nothing timed here yet
    p.step("pair 6 done");
    EXPECT_GE(p.eta_seconds(), 0.0);
  });
  EXPECT_NE(text.find("[ab] 7/10 pair 6 done (elapsed"), std::string::npos) << text;
}
