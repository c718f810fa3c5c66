// The MoE model description: presets, the Hugging Face config reader on real config.json
// fixtures (tests/moe/data/hf), overrides, and the errors that name the key.
#include "collectives/error.hpp"
#include "moe/config/model.hpp"
#include "moe/config/router.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
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
  // An unknown model_type is read by its fields, but what it does not say is asked for.
  json other = base;
  other["model_type"] = "bert";
  const std::string asked = usage_error([&] { model_from_hf_json(other, "t"); });
  EXPECT_NE(asked.find("router.normalize: no key (norm_topk_prob"), std::string::npos) << asked;
  EXPECT_NE(asked.find("--normalize on|off"), std::string::npos) << asked;
  other["norm_topk_prob"] = true;
  other["routed_scaling_factor"] = 2.0;
  EXPECT_NE(model_from_hf_json(other, "t").inference.find("model_type 'bert' is not a known family"), std::string::npos);
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

// The corpus of real configs (tests/moe/data/hf/MANIFEST.json): every entry resolves to the
// fields its manifest states (from the config and the model's card), or is refused naming the
// key it lacks; presets equal their files.
TEST(MoeHfCorpus, EveryConfigResolvesToItsManifest) {
  const auto text = [] {
    std::ifstream in(std::string(LB_MOE_HF_DATA) + "/MANIFEST.json");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  const auto manifest = nlohmann::json::parse(text);
  ASSERT_EQ(manifest["schema"], "layerbench-hf-corpus/1");
  std::set<std::string> types;
  int moe = 0;
  for (const auto& e : manifest["entries"]) {
    const std::string file = e["file"];
    SCOPED_TRACE(file + " (" + e["model"].get<std::string>() + ")");
    ASSERT_TRUE(e.contains("source"));
    const std::string path = std::string(LB_MOE_HF_DATA) + "/" + file;
    if (e.contains("refuse")) {
      const std::string msg = usage_error([&] { read_hf_config(path); });
      EXPECT_NE(msg.find(e["refuse"].get<std::string>()), std::string::npos) << msg;
      continue;
    }
    Model m;
    if (const std::string err = usage_error([&] { m = read_hf_config(path); }); !err.empty()) {
      ADD_FAILURE() << err;
      continue;
    }
    const auto& x = e["expect"];
    EXPECT_EQ(m.hidden, x["hidden"]);
    EXPECT_EQ(m.experts, x["experts"]);
    EXPECT_EQ(m.topk, x["topk"]);
    EXPECT_EQ(m.moe_intermediate, x["moe_intermediate"]);
    EXPECT_EQ(m.shared.count, x["shared"][0]);
    EXPECT_EQ(m.shared.size, x["shared"][1]);
    EXPECT_EQ(m.shared.gate, x["shared"][2]);
    const auto& r = x["router"];
    EXPECT_EQ(to_string(m.router.score), r["score"].get<std::string>());
    EXPECT_EQ(m.router.selection_bias, r["selection_bias"]);
    EXPECT_EQ(m.router.groups, r["groups"]);
    EXPECT_EQ(m.router.topk_groups, r["topk_groups"]);
    EXPECT_EQ(m.router.topk_before_score, r["topk_before_score"]);
    EXPECT_EQ(m.router.normalize, r["normalize"]);
    EXPECT_DOUBLE_EQ(m.router.scale, r["scale"].get<double>());
    EXPECT_EQ(to_string(m.activation.kind), x["activation"].get<std::string>());
    EXPECT_EQ(m.layers, x["layers"]);
    EXPECT_EQ(m.moe_layers, x["moe_layers"]);
    EXPECT_EQ(!m.inference.empty(), x["inferred"].get<bool>()) << m.inference;
    // Where a field was read from, where the manifest records it: a class default, or the key named.
    if (e.contains("from"))
      for (const auto& [f, want] : e["from"].items()) {
        ASSERT_TRUE(m.sources.count(f)) << f;
        const std::string got = m.sources.at(f), w = want.get<std::string>();
        if (w == "class default") EXPECT_TRUE(got.starts_with("class default")) << f << ": " << got;
        else EXPECT_EQ("config key " + got, w) << f;
      }
    for (const char* f : {"hidden", "experts", "topk", "moe_intermediate", "router.score", "router.normalize",
                          "router.scale", "shared_experts", "activation", "moe_layers"})
      EXPECT_TRUE(m.sources.count(f) && !m.sources.at(f).empty()) << f;
    if (e.contains("preset")) {
      const auto jp = to_json(preset(e["preset"].get<std::string>())), jf = to_json(m);
      for (const char* k : {"hidden", "experts", "topk", "moe_intermediate", "shared_experts", "shared_intermediate",
                            "shared_gate", "router", "activation", "layers", "moe_layers"})
        EXPECT_EQ(jp[k], jf[k]) << "preset " << e["preset"] << " field " << k;
    }
    types.insert(e["model_type"].get<std::string>().substr(0, e["model_type"].get<std::string>().find(' ')));
    ++moe;
  }
  EXPECT_GE(moe, 30);
  EXPECT_GE(types.size(), 12u);
}

// The field reader on its own: an unknown model_type with complete fields resolves, with each
// rule recorded; ambiguity names the keys and --family; a missing key is named; --family forces.
TEST(MoeHfCorpus, FieldReaderRulesAndErrors) {
  using nlohmann::json;
  const json base = json::parse(R"({"model_type": "acme_moe", "hidden_size": 64, "num_hidden_layers": 4,
    "num_local_experts": 8, "num_experts_per_tok": 2, "intermediate_size": 32, "scoring_func": "sigmoid",
    "use_routing_bias": true, "first_k_dense_replace": 1, "norm_topk_prob": true, "routed_scaling_factor": 1.0})");
  const Model m = model_from_hf_json(base, "t");
  EXPECT_EQ(m.experts, 8);
  EXPECT_EQ(m.moe_intermediate, 32);
  EXPECT_EQ(m.moe_layers, 3);
  EXPECT_EQ(m.router.score, Score::sigmoid);
  EXPECT_TRUE(m.router.selection_bias);
  EXPECT_TRUE(m.router.normalize);
  EXPECT_NE(m.inference.find("family inferred from fields: model_type 'acme_moe'"), std::string::npos) << m.inference;
  EXPECT_NE(m.sources.at("moe_intermediate").find("no expert-size key"), std::string::npos);
  EXPECT_EQ(m.sources.at("router.selection_bias"), "use_routing_bias");
  EXPECT_EQ(to_json(m)["inference"], m.inference);
  auto err = [&](const std::function<void(json&)>& edit, std::string_view family = {}) {
    json j = base;
    edit(j);
    return usage_error([&] { model_from_hf_json(j, "t", family); });
  };
  const std::string conflict = err([](json& j) { j["num_experts"] = 16; });
  EXPECT_NE(conflict.find("config keys num_experts = 16 and num_local_experts = 8 disagree on experts"), std::string::npos)
      << conflict;
  EXPECT_NE(conflict.find("--family"), std::string::npos);
  EXPECT_NE(err([](json& j) { j.erase("num_experts_per_tok"); }).find("num_experts_per_tok or experts_per_token"),
            std::string::npos);
  EXPECT_NE(err([](json& j) { j.erase("num_local_experts"); }).find("not a MoE model"), std::string::npos);
  EXPECT_NE(err([](json& j) { j["num_local_experts"] = 1; }).find("not a MoE model"), std::string::npos);
  EXPECT_NE(err([](json& j) { j["hidden_act"] = "relu2"; }).find("hidden_act: activation 'relu2'"), std::string::npos);
  // DeepSeek-style keys: the scoring and the expert size are never guessed.
  const std::string ds = err([](json& j) {
    j.erase("num_local_experts");
    j.erase("scoring_func");
    j["n_routed_experts"] = 8;
    j["moe_intermediate_size"] = 32;
  });
  EXPECT_NE(ds.find("scoring_func or score_func"), std::string::npos) << ds;
  EXPECT_NE(err([](json& j) {
              j.erase("num_local_experts");
              j["n_routed_experts"] = 8;
            }).find("moe_intermediate_size or expert_intermediate_size"),
            std::string::npos);
  // --family forces one family's reader; an unknown name is listed.
  EXPECT_NE(err([](json&) {}, "bogus").find("--family bogus: unknown family"), std::string::npos);
  const Model forced = model_from_hf_json(base, "t", "mixtral");
  EXPECT_EQ(forced.family, "mixtral");
  EXPECT_EQ(forced.router.score, Score::softmax);  // Mixtral's semantics, not the config's scoring_func
  EXPECT_NE(forced.origin.find("family forced by --family mixtral"), std::string::npos);
  EXPECT_TRUE(forced.inference.empty());
}

