// Sniffing a study's text (reports/inputs.hpp): the journal `layerbench-ab run` writes is told
// from other JSON Lines by its first record, read from the text the input layer already read
// (never by opening the path again).
#include "reports/inputs.hpp"

#include <gtest/gtest.h>

#include <string>

namespace layerbench::reports {
namespace {

TEST(Inputs, AnAbStudyIsToldByItsFirstRecord) {
  const std::string header = R"({"type": "study", "schema": 1})";
  const std::string run = R"({"type": "run", "pair": 0})";
  EXPECT_TRUE(is_ab_study(header + "\n" + run + "\n"));
  EXPECT_TRUE(is_ab_study("\xEF\xBB\xBF" + header + "\n"));     // a byte order mark
  EXPECT_TRUE(is_ab_study("\n  \r\n\t\n" + header + "\r\n"));   // blank lines first, CRLF
  EXPECT_TRUE(is_ab_study(header));                              // no final newline
  EXPECT_FALSE(is_ab_study(run + "\n" + header + "\n"));         // the header must come first
  EXPECT_FALSE(is_ab_study(R"({"pair": 0, "base_ms": 1.0})"));   // other JSON Lines
  EXPECT_FALSE(is_ab_study("{\"type\": \"study\"\n"));           // a truncated record
  EXPECT_FALSE(is_ab_study(""));
  EXPECT_FALSE(is_ab_study("\n\n"));
}

}  // namespace
}  // namespace layerbench::reports
