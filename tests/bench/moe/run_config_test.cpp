// The layerbench-moe run configuration: defaults and bad input.
#include "bench/moe/run_config.hpp"
#include "collectives/error.hpp"

#include <gtest/gtest.h>

using namespace layerbench;
using namespace layerbench::moe;

TEST(MoeConfig, DefaultsAreTheReleasedPreset) {
  RunConfig c;
  EXPECT_EQ(c.geo.hidden, 3072);
  EXPECT_EQ(c.geo.heads, 12);
  EXPECT_EQ(c.geo.experts, 256);
  EXPECT_EQ(c.geo.topk, 6);
  EXPECT_EQ(c.geo.intermediate, 1280);
  EXPECT_DOUBLE_EQ(c.geo.scale, 4.9);
  EXPECT_EQ(c.tokens, 7500);
  EXPECT_NO_THROW(validate(c));
}

TEST(MoeConfig, BadInputIsAUsageError) {
  RunConfig c;
  c.split_sizes = {1, 2, 3};
  EXPECT_THROW(validate_for_world(c, 4), UsageError);  // splits must match the world
  RunConfig t;
  t.layout = "tp";
  EXPECT_THROW(validate_for_world(t, 5), UsageError);  // 12 heads not divisible by 5
  EXPECT_THROW(validate_for_world(t, 3), UsageError);  // intermediate 1280 not divisible by 3
  EXPECT_NO_THROW(validate_for_world(t, 2));
  RunConfig h;
  h.geo.hidden = 3000;
  EXPECT_THROW(validate(h), UsageError);  // hidden not divisible by heads
  RunConfig k;
  k.geo.topk = 300;
  EXPECT_THROW(validate(k), UsageError);
  RunConfig l;
  l.layout = "ep";
  EXPECT_THROW(validate(l), UsageError);
  RunConfig s;
  s.layout = "tp";
  s.split_sizes = {2, 3};
  EXPECT_THROW(validate(s), UsageError);
}