// Synthetic configs (not checkpoints) for the field reader's key families that no stored real
// config covers: DBRX's nested ffn_config, Jamba's expert period, ERNIE's layer range, Step-3's
// layer list, Hunyuan's per-layer lists, a latent MoE and Python's Infinity literal.
TEST(MoeHfCorpus, FieldReaderKeyFamiliesSynthetic) {
  using nlohmann::json;
  // The router semantics these unknown model_types leave unsaid, settled as flags would.
  ModelOverrides settle;
  settle.score = "softmax";
  settle.selection_bias = false;
  settle.normalize = true;
  settle.scale = 1.0;
  settle.shared_gate = false;
  const Model dbrx = model_from_hf_json(json::parse(R"({"model_type": "dbrx", "d_model": 64, "n_layers": 4,
    "ffn_config": {"moe_num_experts": 16, "moe_top_k": 4, "ffn_hidden_size": 32, "ffn_act_fn": {"name": "silu"},
                   "moe_normalize_expert_weights": 1}})"), "t");
  EXPECT_EQ(dbrx.experts, 16);
  EXPECT_EQ(dbrx.topk, 4);
  EXPECT_EQ(dbrx.moe_intermediate, 32);
  EXPECT_TRUE(dbrx.router.normalize);
  EXPECT_EQ(dbrx.sources.at("experts"), "ffn_config.moe_num_experts");
  const Model jamba = model_from_hf_json(json::parse(R"({"model_type": "jamba", "hidden_size": 64,
    "num_hidden_layers": 8, "num_experts": 4, "num_experts_per_tok": 2, "intermediate_size": 32,
    "expert_layer_period": 2, "expert_layer_offset": 1})"), "t", "", settle);
  EXPECT_EQ(jamba.moe_layers, 4);
  const Model ernie = model_from_hf_json(json::parse(R"({"model_type": "ernie4_5_moe", "hidden_size": 64,
    "num_hidden_layers": 6, "moe_num_experts": 8, "moe_k": 2, "moe_intermediate_size": 16, "moe_num_shared_experts": 2,
    "moe_layer_start_index": 1, "moe_layer_end_index": 4, "moe_layer_interval": 1, "moe_use_aux_free": true})"), "t", "", settle);
  EXPECT_EQ(ernie.moe_layers, 4);
  EXPECT_EQ(ernie.shared.count, 2);
  EXPECT_EQ(ernie.shared.size, 16);
  EXPECT_TRUE(ernie.router.selection_bias);
  const Model step = model_from_hf_json(json::parse(R"({"model_type": "step3_text", "hidden_size": 64,
    "num_hidden_layers": 5, "moe_num_experts": 8, "moe_top_k": 2, "moe_intermediate_size": 16,
    "moe_layers_enum": "2,3, 4"})"), "t", "", settle);
  EXPECT_EQ(step.moe_layers, 3);
  const Model hunyuan = model_from_hf_json(json::parse(R"({"model_type": "hunyuan_v1_moe", "hidden_size": 64,
    "num_hidden_layers": 2, "num_experts": 8, "moe_topk": [2, 2], "moe_intermediate_size": [16, 16],
    "num_shared_expert": [1, 1]})"), "t", "", settle);
  EXPECT_EQ(hunyuan.topk, 2);
  EXPECT_EQ(hunyuan.shared.count, 1);
  EXPECT_EQ(hunyuan.shared.size, 16);
  EXPECT_NE(usage_error([] {
              model_from_hf_json(json::parse(R"({"model_type": "x", "hidden_size": 64, "num_hidden_layers": 2,
                "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 16, "scoring_func": "sigmoid",
                "moe_latent_size": 32})"), "t");
            }).find("moe_latent_size = 32"),
            std::string::npos);
}

