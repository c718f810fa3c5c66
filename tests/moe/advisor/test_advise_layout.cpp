// The MoE layout advisor's model on the host: layouts and their rejections, the load imbalance
// from routing, message sizes and group placement, and the committed host validation replayed
// (its calibration and sweeps give its predictions again). Deterministic: no timing.
#include "moe/advisor/advise_layout.hpp"

#include "common/usage.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace layerbench::moe {
namespace {

std::string results_dir() {
  const char* d = std::getenv("LB_RESULTS_DIR");
  return d ? d : "results";
}

std::vector<std::string> labels(const std::vector<AdviceLayout>& v) {
  std::vector<std::string> out;
  for (const auto& l : v) out.push_back(l.label);
  return out;
}

}  // namespace

TEST(AdviseLayout, EveryValidLayoutAndWhyTheOthersAreNot) {
  const Model ds = preset("deepseek-v3");
  EXPECT_EQ(labels(advice_layouts(ds, 8)), (std::vector<std::string>{"ep8", "ep4xtp2", "ep2xtp4", "ep1xtp8"}));
  // 256 experts, intermediate 2048: no EP x TP of 6 (or 3) divides them; the reasons are named.
  std::vector<std::string> rejected;
  EXPECT_THROW(advice_layouts(ds, 6, &rejected), UsageError);
  EXPECT_EQ(rejected.size(), 4u);
  EXPECT_THROW(advice_layouts(ds, 3), UsageError);
  const Model magi = preset("magi-2");
  EXPECT_EQ(labels(advice_layouts(magi, 2)), (std::vector<std::string>{"sp2", "tp2"}));
  rejected.clear();
  EXPECT_EQ(labels(advice_layouts(magi, 8, &rejected)), (std::vector<std::string>{"sp8"}));  // 12 heads
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_NE(rejected[0].find("12 MoE heads"), std::string::npos);
}

TEST(AdviseLayout, ImbalanceFromRouting) {
  // 8 experts, top-1, tokens cycling through the experts: every EP rank gets the same load.
  std::vector<std::int32_t> even;
  for (int t = 0; t < 64; ++t) even.push_back(t % 8);
  const Imbalance flat = imbalance_from_routing(even, 1, 8, 4, 8, 4, 1);
  EXPECT_DOUBLE_EQ(flat.factor.median, 1.0);
  // Every token to expert 0: the first of 2 ranks holds all rows, twice the mean.
  const std::vector<std::int32_t> skew(64, 0);
  EXPECT_DOUBLE_EQ(imbalance_from_routing(skew, 1, 8, 2, 8, 4, 1).factor.median, 2.0);
  // More tokens than routed: bootstrap resamples, said so, and the same for the same seed.
  const Imbalance a = imbalance_from_routing(even, 1, 8, 4, 100, 8, 7), b = imbalance_from_routing(even, 1, 8, 4, 100, 8, 7);
  EXPECT_NE(a.source.find("bootstrap"), std::string::npos);
  EXPECT_DOUBLE_EQ(a.factor.median, b.factor.median);
  EXPECT_GE(a.factor.lo, 1.0);
}

