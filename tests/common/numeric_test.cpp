#include "common/cli.hpp"
#include "common/numeric.hpp"
#include "common/text.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace num = layerbench::num;
using layerbench::UsageError;

namespace {

std::string message_of(auto&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Numeric, WholeNumbersNeverWrap) {
  EXPECT_EQ(num::parse_int<std::size_t>("42", "--pairs", 1, 100), 42u);
  EXPECT_EQ(num::parse_int<int>("-3", "--x", -10, 10), -3);
  EXPECT_EQ(num::parse_int<std::uint64_t>("+7", "--seed"), 7u);
  EXPECT_EQ(message_of([] { num::parse_int<std::size_t>("-1", "--warmup", 0, 10); }),
            "--warmup -1: must not be negative (a whole number in [0, 10])");
  for (const char* bad : {"", "1.5", "1e3", "0x10", " 5", "5 ", "abc", "--3", "18446744073709551616"})
    EXPECT_THROW(num::parse_int<std::uint64_t>(bad, "--n"), UsageError) << bad;
  EXPECT_EQ(message_of([] { num::parse_int<int>("0", "--iterations", 1, 100); }),
            "--iterations 0: must be a whole number in [1, 100]");
  EXPECT_EQ(message_of([] { num::parse_int<int>("99999999999", "--n", 1); }),
            "--n 99999999999: must be a whole number in [1, 2147483647]");
}

TEST(Numeric, RealsAreFiniteAndInRange) {
  EXPECT_DOUBLE_EQ(num::parse_real("0.25", "--t", num::RealRange::open(0, 1)), 0.25);
  EXPECT_DOUBLE_EQ(num::parse_real("+1e-3", "--t"), 1e-3);
  EXPECT_EQ(message_of([] { num::parse_real("nan", "--timeout", num::RealRange::positive()); }),
            "--timeout nan: must be a finite number > 0");
  EXPECT_EQ(message_of([] { num::parse_real("1", "--confidence", num::RealRange::open(0, 1)); }),
            "--confidence 1: must be in (0, 1)");
  EXPECT_EQ(message_of([] { num::parse_real("1e999", "--x"); }), "--x 1e999: out of range: must be finite");
  for (const char* bad : {"", "inf", "-inf", "1,5", "1.5s", "abc"})
    EXPECT_THROW(num::parse_real(bad, "--x"), UsageError) << bad;
}

TEST(Numeric, BytesWithBinaryUnits) {
  EXPECT_EQ(num::parse_bytes("8", "-b"), 8u);
  EXPECT_EQ(num::parse_bytes("1K", "-b"), 1024u);
  EXPECT_EQ(num::parse_bytes("2kb", "-b"), 2048u);
  EXPECT_EQ(num::parse_bytes("3KiB", "-b"), 3072u);
  EXPECT_EQ(num::parse_bytes("16G", "-e"), 16ull << 30);
  EXPECT_EQ(num::parse_bytes("1T", "-e"), 1ull << 40);
  for (const char* bad : {"", "-4", "1.5K", "12Q", "K", "99999999999999999999", "20000000000T"})
    EXPECT_THROW(num::parse_bytes(bad, "-b"), UsageError) << bad;
}

TEST(Numeric, PercentagesAndFractions) {
  EXPECT_DOUBLE_EQ(num::parse_fraction("2%", "--threshold"), 0.02);
  EXPECT_DOUBLE_EQ(num::parse_fraction("0.5 %", "--threshold"), 0.005);
  EXPECT_DOUBLE_EQ(num::parse_fraction("0.02", "--threshold"), 0.02);
  EXPECT_EQ(message_of([] { num::parse_fraction("2", "--threshold", num::RealRange::open(0, 1)); }),
            "--threshold 2: a bare number is a fraction; for 2% write '2%'");
  for (const char* bad : {"", "%", "abc%", "nan%", "-1%", "150%"})
    EXPECT_THROW(num::parse_fraction(bad, "--threshold", num::RealRange::open(0, 1)), UsageError) << bad;
}

TEST(Numeric, MemoryEstimates) {
  EXPECT_NO_THROW(num::check_memory(1024, 4, "a tiny run", ""));
  EXPECT_THROW(num::check_memory(std::nullopt, 1, "an overflowing run", ""), UsageError);
  const std::string m = message_of([] { num::check_memory(std::uint64_t{1} << 62, 4, "-e 16G", "lower -e"); });
  EXPECT_NE(m.find("-e 16G needs about 4.6 EB per rank"), std::string::npos) << m;
  EXPECT_NE(m.find("lower -e"), std::string::npos) << m;
  EXPECT_FALSE(num::mul(std::uint64_t{1} << 40, std::uint64_t{1} << 30).has_value());
  EXPECT_EQ(num::format_bytes(137.4e9), "137.4 GB");
}

TEST(Numeric, CliOptionsReportTheFlag) {
  CLI::App app;
  std::size_t pairs = 5;
  double timeout = 1;
  std::vector<long long> seqs;
  layerbench::cli::add_int(app, "-p,--pairs", pairs, "pairs", std::size_t{1}, std::size_t{100});
  layerbench::cli::add_real(app, "--timeout", timeout, "seconds", num::RealRange::positive(60));
  layerbench::cli::add_int_list(app, "--seqs", seqs, "lengths", 1LL, 1000LL);
  app.parse("--pairs 7 --timeout 2.5 --seqs 1,2,3", false);
  EXPECT_EQ(pairs, 7u);
  EXPECT_DOUBLE_EQ(timeout, 2.5);
  EXPECT_EQ(seqs, (std::vector<long long>{1, 2, 3}));
  EXPECT_EQ(message_of([&] { app.parse("-p -3", false); }), "--pairs -3: must not be negative (a whole number in [1, 100])");
  EXPECT_EQ(message_of([&] { app.parse("--seqs 1,0", false); }), "--seqs 0: must be a whole number in [1, 1000]");
  EXPECT_THROW(app.parse("--timeout 1e12", false), CLI::ValidationError);
}

TEST(Text, ByteOrderMark) {
  EXPECT_EQ(layerbench::text::strip_bom("\xEF\xBB\xBF" "base,candidate"), "base,candidate");
  EXPECT_EQ(layerbench::text::strip_bom("base"), "base");
  std::string s = "\xEF\xBB\xBF{}";
  layerbench::text::strip_bom_in_place(s);
  EXPECT_EQ(s, "{}");
}
