// Model presets: the sequence lengths through each model's VAE and patch strides, names
// matched case-insensitively, and the resolutions / frame counts a model cannot take.
#include "attention/presets.hpp"
#include "collectives/error.hpp"

#include <gtest/gtest.h>

namespace layerbench::attention {

TEST(Presets, SequenceLengthsThroughTheStrides) {
  EXPECT_EQ(sequence_length(find_model("wan2.1-14b"), 1280, 720, 81).tokens, 75600);   // 21 x 45 x 80
  EXPECT_EQ(sequence_length(find_model("wan2.1-14b"), 832, 480, 81).tokens, 32760);   // 21 x 30 x 52
  EXPECT_EQ(sequence_length(find_model("HunyuanVideo"), 1280, 720, 129).tokens, 118800);  // 33 x 45 x 80
  EXPECT_EQ(sequence_length(find_model("FLUX.1-dev"), 1024, 1024, 1).tokens, 4096);
  const auto s = sequence_length(find_model("wan2.1-14b"), 1280, 720, 81);
  EXPECT_NE(s.formula.find("21 x 45 x 80 = 75600"), std::string::npos) << s.formula;
}

TEST(Presets, GeometryAndRules) {
  const auto& m = find_model("MAGI-2");
  EXPECT_EQ(m.name, "magi-2");
  EXPECT_TRUE(m.ulysses_only);
  EXPECT_EQ(find_model("wan2.1-1.3b").heads, 12);
  EXPECT_EQ(find_model("wan2.1-14b").heads, 40);
  EXPECT_EQ(find_model("flux.1-dev").text_tokens, 512);
  EXPECT_NE(list_models().find("hunyuanvideo"), std::string::npos);
}

TEST(Presets, RejectsWhatTheStridesCannotTake) {
  EXPECT_THROW(find_model("wan2.2"), UsageError);
  EXPECT_THROW(sequence_length(find_model("hunyuanvideo"), 1280, 720, 128), UsageError);  // not 4k+1
  EXPECT_THROW(sequence_length(find_model("flux.1-dev"), 1024, 1024, 5), UsageError);     // image model
  EXPECT_THROW(sequence_length(find_model("wan2.1-14b"), 1000, 720, 81), UsageError);     // 1000 % 16
  EXPECT_EQ(parse_resolution("1280x720"), (std::pair<int, int>{1280, 720}));
  EXPECT_THROW(parse_resolution("1280*720"), UsageError);
  EXPECT_THROW(parse_resolution("x720"), UsageError);
}

}  // namespace layerbench::attention
