// Display width of UTF-8 text: what console tables align by.
#include "common/text.hpp"

#include <gtest/gtest.h>

namespace lt = layerbench::text;

TEST(DisplayWidth, OneColumnPerCodePoint) {
  EXPECT_EQ(lt::display_width(""), 0u);
  EXPECT_EQ(lt::display_width("abc"), 3u);
  EXPECT_EQ(lt::display_width("±"), 1u);    // 2 bytes
  EXPECT_EQ(lt::display_width("—"), 1u);    // 3 bytes
  EXPECT_EQ(lt::display_width("×"), 1u);
  EXPECT_EQ(lt::display_width("µs"), 2u);
  EXPECT_EQ(lt::display_width("+1.5 ± 0.2 ms"), 13u);
  EXPECT_EQ(lt::display_width("candidate − base"), 16u);
}

TEST(DisplayWidth, CombiningMarksAndWideCharacters) {
  EXPECT_EQ(lt::display_width("e\xCC\x81"), 1u);   // e + combining acute
  EXPECT_EQ(lt::display_width("表"), 2u);           // CJK: two columns
  EXPECT_EQ(lt::display_width("ｘ"), 2u);           // full-width x
  EXPECT_EQ(lt::display_width("\xF0\x9F\x9A\x80"), 2u);  // an emoji (U+1F680)
}

TEST(DisplayWidth, InvalidBytesCountOneEach) {
  EXPECT_EQ(lt::display_width("\xFF\xFE"), 2u);
  EXPECT_EQ(lt::display_width("a\xE2\x80"), 3u);  // a truncated 3-byte sequence: two single bytes
  EXPECT_EQ(lt::display_width("\xC3("), 2u);      // a lead byte without its continuation
}
