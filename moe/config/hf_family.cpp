// The readers of the known model_type families: each family's key table and the semantics its
// modelling code fixes (moe_models.md §2).
#include "moe/config/hf_reader.hpp"

namespace layerbench::moe::hf {

namespace {

// The defaults of the config class a DeepSeek-keyed model_type is read with, where a config
// leaves the key out: DeepSeek-V2's class (remote configuration_deepseek.py and transformers'
// DeepseekV2Config) routes by softmax, greedy; V3's (and the types built on it) by sigmoid with
// the correction bias (noaux_tc). GLM-4.5's configs name neither key. Empty: no class default
// (a forced family name says neither version), so a missing key is refused.
struct DeepseekClass {
  std::string_view name, scoring, method;
};
DeepseekClass deepseek_class(std::string_view type) {
  if (type == "deepseek_v2") return {"DeepseekV2Config", "softmax", "greedy"};
  if (type == "deepseek_v3" || type == "deepseek_v32" || type == "kimi_k2")
    return {"DeepseekV3Config", "sigmoid", "noaux_tc"};
  if (type.starts_with("glm4")) return {"", "sigmoid", "noaux_tc"};
  return {};
}

void read_deepseek_router(Reader& r, Model& m, std::string_view type) {
  const DeepseekClass cls = deepseek_class(type);
  auto class_default = [&](const char* field, const char* key, std::string_view value) {
    if (value.empty())
      r.fail(fmt::format("config key {} not found (needed for {}; give --family deepseek_v2 or deepseek_v3 for that "
                         "config class's default)", r.key_name(key), field));
    if (cls.name.empty()) r.fixed(field, type);
    else
      m.sources[field] = fmt::format("no {} key: {}'s default {} (model_type {})", r.key_name(key), cls.name, value, type);
    return std::string(value);
  };
  std::string scoring, method;
  if (auto s = r.text("scoring_func")) {
    scoring = *s;
    m.sources["router.score"] = r.key_name("scoring_func");
  } else {
    scoring = class_default("router.score", "scoring_func", cls.scoring);
  }
  m.router.score = parse_score(scoring, r.what("scoring_func"));
  if (auto t = r.text("topk_method")) {
    method = *t == "gready" ? "greedy" : *t;  // DeepSeek-V2's remote code spells its default "gready"
    m.sources["router.selection_bias"] = r.key_name("topk_method");
  } else {
    method = class_default("router.selection_bias", "topk_method", cls.method);
  }
  if (method != "noaux_tc" && method != "greedy" && method != "group_limited_greedy")
    r.fail(fmt::format("config key {}: unknown top-k method '{}' (known: greedy, group_limited_greedy, noaux_tc)",
                       r.key_name("topk_method"), method));
  m.router.selection_bias = method == "noaux_tc";
  m.router.group_score = method == "noaux_tc" ? GroupScore::top2_sum : GroupScore::max;
  m.router.groups = r.integer("router.groups", {"n_group"}, 1);
  m.router.topk_groups = r.integer("router.topk_groups", {"topk_group"}, 1);
  if (method == "greedy") {  // no group limit, whatever n_group says
    m.router.groups = m.router.topk_groups = 1;
    m.sources["router.groups"] = m.sources["router.topk_groups"] = r.key_name("topk_method") + " greedy (no group limit)";
  }
  m.router.normalize = r.boolean("router.normalize", "norm_topk_prob", false);
  m.router.scale = r.real("router.scale", "routed_scaling_factor", 1.0);
  m.shared.count = r.integer("shared_experts", {"n_shared_experts"}, 0);
  m.shared.size = m.shared.count > 0 ? m.moe_intermediate : 0;
  m.sources["shared_intermediate"] = m.sources["moe_intermediate"] + " (one shared expert's size)";
}

}  // namespace

std::string_view family_name(Family f) {
  switch (f) {
    case Family::deepseek: return "deepseek";
    case Family::qwen: return "qwen";
    case Family::olmoe: return "olmoe";
    case Family::mixtral: return "mixtral";
    case Family::gpt_oss: return "gpt_oss";
    case Family::llama4: return "llama4";
  }
  return "?";
}

void read_family(Reader& r, Model& m, Family fam, std::string_view type) {
  m.hidden = r.integer("hidden", {"hidden_size"});
  const bool expert_is_intermediate = fam == Family::mixtral || fam == Family::gpt_oss || fam == Family::llama4 ||
                                      fam == Family::olmoe;
  switch (fam) {
    case Family::deepseek: m.experts = r.integer("experts", {"n_routed_experts"}); break;
    case Family::qwen:
    case Family::olmoe: m.experts = r.integer("experts", {"num_experts"}); break;
    default: m.experts = r.integer("experts", {"num_local_experts"}); break;
  }
  m.topk = fam == Family::gpt_oss ? r.integer("topk", {"num_experts_per_tok", "experts_per_token"})
                                  : r.integer("topk", {"num_experts_per_tok"});
  m.moe_intermediate = expert_is_intermediate ? r.integer("moe_intermediate", {"intermediate_size"})
                                              : r.integer("moe_intermediate", {"moe_intermediate_size"});
  for (const char* f : {"router.score", "router.selection_bias", "router.groups", "router.topk_groups",
                        "router.topk_before_score", "router.normalize", "router.scale", "activation", "shared_experts",
                        "shared_intermediate", "shared_gate"})
    m.sources[f] = "default";
  switch (fam) {
    case Family::deepseek: read_deepseek_router(r, m, type); break;
    case Family::qwen: {
      m.router.score = Score::softmax;
      r.fixed("router.score", type);
      // Qwen3-Next and Qwen3.5 configs leave norm_topk_prob out: their config classes default it to true.
      m.router.normalize = r.boolean("router.normalize", "norm_topk_prob", type.starts_with("qwen3_next") ||
                                                                             type.starts_with("qwen3_5"));
      m.shared.size = r.integer("shared_intermediate", {"shared_expert_intermediate_size"}, 0);
      m.shared.count = m.shared.size > 0 ? 1 : 0;
      m.shared.gate = m.shared.count > 0 && type != "qwen3_moe";
      if (m.shared.count > 0) {
        r.fixed("shared_experts", type);
        r.fixed("shared_gate", type);
      }
      break;
    }
    case Family::olmoe:
      r.fixed("router.score", type);
      m.router.normalize = r.boolean("router.normalize", "norm_topk_prob", false);
      break;
    case Family::mixtral:
      m.router.normalize = true;
      r.fixed("router.score", type);
      r.fixed("router.normalize", type);
      break;
    case Family::gpt_oss:
      m.router.topk_before_score = true;
      r.fixed("router.topk_before_score", type);
      m.activation.kind = Activation::swiglu_clamped;
      m.activation.limit = r.real("activation", "swiglu_limit", 7.0);
      m.notes.push_back("gpt-oss: router and expert biases, interleaved gate/up and MXFP4 weights are not modelled");
      break;
    case Family::llama4:
      m.router.score = Score::sigmoid;
      m.router.topk_before_score = true;
      r.fixed("router.score", type);
      r.fixed("router.topk_before_score", type);
      m.shared = {.count = 1, .size = m.moe_intermediate};
      r.fixed("shared_experts", type);
      m.sources["shared_intermediate"] = m.sources["moe_intermediate"];
      m.notes.push_back("Llama-4 multiplies the expert input by the router score; modelled as weighting the output");
      break;
  }
}

std::optional<Family> family_by_name(std::string_view name) {
  for (auto f : {Family::deepseek, Family::qwen, Family::olmoe, Family::mixtral, Family::gpt_oss, Family::llama4})
    if (family_name(f) == name) return f;
  for (const auto& f : kFamilies)
    if (f.model_type == name) return f.family;
  return std::nullopt;
}

}  // namespace layerbench::moe::hf
