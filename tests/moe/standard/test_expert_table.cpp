// layerbench-moe --expert-table: the per-shape expert path table that layerbench-moe-kernels
// --models writes. Good rows reach the ops; a malformed row is a UsageError naming file and line.
#include "common/usage.hpp"
#include "moe/standard/std_ops.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

using namespace layerbench;
using namespace layerbench::moe;

namespace {

// Records the rows it is given (the host backend has one expert path and ignores them).
class Recorder final : public StdOps {
 public:
  Recorder() : host_(make_host_std_ops()) {}
  DenseOps& dense() override { return host_->dense(); }
  void logits(const void*, const void*, float*, std::int64_t, std::int64_t, std::int64_t, Stream) override {}
  void route(const float*, const float*, const RouterSpec&, std::int64_t, std::int64_t, std::int64_t, std::int32_t*,
             float*, Stream) override {}
  void gather_rows(const void*, const std::int32_t*, void*, std::int64_t, std::int64_t, Stream) override {}
  void scatter_rows(const void*, const std::int32_t*, void*, std::int64_t, std::int64_t, Stream) override {}
  void glu(const void*, void*, std::int64_t, std::int64_t, const ActivationSpec&, Stream) override {}
  void combine(const void*, const std::int32_t*, const float*, void*, std::int64_t, std::int64_t, std::int64_t,
               Stream) override {}
  void gate_scale(void*, const float*, std::int64_t, std::int64_t, Stream) override {}
  std::string path(std::string_view) const override { return ""; }
  void set_expert_choice(std::int64_t h, std::int64_t i, std::int64_t e, StdExpertPath p) override {
    rows.emplace_back(h, i, e, p);
  }
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t, StdExpertPath>> rows;

 private:
  std::unique_ptr<StdOps> host_;
};

std::string write(const std::string& name, const std::string& text) {
  const auto p = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(p) << text;
  return p;
}

}  // namespace

TEST(ExpertTable, RowsReachTheOps) {
  Recorder r;
  load_expert_table(r, write("lb_expert_table_ok.tsv", "# comment\n7168\t2048\t256\tmulti-stream\n2048 768 128 padded\n"
                                                        "\n4096\t14336\t8\tper-expert\n2880\t2880\t128\tgrouped\n"
                                                        "4096\t1408\t128\twgmma\n"));
  ASSERT_EQ(r.rows.size(), 5u);
  EXPECT_EQ(r.rows[0], std::make_tuple(std::int64_t{7168}, std::int64_t{2048}, std::int64_t{256}, StdExpertPath::multi_stream));
  EXPECT_EQ(std::get<3>(r.rows[1]), StdExpertPath::padded);
  EXPECT_EQ(std::get<3>(r.rows[2]), StdExpertPath::per_expert);
  EXPECT_EQ(std::get<3>(r.rows[3]), StdExpertPath::grouped);
  EXPECT_EQ(std::get<3>(r.rows[4]), StdExpertPath::wgmma);
  EXPECT_EQ(to_string(StdExpertPath::wgmma), "wgmma");
}

TEST(ExpertTable, BadRowsNameTheFileAndLine) {
  Recorder r;
  for (const char* bad : {"1 2 3 fastest\n", "1 2\n", "0 2 3 grouped\n", "a b c grouped\n"}) {
    const auto p = write("lb_expert_table_bad.tsv", std::string("# ok\n") + bad);
    try {
      load_expert_table(r, p);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(p + " line 2"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(load_expert_table(r, "/nonexistent/table.tsv"), UsageError);
}

// The default expert path (no --expert-table row): wgmma wherever it applies; else per-expert at
// few local experts, padded when padding costs at most 1.5x the rows, else 4 streams.
TEST(ExpertTable, DefaultPathFollowsTheDeviceAndTheRows) {
  using layerbench::moe::default_expert_path;
  using P = layerbench::moe::StdExpertPath;
  const std::vector<std::int64_t> even(128, 64), none;
  std::vector<std::int64_t> skewed(128, 64);
  skewed[3] = 200;  // 128 x 200 > 1.5 x the rows
  EXPECT_EQ(default_expert_path(true, 128, even), P::wgmma);
  EXPECT_EQ(default_expert_path(true, 8, skewed), P::wgmma);
  EXPECT_EQ(default_expert_path(false, 8, even), P::per_expert);
  EXPECT_EQ(default_expert_path(false, 16, skewed), P::per_expert);
  EXPECT_EQ(default_expert_path(false, 128, even), P::padded);
  EXPECT_EQ(default_expert_path(false, 128, skewed), P::multi_stream);
  EXPECT_EQ(default_expert_path(false, 128, none), P::multi_stream);                        // counts not known yet
  EXPECT_EQ(default_expert_path(false, 128, std::vector<std::int64_t>(128, 0)), P::multi_stream);  // no rows
  EXPECT_NE(layerbench::moe::default_expert_path_reason(false, 128).find("1.5x"), std::string::npos);
}
