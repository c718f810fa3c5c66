#include "bench/ab/metric.hpp"

#include <gtest/gtest.h>

#include "bench/ab/errors.hpp"
#include "bench/ab/process.hpp"

namespace ab = layerbench::ab;

TEST(Metric, ParsesAndExtracts) {
  ab::ProcessResult run;
  run.wall_seconds = 1.5;
  run.user_seconds = 0.25;
  run.stdout_text = "warming up\ngeneration time: 236.58 s\n{\"timing\": {\"total\": 12.5, \"steps\": [1, 2.5]}}\n";
  EXPECT_EQ(*ab::extract_metric(ab::parse_metric("wall"), run), 1.5);
  EXPECT_EQ(*ab::extract_metric(ab::parse_metric("user"), run), 0.25);
  EXPECT_EQ(*ab::extract_metric(ab::parse_metric("regex:generation time: ([0-9.]+) s"), run), 236.58);
  EXPECT_EQ(*ab::extract_metric(ab::parse_metric("json:timing.total"), run), 12.5);
  EXPECT_EQ(*ab::extract_metric(ab::parse_metric("json:timing.steps.1"), run), 2.5);
  EXPECT_FALSE(ab::extract_metric(ab::parse_metric("json:timing.missing"), run).has_value());
  EXPECT_FALSE(ab::extract_metric(ab::parse_metric("regex:latency=([0-9.]+)"), run).has_value());
  run.stdout_text = "{\"t\": \"0.75\"}";
  EXPECT_EQ(*ab::extract_metric(ab::parse_metric("json:t"), run), 0.75);
}

TEST(Metric, RejectsBadSpecs) {
  EXPECT_THROW(ab::parse_metric("regex:time=[0-9.]+"), ab::InputError);  // no capture group
  EXPECT_THROW(ab::parse_metric("regex:(unclosed"), ab::InputError);
  EXPECT_THROW(ab::parse_metric("json:"), ab::InputError);
  EXPECT_THROW(ab::parse_metric("cycles"), ab::InputError);
}

TEST(Process, CapturesExitStatusTimeAndTimeout) {
  const auto ok = ab::run_shell("printf 'v=42\\n'; exit 3", 0, nullptr);
  EXPECT_EQ(ok.exit_code, 3);
  EXPECT_EQ(ok.stdout_text, "v=42\n");
  EXPECT_FALSE(ok.timed_out);
  EXPECT_GT(ok.wall_seconds, 0.0);
  // The timeout kills the whole process group, including the shell's background child.
  const auto slow = ab::run_shell("sleep 30 & sleep 30; echo never", 0.2, nullptr);
  EXPECT_TRUE(slow.timed_out);
  EXPECT_EQ(slow.exit_code, 128 + 9);
  EXPECT_LT(slow.wall_seconds, 10.0);
  EXPECT_EQ(slow.stdout_text.find("never"), std::string::npos);
  const auto burn = ab::run_shell("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done", 0, nullptr);
  EXPECT_GT(burn.user_seconds, 0.0);  // the child's CPU time comes from wait4's rusage
}
