// The MoE model description: presets, the Hugging Face config reader on real config.json
// fixtures (tests/moe/data/hf), overrides, and the errors that name the key.
#include "collectives/error.hpp"
#include "moe/model.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace layerbench;
using namespace layerbench::moe;

namespace {

std::string fixture(const std::string& name) { return std::string(LB_MOE_HF_DATA) + "/" + name + ".json"; }

// The message of the UsageError `f` throws ("" when none).
template <class F>
std::string usage_error(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(MoeModel, PresetsResolveCaseInsensitivelyWithSources) {
  for (const auto& p : presets()) {
    const Model m = preset(p.name);
    EXPECT_EQ(m.name, p.name);
    EXPECT_NO_THROW(check_model(m));
    for (const char* f : {"hidden", "experts", "topk", "moe_intermediate", "router.score", "activation", "moe_layers"})
      EXPECT_TRUE(m.sources.count(f)) << p.name << " " << f;
  }
  const Model d = preset("DeepSeek-V3");
  EXPECT_EQ(d.experts, 256);
  EXPECT_EQ(d.router.groups, 8);
  EXPECT_EQ(d.router.topk_groups, 4);
  EXPECT_EQ(d.router.score, Score::sigmoid);
  EXPECT_DOUBLE_EQ(d.router.scale, 2.5);
  EXPECT_EQ(preset("MAGI-2").block, Block::magi2_multi_head);
  EXPECT_EQ(preset("gpt-oss-120b").activation.kind, Activation::swiglu_clamped);
  EXPECT_TRUE(preset("gpt-oss-120b").router.topk_before_score);
  EXPECT_NE(usage_error([] { preset("llama-2"); }).find("--model llama-2: unknown model"), std::string::npos);
}

// Each preset agrees with the real config.json of its model, field by field.
TEST(MoeModel, PresetsMatchTheirConfigFiles) {
  const std::pair<const char*, const char*> pairs[] = {
      {"deepseek-v3", "deepseek-ai--DeepSeek-V3"}, {"qwen3-30b-a3b", "Qwen--Qwen3-30B-A3B"},
      {"mixtral-8x7b", "mistralai--Mixtral-8x7B-v0.1"}, {"gpt-oss-120b", "openai--gpt-oss-120b"},
      {"glm-4.5-air", "zai-org--GLM-4.5-Air"}};
  for (const auto& [name, file] : pairs) {
    const Model p = preset(name), f = read_hf_config(fixture(file));
    auto jp = to_json(p), jf = to_json(f);
    for (const char* k : {"hidden", "experts", "topk", "moe_intermediate", "shared_experts", "shared_intermediate",
                          "shared_gate", "router", "activation", "layers", "moe_layers"})
      EXPECT_EQ(jp[k], jf[k]) << name << " field " << k;
  }
}

TEST(MoeModel, ConfigFixturesResolveToTheirFields) {
  const Model v2 = read_hf_config(fixture("deepseek-ai--DeepSeek-V2-Lite-Chat"));
  EXPECT_EQ(v2.experts, 64);
  EXPECT_EQ(v2.topk, 6);
  EXPECT_EQ(v2.shared.count, 2);
  EXPECT_EQ(v2.shared.size, 1408);
  EXPECT_EQ(v2.router.score, Score::softmax);
  EXPECT_FALSE(v2.router.selection_bias);
  EXPECT_FALSE(v2.router.normalize);
  EXPECT_EQ(v2.moe_layers, 26);
  EXPECT_EQ(v2.sources.at("experts"), "n_routed_experts");

  const Model q2 = read_hf_config(fixture("Qwen--Qwen1.5-MoE-A2.7B-Chat-GPTQ-Int4"));
  EXPECT_EQ(q2.experts, 60);
  EXPECT_EQ(q2.shared.count, 1);
  EXPECT_EQ(q2.shared.size, 5632);
  EXPECT_TRUE(q2.shared.gate);
  EXPECT_EQ(q2.moe_layers, 24);

  const Model scout = read_hf_config(fixture("meta-llama--Llama-4-Scout-17B-16E-Instruct"));
  EXPECT_EQ(scout.hidden, 5120);
  EXPECT_EQ(scout.experts, 16);
  EXPECT_EQ(scout.topk, 1);
  EXPECT_EQ(scout.moe_intermediate, 8192);
  EXPECT_EQ(scout.router.score, Score::sigmoid);
  EXPECT_EQ(scout.shared.count, 1);
  EXPECT_EQ(scout.moe_layers, 48);
  EXPECT_EQ(scout.sources.at("experts"), "text_config.num_local_experts");

  const Model maverick = read_hf_config(fixture("meta-llama--Llama-4-Maverick-17B-128E-Instruct"));
  EXPECT_EQ(maverick.experts, 128);
  EXPECT_EQ(maverick.moe_layers, 24);  // interleave_moe_layer_step 2 of 48

  const Model kimi = read_hf_config(fixture("moonshotai--Kimi-K2-Instruct"));
  EXPECT_EQ(kimi.experts, 384);
  EXPECT_EQ(kimi.moe_layers, 60);
  EXPECT_DOUBLE_EQ(kimi.router.scale, 2.827);

  const Model q35 = read_hf_config(fixture("Qwen--Qwen3.5-35B-A3B"));
  EXPECT_EQ(q35.experts, 256);
  EXPECT_EQ(q35.shared.size, 512);
  EXPECT_TRUE(q35.shared.gate);

  const Model glm5 = read_hf_config(fixture("zai-org--GLM-5"));
  EXPECT_EQ(glm5.experts, 256);
  EXPECT_EQ(glm5.moe_layers, 75);
  EXPECT_TRUE(glm5.router.selection_bias);

  const Model gpt = read_hf_config(fixture("openai--gpt-oss-120b"));
  EXPECT_DOUBLE_EQ(gpt.activation.limit, 7.0);
  EXPECT_EQ(gpt.sources.at("activation"), "swiglu_limit");
}

TEST(MoeModel, BadConfigsNameTheKey) {
  using nlohmann::json;
  const json base = json::parse(R"({"model_type": "deepseek_v3", "hidden_size": 64, "n_routed_experts": 8,
    "num_experts_per_tok": 2, "moe_intermediate_size": 32, "num_hidden_layers": 4, "scoring_func": "sigmoid",
    "topk_method": "noaux_tc", "n_group": 2, "topk_group": 1})");
  EXPECT_NO_THROW(model_from_hf_json(base, "t"));
  auto err = [&](const std::function<void(json&)>& edit) {
    json j = base;
    edit(j);
    return usage_error([&] { model_from_hf_json(j, "t"); });
  };
  EXPECT_NE(err([](json& j) { j.erase("n_routed_experts"); }).find("n_routed_experts not found"), std::string::npos);
  EXPECT_NE(err([](json& j) { j["scoring_func"] = "sparsemax"; }).find("unknown scoring function 'sparsemax'"),
            std::string::npos);
  EXPECT_NE(err([](json& j) { j["scoring_func"] = "sparsemax"; }).find("scoring_func"), std::string::npos);
  EXPECT_NE(err([](json& j) { j["model_type"] = "bert"; }).find("model_type 'bert' is not a known MoE family"),
            std::string::npos);
  EXPECT_NE(err([](json& j) { j["moe_layer_freq"] = json::array({0, 1, 1}); }).find("moe_layer_freq is a per-layer list of 3 entries, but the model has 4 layers"),
            std::string::npos);
  EXPECT_NE(err([](json& j) { j["moe_intermediate_size"] = json::array({32, 32}); }).find("moe_intermediate_size"),
            std::string::npos);
  // A per-layer list of the right length: the value at the first MoE layer.
  json ok = base;
  ok["first_k_dense_replace"] = 1;
  ok["moe_intermediate_size"] = json::array({99, 48, 48, 48});
  EXPECT_EQ(model_from_hf_json(ok, "t").moe_intermediate, 48);
  EXPECT_EQ(model_from_hf_json(ok, "t").moe_layers, 3);
  // Nested text_config: keys named with their prefix.
  json nested = {{"model_type", "llama4"}, {"text_config", {{"model_type", "llama4_text"}, {"hidden_size", 64}, {"num_hidden_layers", 2}}}};
  EXPECT_NE(usage_error([&] { model_from_hf_json(nested, "t"); }).find("text_config.num_local_experts not found"),
            std::string::npos);
  EXPECT_NE(usage_error([&] { check_ep(preset("mixtral-8x7b"), 3); }).find("not divisible by --ep 3"), std::string::npos);
}

TEST(MoeModel, OverridesReplaceFieldsAndRecordTheFlag) {
  Model m = preset("qwen3-30b-a3b");
  ModelOverrides o;
  o.experts = 16;
  o.hidden = 64;
  o.score = "sigmoid";
  apply_overrides(m, o);
  EXPECT_EQ(m.experts, 16);
  EXPECT_EQ(m.router.score, Score::sigmoid);
  EXPECT_EQ(m.sources.at("experts"), "flag --experts");
  EXPECT_NE(m.origin.find("flags: --hidden --experts --router-score"), std::string::npos);
  const auto j = to_json(m);
  EXPECT_EQ(j["schema"], "layerbench-model/1");
  EXPECT_EQ(j["router"]["score"], "sigmoid");
  ModelOverrides bad;
  bad.score = "relu";
  EXPECT_NE(usage_error([&] { apply_overrides(m, bad); }).find("unknown scoring function 'relu'"), std::string::npos);
}
