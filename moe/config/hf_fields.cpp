// The field reader: a config whose model_type is not a known family, read by its keys (the
// alias lists below) and the rules recorded in its sources.
#include "moe/config/hf_reader.hpp"

namespace layerbench::moe::hf {

namespace {

// ---- the field reader: a config whose model_type is not a known family ----------------------
// Alias lists (moe_models.md §2 and the configs of tests/moe/data/hf). `top_k` is not an alias:
// nested configs carry it as a sampling parameter.
const Keys kExpertKeys = {"num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts",
                          "num_routed_experts", "n_experts", "ffn_config.moe_num_experts"};
const Keys kTopkKeys = {"num_experts_per_tok", "experts_per_token", "num_experts_per_token", "moe_topk", "moe_k",
                        "top_k_experts", "moe_top_k", "ffn_config.moe_top_k", "num_selected_experts"};
const Keys kExpertSizeKeys = {"moe_intermediate_size", "expert_intermediate_size", "expert_ffn_hidden_size",
                              "moe_ffn_hidden_size", "ffn_config.ffn_hidden_size"};
const Keys kScoreKeys = {"scoring_func", "score_func", "score_function", "moe_router_activation_func",
                         "router_score_function", "moe_router_score_function"};
const Keys kBiasKeys = {"use_routing_bias", "use_moe_router_bias", "moe_use_aux_free", "use_expert_bias",
                        "moe_router_enable_expert_bias"};
const Keys kNormKeys = {"norm_topk_prob", "moe_renormalize", "renormalize", "route_norm", "norm_expert_weight"};
const Keys kScaleKeys = {"routed_scaling_factor", "moe_routed_scaling_factor", "moe_router_scaling_factor",
                         "router_scaling_factor", "route_scale"};
const Keys kGroupKeys = {"n_group", "num_expert_group", "moe_router_num_groups"};
const Keys kTopkGroupKeys = {"topk_group", "topk_groups", "moe_router_group_topk"};
const Keys kSharedCountKeys = {"n_shared_experts", "num_shared_experts", "moe_num_shared_experts", "num_shared_expert",
                               "n_shared_expert"};
const Keys kSharedSizeKeys = {"shared_expert_intermediate_size", "moe_shared_expert_intermediate_size",
                              "shared_intermediate_size", "share_expert_dim", "shared_expert_dim"};
const Keys kActivationKeys = {"mlp_hidden_act", "hidden_act", "hidden_activation", "activation_function",
                              "ffn_config.ffn_act_fn.name"};

// The key family a config resembles, by the key that names its expert count.
std::string_view nearest_family(std::string_view expert_key, bool has_expert_size) {
  if (expert_key == "n_routed_experts") return "deepseek";
  if (expert_key == "num_local_experts") return "mixtral";
  if (expert_key == "num_experts") return has_expert_size ? "qwen" : "olmoe";
  return "generic";
}


void read_fields_activation(Reader& r, Model& m) {
  std::string_view key;
  std::string act;
  for (auto k : kActivationKeys)
    if (auto t = r.text(k)) {
      key = k;
      act = *t;
      break;
    }
  if (act.empty()) {
    m.sources["activation"] = fmt::format("no activation key ({}): SiLU-GLU, transformers' default hidden_act silu",
                                          r.names(kActivationKeys));
    return;
  }
  const bool limit = r.find("swiglu_limit") != nullptr;
  if (act == "silu" || act == "swish" || act == "swiglu") {
    m.activation.kind = limit ? Activation::swiglu_clamped : Activation::silu_glu;
  } else if (act == "swigluoai" || act == "swiglu_oai" || act == "swiglu7" || act == "swiglu_clamped") {
    m.activation.kind = Activation::swiglu_clamped;
  } else if (act == "gelu_pytorch_tanh" || act == "gelu_tanh" || act == "gelu_new") {
    m.activation.kind = Activation::gelu_tanh_glu;
  } else {
    r.fail(fmt::format("config key {}: activation '{}' is not modelled by the standard block (known: silu, swiglu, "
                       "swigluoai, gelu_pytorch_tanh; gated experts only)", r.key_name(key), act));
  }
  m.sources["activation"] = r.key_name(key) + " " + act + " (gated experts)";
  if (m.activation.kind == Activation::swiglu_clamped) {
    m.activation.limit = r.real("activation.limit", "swiglu_limit", 7.0);
    m.activation.alpha = r.real("activation.alpha", "swiglu_alpha", 1.702);
    m.sources["activation"] += fmt::format(", clamped: limit from {}, alpha from {}", m.sources["activation.limit"],
                                           m.sources["activation.alpha"]);
    m.sources.erase("activation.limit");
    m.sources.erase("activation.alpha");
  }
}

// Model types whose modelling code adds a selection (correction) bias that no config key names.
struct CodeFact {
  std::string_view model_type, why;
};
constexpr CodeFact kBiasByCode[] = {
    {"kimi_linear", "modeling_kimi.py's KimiMoEGate always adds e_score_correction_bias (no config key)"},
};

// The router of an unknown (or class-row) model_type: each semantic field from its key, else the
// model_type's class default (hf_classes.cpp), else asked for (Reader::ask): never from the
// spelling of the other keys.
void read_fields_router(Reader& r, Model& m, std::string_view type) {
  const ClassRow* row = class_row(type);
  // Scoring.
  const auto [sv, skey] = r.agreed("router.score", kScoreKeys);
  if (sv) {
    if (!sv->is_string()) r.fail(fmt::format("config key {} must be a string, got {}", r.key_name(skey), sv->dump()));
    m.router.score = parse_score(sv->get<std::string>(), r.what(skey));
    m.sources["router.score"] = r.key_name(skey);
  } else if (row && !row->score.empty()) {
    m.router.score = parse_score(row->score, "class default");
    m.sources["router.score"] = class_source(*row, "scoring_func", row->score);
  } else {
    r.ask("router.score", kScoreKeys, "--router-score softmax|sigmoid");
  }
  // Correction bias.
  std::string method;
  if (auto t = r.text("topk_method")) {
    method = *t == "gready" ? "greedy" : *t;
    if (method != "noaux_tc" && method != "greedy" && method != "group_limited_greedy")
      r.fail(fmt::format("config key {}: unknown top-k method '{}' (known: greedy, group_limited_greedy, noaux_tc)",
                         r.key_name("topk_method"), method));
  }
  const auto bias = r.agreed_boolean("router.selection_bias", kBiasKeys);
  const CodeFact* code = nullptr;
  for (const auto& f : kBiasByCode)
    if (f.model_type == type) code = &f;
  Keys bias_keys = kBiasKeys;
  bias_keys.insert(bias_keys.begin(), "topk_method");
  if (bias) {
    m.router.selection_bias = *bias || method == "noaux_tc";
  } else if (!method.empty()) {
    m.router.selection_bias = method == "noaux_tc";
    m.sources["router.selection_bias"] = r.key_name("topk_method") + " " + method;
  } else if (code) {
    m.router.selection_bias = true;
    m.sources["router.selection_bias"] = fmt::format("model_type {}: {}", type, code->why);
  } else if (row && !row->method.empty()) {
    m.router.selection_bias = row->method == "noaux_tc" || row->method == "bias";
    m.sources["router.selection_bias"] = class_source(*row, "topk_method", row->method);
    if (row->method == "noaux_tc" || row->method == "greedy" || row->method == "group_limited_greedy")
      method = row->method;
  } else {
    r.ask("router.selection_bias", bias_keys, "--selection-bias on|off");
  }
  // Groups: no group key is no group limit; a group limit needs its group score.
  m.router.group_score = method == "noaux_tc" ? GroupScore::top2_sum : GroupScore::max;
  const bool group_key = r.agreed("router.groups", kGroupKeys).first != nullptr;
  m.router.groups = r.agreed_integer("router.groups", kGroupKeys).value_or(1);
  if (!group_key && row && row->groups > 0) {
    m.router.groups = row->groups;
    m.sources["router.groups"] = class_source(*row, "n_group", std::to_string(row->groups));
  } else if (!group_key) {
    m.sources["router.groups"] = "no group key: no group limit";
  }
  if (m.router.groups > 1) {
    auto tg = r.agreed_integer("router.topk_groups", kTopkGroupKeys);
    if (!tg && row && row->topk_groups > 0) {
      tg = row->topk_groups;
      m.sources["router.topk_groups"] = class_source(*row, "topk_group", std::to_string(row->topk_groups));
    }
    if (!tg) r.fail(fmt::format("config key {} not found (needed for router.topk_groups with {} groups)",
                                r.names(kTopkGroupKeys), m.router.groups));
    m.router.topk_groups = *tg;
    if (method.empty()) r.ask("router.group_score", {"topk_method"}, "--group-score max|top2-sum");
    else m.sources["router.group_score"] = r.key_name("topk_method") + " " + method;
  } else {
    m.router.topk_groups = 1;
    m.sources["router.topk_groups"] = "one group: no group limit";
  }
  if (method == "greedy") {
    m.router.groups = m.router.topk_groups = 1;
    m.sources["router.groups"] = m.sources["router.topk_groups"] = "topk_method greedy (no group limit)";
  }
  m.router.topk_before_score = false;
  m.sources["router.topk_before_score"] = "no key says otherwise: every expert scored, then the top-k selected";
  // Normalisation of the selected weights.
  if (const json* p = r.find("ffn_config.moe_normalize_expert_weights")) {  // DBRX: the p of a p-norm
    if (!p->is_number() || p->get<double>() != 1.0)
      r.fail(fmt::format("config key {} = {}: only the 1-norm (renormalise to sum 1) is modelled",
                         r.key_name("ffn_config.moe_normalize_expert_weights"), p->dump()));
    m.router.normalize = true;
    m.sources["router.normalize"] = r.key_name("ffn_config.moe_normalize_expert_weights") + " 1 (sum to 1)";
  } else if (auto n = r.agreed_boolean("router.normalize", kNormKeys)) {
    m.router.normalize = *n;
  } else if (row && row->normalize >= 0) {
    m.router.normalize = row->normalize == 1;
    m.sources["router.normalize"] = class_source(*row, "norm_topk_prob", row->normalize == 1 ? "true" : "false");
  } else {
    r.ask("router.normalize", kNormKeys, "--normalize on|off");
  }
  // Scaling factor (null is no key).
  if (r.agreed("router.scale", kScaleKeys).first) {
    m.router.scale = r.real("router.scale", kScaleKeys, 1.0);
  } else if (row && row->scale > 0) {
    m.router.scale = row->scale;
    m.sources["router.scale"] = class_source(*row, "routed_scaling_factor", fmt::format("{}", row->scale));
  } else {
    r.ask("router.scale", kScaleKeys, "--scale X");
  }
}

void read_fields_shared(Reader& r, Model& m, bool gemma_layout, std::string_view type) {
  const ClassRow* row = class_row(type);
  std::string_view ckey, skey;
  const auto count = r.agreed_integer("shared_experts", kSharedCountKeys, &ckey);
  const auto size = r.agreed_integer("shared_intermediate", kSharedSizeKeys, &skey);
  if (gemma_layout && !count && !size) {
    m.shared = {.count = 1, .size = r.integer("shared_intermediate", {"intermediate_size"}), .gate = false};
    m.sources["shared_experts"] = r.key_name("enable_moe_block") + " (Gemma-4: a dense MLP beside the experts)";
    m.notes.push_back("Gemma-4 layout: the dense MLP beside the routed experts is timed as one ungated shared expert "
                      "(its own norms and the router's per_expert_scale are not modelled)");
  } else if (size && *size > 0) {
    if (count && *count != 1)
      r.fail(fmt::format("config keys {} = {} and {} = {}: the reader cannot tell one shared expert's size from all of "
                         "theirs; give --shared-experts and --shared-intermediate (or --family NAME)",
                         r.key_name(ckey), *count, r.key_name(skey), *size));
    m.shared = {.count = 1, .size = *size, .gate = false};
    if (!count) m.sources["shared_experts"] = r.key_name(skey) + " (one shared expert of that size)";
  } else if (count && *count > 0 && !(size && *size == 0)) {
    m.shared = {.count = *count, .size = m.moe_intermediate, .gate = false};
    m.sources["shared_intermediate"] = m.sources["moe_intermediate"] + " (one shared expert's size)";
  } else {
    m.shared = {};
    if (!count) m.sources["shared_experts"] = "no shared-expert key: none";
    if (!size) m.sources["shared_intermediate"] = "no shared-expert key: none";
  }
  // Whether the shared expert's output is gated: no config key says it; the model_type's
  // modelling code does, else it is asked for.
  if (m.shared.count == 0) {
    m.sources["shared_gate"] = "no shared expert";
  } else if (gemma_layout) {
    m.sources["shared_gate"] = r.key_name("enable_moe_block") + " (Gemma-4's dense MLP: no gate)";
  } else if (row && row->shared_gate >= 0) {
    m.shared.gate = row->shared_gate == 1;
    m.sources["shared_gate"] = class_source(*row, "shared_expert_gate", row->shared_gate == 1 ? "a sigmoid gate" : "no gate");
  } else {
    r.ask("shared_gate", {"no config key names it"}, "--shared-gate on|off");
  }
}

}  // namespace

void read_by_fields(Reader& r, Model& m, std::string_view type) {
  std::vector<std::string> decided;
  const json* moe_block = r.find("enable_moe_block");
  if (moe_block && moe_block->is_boolean() && !moe_block->get<bool>())
    r.fail(fmt::format("not a MoE model: config key {} is false (a dense config has no expert layer to profile)",
                       r.key_name("enable_moe_block")));
  const bool gemma_layout = moe_block && moe_block->is_boolean();
  if (!r.agreed("experts", kExpertKeys).first)
    r.fail(fmt::format("not a MoE model: no routed-expert count (looked for {}); a dense config has no expert layer "
                       "to profile", r.names(kExpertKeys)));
  field_pattern(r, decided);
  std::string_view ekey;
  m.experts = *r.agreed_integer("experts", kExpertKeys, &ekey);
  if (m.experts < 2)
    r.fail(fmt::format("not a MoE model: config key {} is {} (a MoE layer routes among at least 2 experts)",
                       r.key_name(ekey), m.experts));
  // Expert keys of two key families (agreeing, or agreed() had failed) leave the family open.
  for (auto k : kExpertKeys)
    if (k != ekey && r.find(k) && nearest_family(k, true) != nearest_family(ekey, true) &&
        !r.agreed("router.score", kScoreKeys).first)
      r.fail(fmt::format("config keys {} and {} both name the expert count, and their families route differently "
                         "(no scoring key): give --family NAME (families: deepseek, qwen, olmoe, mixtral, gpt_oss, "
                         "llama4)", r.key_name(ekey), r.key_name(k)));
  m.hidden = r.integer("hidden", {"hidden_size", "d_model", "n_embd"});
  std::string_view tkey;
  const auto topk = r.agreed_integer("topk", kTopkKeys, &tkey);
  if (!topk) r.fail(fmt::format("config key {} not found (needed for topk)", r.names(kTopkKeys)));
  m.topk = *topk;
  std::string_view skey;
  if (auto size = r.agreed_integer("moe_intermediate", kExpertSizeKeys, &skey)) {
    m.moe_intermediate = *size;
  } else if (ekey != "n_routed_experts" && !gemma_layout && r.find("intermediate_size")) {
    skey = "intermediate_size";
    m.moe_intermediate = r.integer("moe_intermediate", {"intermediate_size"});
    m.sources["moe_intermediate"] += " (no expert-size key: the expert size, as in Mixtral, OLMoE, MiniMax-M2)";
  } else {
    r.fail(fmt::format("config key {} not found (needed for moe_intermediate{})", r.names(kExpertSizeKeys),
                       ekey == "n_routed_experts" || gemma_layout ? "; intermediate_size is the dense MLP's here" : ""));
  }
  // Experts that run at a width other than hidden_size (latent MoE) are not the standard block.
  if (const json* lat = r.find("moe_latent_size"))
    r.fail(fmt::format("config key {} = {}: the routed experts run at a latent width (latent MoE), which the standard "
                       "block does not model", r.key_name("moe_latent_size"), lat->dump()));
  if (const json* z = r.find("zero_expert_num"); z && *z != json(0))
    r.fail(fmt::format("config key {} = {}: zero-computation experts (LongCat) are not modelled by the standard block",
                       r.key_name("zero_expert_num"), z->dump()));
  if (const json* w = r.find("routed_expert_hidden_size"); w && *w != json(m.hidden))
    r.fail(fmt::format("config key {} = {} (hidden_size {}): the routed experts run at another width (latent MoE), "
                       "which the standard block does not model", r.key_name("routed_expert_hidden_size"), w->dump(), m.hidden));
  read_fields_activation(r, m);
  read_fields_router(r, m, type);
  read_fields_shared(r, m, gemma_layout, type);
  const std::string_view near = gemma_layout ? "gemma4" : nearest_family(ekey, skey != "intermediate_size");
  if (const ClassRow* row = class_row(type)) {  // a known model_type keyed in its own spelling
    m.family = fmt::format("{} ({})", type, row->config_class);
    return;
  }
  m.family = "fields";
  m.suggestion = near == "generic" ? "" : std::string(near);
  std::string keys = fmt::format("{}, {}, {}", r.key_name(ekey), r.key_name(tkey), r.key_name(skey));
  for (const auto& d : decided) keys += ", " + d;
  m.inference = fmt::format("family inferred from fields: model_type '{}' is not a known family; sizes read by their "
                            "keys ({}); router semantics only from keys or flags{}", type.empty() ? "(none)" : type,
                            keys, m.suggestion.empty() ? "" : fmt::format(" (keys resemble {}'s; not assumed)", near));
}

}  // namespace layerbench::moe::hf
