// The readers of the known model_type families: each family's key table and the semantics its
// modelling code fixes (moe_models.md §2).
#include "moe/config/hf_reader.hpp"

namespace layerbench::moe::hf {

namespace {

// A router's normalisation (DeepSeek-, Qwen- or OLMoE-keyed): its norm_topk_prob key, else the class default
// of its model_type (hf_classes.cpp: Qwen3.5's router always renormalises; Qwen2-MoE, Qwen3-MoE,
// Qwen3-Next and OLMoE default the key), else asked for.
void read_family_normalize(Reader& r, Model& m, std::string_view type) {
  const ClassRow* row = class_row(type);
  if (r.find("norm_topk_prob")) {
    m.router.normalize = r.boolean("router.normalize", "norm_topk_prob", false);
  } else if (row && row->normalize >= 0) {
    m.router.normalize = row->normalize == 1;
    m.sources["router.normalize"] = class_source(*row, r.key_name("norm_topk_prob"), row->normalize == 1 ? "true" : "false");
  } else {
    r.ask("router.normalize", {"norm_topk_prob"}, "--normalize on|off");
  }
}

// A DeepSeek-keyed model_type's router: each key, else its class row (hf_classes.cpp), else asked
// for. Types built on another's class (Kimi-K2 and DeepSeek-V3.2 on DeepseekV3Config, the GLM-4
// variants on Glm4MoeConfig's router) take only its scoring and top-k method, which their
// modelling code shares; their other defaults were not verified and are asked for.
void read_deepseek_router(Reader& r, Model& m, std::string_view type) {
  const ClassRow* row = class_row(type);
  const ClassRow* router_row = row;
  if (!row && (type == "deepseek_v32" || type == "kimi_k2")) router_row = class_row("deepseek_v3");
  if (!row && type.starts_with("glm4")) router_row = class_row("glm4_moe");
  if (auto s = r.text("scoring_func")) {
    m.router.score = parse_score(*s, r.what("scoring_func"));
    m.sources["router.score"] = r.key_name("scoring_func");
  } else if (router_row) {
    m.router.score = parse_score(router_row->score, "class default");
    m.sources["router.score"] = class_source(*router_row, r.key_name("scoring_func"), router_row->score);
  } else {
    r.ask("router.score", {"scoring_func"}, "--router-score softmax|sigmoid (or --family deepseek_v2 | deepseek_v3)");
  }
  std::string method;
  if (auto t = r.text("topk_method")) {
    method = *t == "gready" ? "greedy" : *t;  // DeepSeek-V2's remote code spells its default "gready"
    m.sources["router.selection_bias"] = r.key_name("topk_method");
  } else if (router_row) {
    method = router_row->method;
    m.sources["router.selection_bias"] = class_source(*router_row, r.key_name("topk_method"), method);
  } else {
    r.ask("router.selection_bias", {"topk_method"}, "--selection-bias on|off (or --family deepseek_v2 | deepseek_v3)");
  }
  if (!method.empty() && method != "noaux_tc" && method != "greedy" && method != "group_limited_greedy")
    r.fail(fmt::format("config key {}: unknown top-k method '{}' (known: greedy, group_limited_greedy, noaux_tc)",
                       r.key_name("topk_method"), method));
  m.router.selection_bias = method == "noaux_tc";
  m.router.group_score = method == "noaux_tc" ? GroupScore::top2_sum : GroupScore::max;
  m.router.groups = r.integer("router.groups", {"n_group"}, row && row->groups > 0 ? row->groups : 1);
  m.router.topk_groups = r.integer("router.topk_groups", {"topk_group"}, row && row->topk_groups > 0 ? row->topk_groups : 1);
  if (m.sources["router.groups"] == "default")
    m.sources["router.groups"] = row && row->groups > 0 ? class_source(*row, r.key_name("n_group"), std::to_string(row->groups))
                                                        : "no n_group key: no group limit";
  if (m.sources["router.topk_groups"] == "default")
    m.sources["router.topk_groups"] = row && row->topk_groups > 0
                                          ? class_source(*row, r.key_name("topk_group"), std::to_string(row->topk_groups))
                                          : "no topk_group key: no group limit";
  if (method.empty() && m.router.groups > 1) r.ask("router.group_score", {"topk_method"}, "--group-score max|top2-sum");
  if (method == "greedy") {  // no group limit, whatever n_group says
    m.router.groups = m.router.topk_groups = 1;
    m.sources["router.groups"] = m.sources["router.topk_groups"] = r.key_name("topk_method") + " greedy (no group limit)";
  }
  read_family_normalize(r, m, type);
  if (r.find("routed_scaling_factor")) {
    m.router.scale = r.real("router.scale", "routed_scaling_factor", 1.0);
  } else if (row && row->scale > 0) {
    m.router.scale = row->scale;
    m.sources["router.scale"] = class_source(*row, r.key_name("routed_scaling_factor"), fmt::format("{}", row->scale));
  } else {
    r.ask("router.scale", {"routed_scaling_factor"}, "--scale X");
  }
  m.shared.count = r.integer("shared_experts", {"n_shared_experts"}, 0);
  m.shared.size = m.shared.count > 0 ? m.moe_intermediate : 0;
  m.sources["shared_intermediate"] = m.sources["moe_intermediate"] + " (one shared expert's size)";
  m.sources["shared_gate"] = "fixed by the DeepSeek MoE block: shared experts ungated";
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
      read_family_normalize(r, m, type);
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
      read_family_normalize(r, m, type);
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