// gelu_tanh_glu = gelu_pytorch_tanh(g) * u (values from the tanh formula in double precision).
TEST(MoeHfCorpus, GeluTanhGlu) {
  const ActivationSpec a{Activation::gelu_tanh_glu};
  EXPECT_NEAR(glu(1.0f, 2.0f, a), 2.0 * 0.8411919906, 1e-5);
  EXPECT_NEAR(glu(-2.0f, 1.0f, a), -0.0454023059, 1e-6);
  EXPECT_EQ(parse_activation("gelu-tanh-glu", "t"), Activation::gelu_tanh_glu);
}

// A DeepSeek-keyed config that leaves its router keys out: the config class named by model_type
// (or by the nested architectures) supplies its documented defaults, said in the sources; a
// family name that does not say which class (--family deepseek) refuses, naming the key and
// the flags that settle it.
TEST(MoeHfCorpus, DeepseekClassDefaults) {
  using nlohmann::json;
  const json lang = json::parse(R"({"architectures": ["DeepseekV2ForCausalLM"], "hidden_size": 64,
    "num_hidden_layers": 3, "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
    "n_shared_experts": 1, "first_k_dense_replace": 1, "topk_method": "greedy"})");
  const json doc = {{"model_type", "acme_vl"}, {"language_config", lang}};
  const Model m = model_from_hf_json(doc, "t");
  EXPECT_EQ(m.family, "deepseek");
  EXPECT_EQ(m.router.score, Score::softmax);
  EXPECT_FALSE(m.router.normalize);
  EXPECT_NE(m.origin.find("family from language_config.architectures DeepseekV2ForCausalLM (model_type acme_vl)"),
            std::string::npos) << m.origin;
  EXPECT_NE(m.sources.at("router.score").find("DeepseekV2Config's softmax"), std::string::npos)
      << m.sources.at("router.score");
  json v3 = lang;
  v3.erase("architectures");
  v3.erase("topk_method");
  v3["model_type"] = "deepseek_v3";
  v3["n_group"] = v3["topk_group"] = 1;  // DeepseekV3Config's default is 8 groups of 4 kept; these 8 experts have one group
  const Model m3 = model_from_hf_json(v3, "t");
  EXPECT_EQ(m3.router.score, Score::sigmoid);
  EXPECT_TRUE(m3.router.selection_bias);
  EXPECT_NE(m3.sources.at("router.selection_bias").find("DeepseekV3Config's noaux_tc"), std::string::npos);
  EXPECT_TRUE(m3.router.normalize);  // DeepseekV3Config's norm_topk_prob True
  EXPECT_DOUBLE_EQ(m3.router.scale, 2.5);
  // DeepSeek-V2's remote code spells its greedy default "gready".
  json gready = lang;
  gready["topk_method"] = "gready";
  EXPECT_EQ(model_from_hf_json(json{{"model_type", "acme_vl"}, {"language_config", gready}}, "t").router.groups, 1);
  const std::string msg = usage_error([&] { model_from_hf_json(doc, "t", "deepseek"); });
  EXPECT_NE(msg.find("router.score: no key (language_config.scoring_func)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--family deepseek_v2 | deepseek_v3"), std::string::npos) << msg;
  EXPECT_EQ(model_from_hf_json(doc, "t", "deepseek_v2").router.score, Score::softmax);
}