TEST(AdviseLayout, MessageSizesAndPlacementFollowTheLayout) {
  Model m = preset("qwen3-30b-a3b");
  ClusterCollModel coll;
  coll.gpus_per_node = 8;
  coll.intra.add(reports::load_result_file(results_dir() + "/coll/2026-11-30-h200x2-c/coll.json"));
  Calibration cal;
  for (const char* n : {"router", "dispatch_permute", "ep_counts_exchange", "expert_compute", "weighted_sum"})
    cal[n] = {{1, 1, 1}, {.flops = 1}, "unit"};
  {  // groups of 8 from a 2-GPU sweep: refused before any timing unless rescaling is allowed
    AdviceInputs strict{&m, 4096, 2, 0.0, &coll};
    const std::vector<AdviceLayout> one{{"ep8", Block::standard, 8, 1, Layout::sp, 8}};
    try {
      check_collectives(one, strict);
      ADD_FAILURE() << "an 8-rank group was costed from a 2-rank sweep without --coll-rescale";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("no all_to_all sweep of 8 ranks"), std::string::npos) << e.what();
    }
  }
  coll.intra.rescale = true;
  cal.clear();
  for (const char* n : {"router", "dispatch_permute", "ep_counts_exchange", "expert_compute", "weighted_sum"})
    cal[n] = {{1, 1, 1}, {.flops = 1}, "unit"};
  AdviceInputs in{&m, 4096, 2, 0.0, &coll};
  const auto parts = [](const reports::Prediction& p) {
    std::map<std::string, reports::Interval> out(p.parts.begin(), p.parts.end());
    return out;
  };
  const AdviceLayout ep8{"ep8", Block::standard, 8, 1, Layout::sp, 8};
  const auto flat = parts(predict_layout(ep8, in, cal, {}));
  const auto twice = parts(predict_layout(ep8, in, cal, {{2, 2, 2}, "test"}));
  // The dispatch of the busiest rank: twice the rows, twice the bytes (constant bandwidth region
  // or interpolated: strictly more), and the expert compute doubles.
  EXPECT_GT(twice.at("ep_dispatch").median, flat.at("ep_dispatch").median);
  EXPECT_NEAR(twice.at("expert_compute").median, 2 * flat.at("expert_compute").median, 1e-9);
  // TP 2: a gather in and a reduction out of the group's 8192 tokens, none at TP 1.
  const AdviceLayout ep4tp2{"ep4xtp2", Block::standard, 4, 2, Layout::sp, 8};
  const auto tp = parts(predict_layout(ep4tp2, in, cal, {}));
  EXPECT_TRUE(tp.count("tp_gather") && tp.count("tp_reduction"));
  EXPECT_FALSE(flat.count("tp_reduction"));
  // EP 16 over two nodes: no inter-node sweep and no assumed link is a usage error; with a link,
  // the dispatch is marked as assumed.
  const AdviceLayout ep16{"ep16", Block::standard, 16, 1, Layout::sp, 16};
  EXPECT_THROW(predict_layout(ep16, in, cal, {}), UsageError);
  coll.link = {50, 10};
  const auto cross = predict_layout(ep16, in, cal, {});
  bool assumed = false;
  for (const auto& n : cross.notes) assumed = assumed || n.find("ASSUMED link") != std::string::npos;
  EXPECT_TRUE(assumed);
}

// The committed host validation: the calibration of each advice JSON with the committed sweep
// gives the committed prediction again (the model is a pure function of its inputs).
TEST(AdviseLayout, ReplaysTheCommittedHostValidation) {
  const std::string dir = results_dir() + "/moe/2026-12-03-host-a/";
  ModelOverrides std_o, magi_o;
  std_o.hidden = 256, std_o.experts = 16, std_o.topk = 4, std_o.moe_intermediate = 128;
  magi_o.hidden = 256, magi_o.moe_heads = 4, magi_o.experts = 8, magi_o.topk = 2, magi_o.moe_intermediate = 64;
  magi_o.shared_intermediate = 64;
  int layouts = 0;
  for (int n : {2, 4})
    for (const std::string kind : {"std", "magi2"}) {
      const std::string path = dir + "advise-" + kind + "-np" + std::to_string(n) + ".json";
      const auto f = reports::load_result_file(path);
      Model m = preset(kind == "std" ? "qwen3-30b-a3b" : "magi-2");
      apply_overrides(m, kind == "std" ? std_o : magi_o);
      std::map<std::string, Calibration> cals;
      std::map<std::string, Imbalance> imbs;
      read_calibration(f, cals, imbs);
      ClusterCollModel coll;
      coll.intra.add(reports::load_result_file(dir + "coll-host-np" + std::to_string(n) + ".json"));
      coll.intra.rescale = true;  // these runs costed TP groups of 2 from the n-rank sweep (no flag then)
      const AdviceInputs in{&m, f.config.at("tokens").get<std::int64_t>(), f.config.at("act_bytes").get<double>(),
                            f.config.at("margin").get<double>(), &coll};
      const auto doc = reports::read_json_file(path);
      for (const auto& l : advice_layouts(m, n)) {
        // EP 1 layouts gained their permute, counts read-back and self copies after these runs.
        if (l.block == Block::standard && l.ep == 1) continue;
        const std::string key = kind == "std" ? "calibration/" + l.label : "calibration/magi2";
        const auto p = predict_layout(l, in, cals.at(key), imbs.count(l.label) ? imbs.at(l.label) : Imbalance{});
        bool found = false;
        for (const auto& a : doc.at("advice"))
          if (a.at("layout") == l.label) {
            found = true;
            EXPECT_NEAR(p.total.median, a.at("predicted_ms").get<double>(), 1e-9 * p.total.median) << path << " " << l.label;
            EXPECT_NEAR(p.total.hi, a.at("hi_ms").get<double>(), 1e-9 * p.total.hi) << path << " " << l.label;
          }
        EXPECT_TRUE(found) << l.label;
        ++layouts;
      }
    }
  EXPECT_EQ(layouts, 1 + 2 + 2 + 2);  // ep2; sp2, tp2; ep4, ep2xtp2; sp4, tp4
}

}  // namespace layerbench::moe