// Issue rules on real configs, one row each: (1) an unknown model_type that leaves a semantic key
// out is refused naming the key and its flag; the flags settle it; (2) a known model_type takes
// its config class's default, named in the sources; (3) what the block cannot represent is
// refused naming the key, unless --text-router-only; (4) every field not read from the config
// is listed with its source.
TEST(MoeHfRules, EachRuleOnARealConfig) {
  using nlohmann::json;
  auto load = [](const std::string& name) {
    std::ifstream in(fixture(name));
    return json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  };
  struct Row {
    const char* rule;
    const char* file;
    std::function<void(json&)> edit;
    std::vector<std::string> refusal;  // fragments; empty: resolves
  };
  const Row rows[] = {
      {"1: unknown family, Qwen-like keys, no scoring/bias/normalisation key", "poolside--Laguna-XS.2-FP8", nullptr,
       {"model_type 'laguna' is not a family the reader knows", "router.score: no key (scoring_func or",
        "--router-score softmax|sigmoid", "router.normalize: no key (norm_topk_prob", "--normalize on|off",
        "shared_gate: no key (no config key names it); give --shared-gate on|off", "--family NAME",
        "resemble qwen's; not assumed"}},
      {"1: the same family with norm_topk_prob still asks for the scoring", "poolside--Laguna-S-2.1-FP8", nullptr,
       {"router.score: no key", "--router-score"}},
      {"2: glm4_moe without norm_topk_prob, n_group, scoring_func, topk_method", "zai-org--GLM-4.7-FP8", nullptr, {}},
      {"2: qwen3_5_moe_text: renormalised, gated shared expert by its modelling code", "nvidia--Qwen3.6-35B-A3B-NVFP4",
       nullptr, {}},
      {"2: kimi_k2 copy without norm_topk_prob: no verified class default, asked", "moonshotai--Kimi-K2-Thinking",
       nullptr, {"router.normalize: no key (norm_topk_prob)", "--normalize on|off"}},
      {"3: per-modality routers", "zai-org--GLM-4.7-FP8", [](json& j) { j["multi_gate"] = true; },
       {"config key multi_gate = true: per-modality routers", "--text-router-only"}},
      {"3: several routers by router_type", "zai-org--GLM-4.7-FP8", [](json& j) { j["router_type"] = "MultiRouter"; },
       {"router_type = \"MultiRouter\"", "--text-router-only"}},
      {"3: zero-computation experts", "zai-org--GLM-4.7-FP8", [](json& j) { j["zero_expert_num"] = 64; },
       {"config key zero_expert_num = 64: zero-computation or identity experts"}},
      {"3: non-gated expert MLPs", "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", nullptr,
       {"activation 'relu2'", "gated experts only"}},
      {"3: experts of unequal sizes between MoE layers", "tencent--Hunyuan-A13B-Instruct",
       [](json& j) { j["moe_intermediate_size"][5] = 1024; },
       {"config key moe_intermediate_size: MoE layer 0 has 3072 and MoE layer 5 has 1024"}},
      {"bounds: absurd layer count", "zai-org--GLM-4.7-FP8", [](json& j) { j["num_hidden_layers"] = 1e12; },
       {"num_hidden_layers = 1000000000000: must be in [1, 100000]"}},
      {"bounds: negative dense prefix", "zai-org--GLM-4.7-FP8", [](json& j) { j["first_k_dense_replace"] = -1; },
       {"first_k_dense_replace = -1: must be in [0, 92]"}},
      {"bounds: top-k above the experts", "zai-org--GLM-4.7-FP8", [](json& j) { j["num_experts_per_tok"] = 161; },
       {"topk 161 (config key num_experts_per_tok) exceeds experts 160 (config key n_routed_experts)"}},
      {"bounds: MoE layer out of range", "meta-llama--Llama-4-Scout-17B-16E-Instruct",
       [](json& j) { j["text_config"]["moe_layers"] = json::array({0, 48}); },
       {"text_config.moe_layers: entry 48 is not a layer index in [0, 48)"}},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(std::string(row.rule) + " — " + row.file);
    json doc = load(row.file);
    if (row.edit) row.edit(doc);
    const std::string msg = usage_error([&] { model_from_hf_json(doc, row.file); });
    if (row.refusal.empty()) {
      EXPECT_EQ(msg, "");
    }
    for (const auto& frag : row.refusal) EXPECT_NE(msg.find(frag), std::string::npos) << frag << "\n" << msg;
  }
  // Rule 1: the flags the refusal names settle it (and a resemblance is never used).
  ModelOverrides o;
  o.score = "sigmoid";
  o.selection_bias = true;
  o.normalize = true;
  o.scale = 1.0;
  o.shared_gate = false;
  Model laguna = model_from_hf_json(load("poolside--Laguna-XS.2-FP8"), "t", "", o);
  apply_overrides(laguna, o);
  EXPECT_EQ(laguna.router.score, Score::sigmoid);
  EXPECT_EQ(laguna.not_from_config.at("router.score"), "flag --router-score");
  // Rule 2: GLM-4.7's defaults from Glm4MoeConfig, named; Qwen3.6's from its router code.
  const Model glm = model_from_hf_json(load("zai-org--GLM-4.7-FP8"), "t");
  EXPECT_EQ(glm.router.score, Score::sigmoid);
  EXPECT_TRUE(glm.router.selection_bias);
  EXPECT_TRUE(glm.router.normalize);
  EXPECT_DOUBLE_EQ(glm.router.scale, 2.5);  // the config's key
  EXPECT_NE(glm.sources.at("router.normalize").find("Glm4MoeConfig's true"), std::string::npos)
      << glm.sources.at("router.normalize");
  const Model q36 = model_from_hf_json(load("nvidia--Qwen3.6-35B-A3B-NVFP4"), "t");
  EXPECT_TRUE(q36.router.normalize);
  EXPECT_TRUE(q36.shared.gate);
  EXPECT_NE(q36.sources.at("router.normalize").find("Qwen3_5MoeTextConfig"), std::string::npos);
  // DBRX: DbrxFFNConfig's moe_normalize_expert_weights 1 where the key is left out.
  const Model dbrx = model_from_hf_json(json::parse(R"({"model_type": "dbrx", "d_model": 64, "n_layers": 4,
    "ffn_config": {"moe_num_experts": 16, "moe_top_k": 4, "ffn_hidden_size": 32}})"), "t");
  EXPECT_TRUE(dbrx.router.normalize);
  EXPECT_NE(dbrx.sources.at("router.normalize").find("DbrxFFNConfig"), std::string::npos);
  EXPECT_TRUE(dbrx.inference.empty());
  // Rule 3: --text-router-only profiles the text path, and says so.
  json multi = load("zai-org--GLM-4.7-FP8");
  multi["multi_gate"] = true;
  ModelOverrides text;
  text.text_router_only = true;
  const Model mm = model_from_hf_json(multi, "t", "", text);
  EXPECT_NE(mm.not_from_config.at("router (modality)").find("--text-router-only"), std::string::npos);
  EXPECT_NE(usage_error([&] { model_from_hf_json(load("zai-org--GLM-4.7-FP8"), "t", "", text); })
                .find("--text-router-only applies to a config with per-modality routers"),
            std::string::npos);
  // Rule 4: every field not read from the config, with its source; none that was.
  const auto lines = not_from_config_lines(glm);
  auto listed = [&](const std::string& field) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.starts_with(field + ": "); });
  };
  EXPECT_TRUE(listed("router.normalize"));
  EXPECT_TRUE(listed("router.score"));
  EXPECT_TRUE(listed("router.groups"));
  EXPECT_FALSE(listed("experts"));
  EXPECT_FALSE(listed("router.scale"));
  EXPECT_EQ(to_json(glm)["not_from_config"].size(), glm.not_from_config.size());
}

// A known family's class default settles the normalisation its config leaves out (Qwen3MoeConfig
// and OlmoeConfig: not renormalised; Qwen3NextConfig: renormalised), named in the sources; the
// key, where present, wins; the same keys under an unknown model_type are asked for (rule 1).
TEST(MoeHfRules, FamilyClassDefaultsSettleTheNormalisation) {
  using nlohmann::json;
  const auto cfg = [](std::string_view type, std::string_view extra) {
    return json::parse(R"({"model_type": ")" + std::string(type) + R"(", "hidden_size": 64, "num_hidden_layers": 2,
      "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 16, "intermediate_size": 16)" +
                       std::string(extra) + "}");
  };
  const struct {
    std::string_view type;
    bool normalize;
    std::string_view cls;
  } cases[] = {{"qwen2_moe", false, "Qwen2MoeConfig"}, {"qwen3_moe", false, "Qwen3MoeConfig"},
               {"qwen3_next", true, "Qwen3NextConfig"}, {"olmoe", false, "OlmoeConfig"},
               {"qwen3_vl_moe_text", true, "Qwen3VLMoeTextConfig"}, {"granitemoe", true, "GraniteMoeConfig"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.type));
    const Model m = model_from_hf_json(cfg(c.type, ""), "t");
    EXPECT_EQ(m.router.normalize, c.normalize);
    EXPECT_TRUE(m.sources.at("router.normalize").starts_with("class default"));
    EXPECT_NE(m.sources.at("router.normalize").find(c.cls), std::string::npos) << m.sources.at("router.normalize");
    const Model keyed = model_from_hf_json(cfg(c.type, c.normalize ? R"(, "norm_topk_prob": false)"
                                                                    : R"(, "norm_topk_prob": true)"), "t");
    EXPECT_EQ(keyed.router.normalize, !c.normalize);
  }
  const std::string err = usage_error([&] { model_from_hf_json(cfg("acme_moe", R"(, "scoring_func": "softmax",
    "topk_method": "greedy", "routed_scaling_factor": 1.0)"), "t"); });
  EXPECT_NE(err.find("router.normalize: no key"), std::string::npos) << err;
}

// docs/model-configs.md carries the class-default table as the code has it.
TEST(MoeHfRules, DocsTableMatchesTheCode) {
  std::ifstream in(std::string(LB_DOCS_DIR) + "/model-configs.md");
  const std::string doc(std::istreambuf_iterator<char>(in), {});
  ASSERT_FALSE(doc.empty());
  for (const auto& row : hf_class_default_rows()) EXPECT_NE(doc.find(row), std::string::npos) << row;
}
