// The Hugging Face config.json reader of the MoE model description. A known model_type is read
// by its family's key table (moe_models.md §2); any other config by its fields: the alias lists
// and rules of the field reader below (expert count, top-k, sizes, router scoring and bias,
// groups, normalisation, scale, shared experts, activation, the MoE-layer pattern). A nested
// text_config / language_config / llm_config, per-layer lists and the MoE-layer count apply to
// both. Every field records the key it came from, "default" (the family's documented default),
// "fixed by model_type X" (semantics the family fixes in code) or the rule that decided it.
#include "common/numeric.hpp"
#include "common/input_file.hpp"
#include "common/text.hpp"
#include "collectives/error.hpp"
#include "moe/model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>

namespace layerbench::moe {

namespace {

using nlohmann::json;

enum class Family { deepseek, qwen, olmoe, mixtral, gpt_oss, llama4 };

struct FamilyEntry {
  std::string_view model_type;
  std::string_view architecture;
  Family family;
};
constexpr FamilyEntry kFamilies[] = {
    {"deepseek_v2", "DeepseekV2ForCausalLM", Family::deepseek},
    {"deepseek_v3", "DeepseekV3ForCausalLM", Family::deepseek},
    {"deepseek_v32", "DeepseekV32ForCausalLM", Family::deepseek},
    {"kimi_k2", "", Family::deepseek},
    {"glm4_moe", "Glm4MoeForCausalLM", Family::deepseek},
    {"glm4_moe_lite", "", Family::deepseek},
    {"glm4v_moe", "", Family::deepseek},
    {"glm4v_moe_text", "", Family::deepseek},
    {"glm_moe_dsa", "", Family::deepseek},
    {"qwen2_moe", "Qwen2MoeForCausalLM", Family::qwen},
    {"qwen3_moe", "Qwen3MoeForCausalLM", Family::qwen},
    {"qwen3_next", "Qwen3NextForCausalLM", Family::qwen},
    {"qwen3_5_moe", "", Family::qwen},
    {"qwen3_5_moe_text", "", Family::qwen},
    {"olmoe", "OlmoeForCausalLM", Family::olmoe},
    {"mixtral", "MixtralForCausalLM", Family::mixtral},
    {"gpt_oss", "GptOssForCausalLM", Family::gpt_oss},
    {"llama4", "Llama4ForConditionalGeneration", Family::llama4},
    {"llama4_text", "Llama4ForCausalLM", Family::llama4},
};

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

using Keys = std::vector<std::string_view>;

std::string join(const Keys& keys, std::string_view sep, const std::string& prefix = {}) {
  std::string out;
  for (auto k : keys) out += (out.empty() ? "" : std::string(sep)) + prefix + std::string(k);
  return out;
}

// Reads fields of one (text) config, recording where each came from. A key may name a nested
// object's member ("ffn_config.moe_num_experts").
class Reader {
 public:
  Reader(const json& cfg, std::string prefix, std::string file, Model& m)
      : cfg_(cfg), prefix_(std::move(prefix)), file_(std::move(file)), m_(m) {}

  const json* find(std::string_view key) const {
    const json* obj = &cfg_;
    std::string_view rest = key;
    for (auto dot = rest.find('.'); dot != std::string_view::npos; dot = rest.find('.')) {
      const auto it = obj->find(std::string(rest.substr(0, dot)));
      if (it == obj->end() || !it->is_object()) return nullptr;
      obj = &*it;
      rest = rest.substr(dot + 1);
    }
    const auto it = obj->find(std::string(rest));
    return it == obj->end() || it->is_null() ? nullptr : &*it;
  }
  std::string key_name(std::string_view key) const { return prefix_ + std::string(key); }
  std::string names(const Keys& keys) const { return join(keys, " or ", prefix_); }
  std::string what(std::string_view key) const { return fmt::format("--hf-config {}: config key {}", file_, key_name(key)); }
  [[noreturn]] void fail(const std::string& what) const { throw UsageError(fmt::format("--hf-config {}: {}", file_, what)); }

  // The value of an integer field at the first MoE layer: a number, or a per-layer list of
  // `layers_` entries (Hunyuan-style). Missing: the first alias that is present, else the
  // default, else an error naming every alias looked for.
  std::int64_t integer(const char* field, const Keys& aliases, std::optional<std::int64_t> fallback = std::nullopt) {
    for (auto key : aliases)
      if (const json* v = find(key)) return record(field, key, number_at_moe_layer(key, *v));
    return defaulted(field, aliases, fallback);
  }
  // The first alias present; every other alias present must hold the same value, or the
  // config is ambiguous (an error naming both keys and --family).
  std::pair<const json*, std::string_view> agreed(const char* field, const Keys& aliases) const {
    const json* first = nullptr;
    std::string_view first_key;
    for (auto key : aliases)
      if (const json* v = find(key)) {
        if (!first) {
          first = v;
          first_key = key;
        } else if (*v != *first) {
          fail(fmt::format("config keys {} = {} and {} = {} disagree on {}: give --family NAME to read it with one "
                           "family's keys (families: {})", key_name(first_key), first->dump(), key_name(key),
                           v->dump(), field, join_families()));
        }
      }
    return {first, first_key};
  }
  // agreed() as a whole number (per-layer lists allowed), with its source; nullopt when absent.
  std::optional<std::int64_t> agreed_integer(const char* field, const Keys& aliases, std::string_view* which = nullptr) {
    const auto [v, key] = agreed(field, aliases);
    if (!v) return std::nullopt;
    if (which) *which = key;
    return record(field, key, number_at_moe_layer(key, *v));
  }
  std::optional<bool> agreed_boolean(const char* field, const Keys& aliases) {
    const auto [v, key] = agreed(field, aliases);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) fail(fmt::format("config key {} must be true or false, got {}", key_name(key), v->dump()));
    m_.sources[field] = key_name(key);
    return v->get<bool>();
  }
  double real(const char* field, std::string_view key, double fallback) { return real(field, Keys{key}, fallback); }
  double real(const char* field, const Keys& aliases, double fallback) {
    const auto [v, key] = agreed(field, aliases);
    if (v) {
      if (!v->is_number()) fail(fmt::format("config key {} must be a number, got {}", key_name(key), v->dump()));
      m_.sources[field] = key_name(key);
      return v->get<double>();
    }
    m_.sources[field] = "default";
    return fallback;
  }
  bool boolean(const char* field, std::string_view key, bool fallback) {
    if (auto b = agreed_boolean(field, {key})) return *b;
    m_.sources[field] = "default";
    return fallback;
  }
  std::optional<std::string> text(std::string_view key) const {
    const json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail(fmt::format("config key {} must be a string, got {}", key_name(key), v->dump()));
    return v->get<std::string>();
  }
  void fixed(const char* field, std::string_view model_type) {
    m_.sources[field] = fmt::format("fixed by model_type {}", model_type);
  }

  // Which layers are MoE: `is_moe` over [0, layers).
  void set_moe_layers(std::int64_t layers, const std::function<bool(std::int64_t)>& is_moe, std::string source) {
    layers_ = layers;
    first_moe_ = -1;
    std::int64_t n = 0;
    for (std::int64_t i = 0; i < layers; ++i)
      if (is_moe(i)) {
        if (first_moe_ < 0) first_moe_ = i;
        ++n;
      }
    if (n == 0) fail(fmt::format("no MoE layer among the {} layers ({})", layers, source));
    m_.moe_layers = n;
    m_.sources["moe_layers"] = std::move(source);
  }
  // A per-layer list of `layers_` entries (0/1 flags or values); an error naming the key otherwise.
  const json& per_layer_list(std::string_view key, const json& v) const {
    if (static_cast<std::int64_t>(v.size()) != layers_)
      fail(fmt::format("config key {} is a per-layer list of {} entries, but the model has {} layers "
                       "(num_hidden_layers)", key_name(key), v.size(), layers_));
    return v;
  }
  std::int64_t layers() const { return layers_; }
  void set_layer_count(std::int64_t layers) { layers_ = layers; }

 private:
  static std::string join_families();
  std::int64_t record(const char* field, std::string_view key, std::pair<std::int64_t, std::string> v) {
    m_.sources[field] = key_name(key) + v.second;
    return v.first;
  }
  std::int64_t defaulted(const char* field, const Keys& aliases, std::optional<std::int64_t> fallback) {
    if (fallback) {
      m_.sources[field] = "default";
      return *fallback;
    }
    fail(fmt::format("config key {} not found (needed for {})", names(aliases), field));
  }
  std::pair<std::int64_t, std::string> number_at_moe_layer(std::string_view key, const json& v) const {
    auto as_int = [&](const json& x) -> std::int64_t {
      if (!x.is_number_integer() && !(x.is_number() && x.get<double>() == static_cast<double>(x.get<std::int64_t>())))
        fail(fmt::format("config key {} must be a whole number, got {}", key_name(key), x.dump()));
      return x.get<std::int64_t>();
    };
    if (!v.is_array()) return {as_int(v), ""};
    if (layers_ <= 0) fail(fmt::format("config key {} is a list before the layer count is known", key_name(key)));
    const json& list = per_layer_list(key, v);
    const auto at = static_cast<std::size_t>(std::max<std::int64_t>(first_moe_, 0));
    return {as_int(list[at]), fmt::format("[{}] (per-layer list, first MoE layer)", at)};
  }

  const json& cfg_;
  std::string prefix_, file_;
  Model& m_;
  std::int64_t layers_ = 0, first_moe_ = -1;
};

std::string Reader::join_families() {
  std::string out;
  for (auto f : {Family::deepseek, Family::qwen, Family::olmoe, Family::mixtral, Family::gpt_oss, Family::llama4})
    out += (out.empty() ? "" : ", ") + std::string(family_name(f));
  return out;
}

// The MoE-layer patterns, shared by the family readers and the field reader.
void deepseek_pattern(Reader& r, std::int64_t L) {
  const std::int64_t first = r.integer("first_k_dense_replace", {"first_k_dense_replace"}, 0);
  if (const json* freq = r.find("moe_layer_freq"); freq && freq->is_array()) {
    const json& list = r.per_layer_list("moe_layer_freq", *freq);
    r.set_moe_layers(L, [&](std::int64_t i) { return list[static_cast<std::size_t>(i)] != 0; },
                     r.key_name("moe_layer_freq") + " (per-layer list)");
    return;
  }
  const std::int64_t f = r.integer("moe_layer_freq", {"moe_layer_freq"}, 1);
  if (f < 1) r.fail(fmt::format("config key {} must be at least 1", r.key_name("moe_layer_freq")));
  r.set_moe_layers(L, [&](std::int64_t i) { return i >= first && i % f == 0; },
                   fmt::format("{} {} - {} {} (every {} from there)", r.key_name("num_hidden_layers"), L,
                               r.key_name("first_k_dense_replace"), first, f));
}

void qwen_pattern(Reader& r, std::int64_t L) {
  const std::int64_t step = r.integer("decoder_sparse_step", {"decoder_sparse_step"}, 1);
  if (step < 1) r.fail(fmt::format("config key {} must be at least 1", r.key_name("decoder_sparse_step")));
  std::set<std::int64_t> dense;
  if (const json* v = r.find("mlp_only_layers")) {
    if (!v->is_array()) r.fail(fmt::format("config key {} must be a list of layer indices", r.key_name("mlp_only_layers")));
    for (const auto& e : *v) {
      if (!e.is_number_integer() || e.get<std::int64_t>() < 0 || e.get<std::int64_t>() >= L)
        r.fail(fmt::format("config key {}: entry {} is not a layer index in [0, {})", r.key_name("mlp_only_layers"), e.dump(), L));
      dense.insert(e.get<std::int64_t>());
    }
  }
  r.set_moe_layers(L, [&](std::int64_t i) { return !dense.count(i) && (i + 1) % step == 0; },
                   fmt::format("{} {}, {} {}, {} {} entries", r.key_name("num_hidden_layers"), L,
                               r.key_name("decoder_sparse_step"), step, r.key_name("mlp_only_layers"), dense.size()));
}

void llama4_pattern(Reader& r, std::int64_t L) {
  if (const json* v = r.find("moe_layers"); v && v->is_array()) {
    std::set<std::int64_t> moe;
    for (const auto& e : *v) {
      if (!e.is_number_integer()) r.fail(fmt::format("config key {}: entry {} is not a layer index", r.key_name("moe_layers"), e.dump()));
      moe.insert(e.get<std::int64_t>());
    }
    r.set_moe_layers(L, [&](std::int64_t i) { return moe.count(i) > 0; }, r.key_name("moe_layers"));
    return;
  }
  const std::int64_t step = r.integer("interleave_moe_layer_step", {"interleave_moe_layer_step"}, 1);
  if (step < 1) r.fail(fmt::format("config key {} must be at least 1", r.key_name("interleave_moe_layer_step")));
  r.set_moe_layers(L, [&](std::int64_t i) { return (i + 1) % step == 0; },
                   fmt::format("{} {} / {} {}", r.key_name("num_hidden_layers"), L,
                               r.key_name("interleave_moe_layer_step"), step));
}

std::int64_t layer_count(Reader& r) {
  const std::int64_t L = r.integer("layers", {"num_hidden_layers", "n_layers", "num_layers"});
  if (L < 1) r.fail(fmt::format("config key {} must be at least 1, got {}", r.key_name("num_hidden_layers"), L));
  r.set_layer_count(L);
  return L;
}

void read_moe_layers(Reader& r, Family fam, std::string_view type) {
  const std::int64_t L = layer_count(r);
  if (fam == Family::deepseek) deepseek_pattern(r, L);
  else if (fam == Family::qwen) qwen_pattern(r, L);
  else if (fam == Family::llama4) llama4_pattern(r, L);
  else
    r.set_moe_layers(L, [](std::int64_t) { return true; },
                     fmt::format("{} (every layer is MoE in model_type {})", r.key_name("num_hidden_layers"), type));
}

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

// Which layers are MoE, from whichever pattern key the config carries (the first that applies).
void field_pattern(Reader& r, std::vector<std::string>& decided) {
  auto kind_is_moe = [](const json& e) {
    return e.is_string() && (e.get<std::string>() == "moe" || e.get<std::string>() == "sparse");
  };
  for (std::string_view key : {"mlp_layer_types", "layers_block_type", "layer_types"}) {
    const json* v = r.find(key);
    if (!v || !v->is_array() || std::none_of(v->begin(), v->end(), kind_is_moe)) continue;  // attention kinds only
    const std::int64_t L = r.find("num_hidden_layers") ? layer_count(r) : static_cast<std::int64_t>(v->size());
    if (!r.find("num_hidden_layers")) r.set_layer_count(L);
    const json& list = r.per_layer_list(key, *v);
    r.set_moe_layers(L, [&](std::int64_t i) { return kind_is_moe(list[static_cast<std::size_t>(i)]); },
                     r.key_name(key) + " (per-layer list: moe/sparse entries)");
    decided.push_back(r.key_name(key));
    return;
  }
  if (auto pat = r.text("hybrid_override_pattern")) {
    const auto L = static_cast<std::int64_t>(pat->size());
    r.set_layer_count(L);
    if (r.find("num_hidden_layers") && layer_count(r) != L)
      r.fail(fmt::format("config key {} has {} entries, but num_hidden_layers is {}", r.key_name("hybrid_override_pattern"),
                         L, r.layers()));
    r.set_moe_layers(L, [&](std::int64_t i) { return (*pat)[static_cast<std::size_t>(i)] == 'E'; },
                     r.key_name("hybrid_override_pattern") + " ('E' layers)");
    decided.push_back(r.key_name("hybrid_override_pattern"));
    return;
  }
  const std::int64_t L = layer_count(r);
  auto has = [&](std::string_view k) { return r.find(k) != nullptr; };
  if (has("moe_layer_freq") || has("first_k_dense_replace")) {
    deepseek_pattern(r, L);
    decided.push_back(r.key_name(has("moe_layer_freq") ? "moe_layer_freq" : "first_k_dense_replace"));
  } else if (has("decoder_sparse_step") || has("mlp_only_layers")) {
    qwen_pattern(r, L);
    decided.push_back(r.key_name("decoder_sparse_step"));
  } else if (has("interleave_moe_layer_step") || has("moe_layers")) {
    llama4_pattern(r, L);
    decided.push_back(r.key_name(has("moe_layers") ? "moe_layers" : "interleave_moe_layer_step"));
  } else if (auto list = r.text("moe_layers_enum")) {  // Step-3: "4,5,6,..."
    std::set<std::int64_t> moe;
    std::string_view rest = *list;
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      std::string_view f = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      while (!f.empty() && f.front() == ' ') f.remove_prefix(1);
      while (!f.empty() && f.back() == ' ') f.remove_suffix(1);
      moe.insert(num::parse_int<std::int64_t>(f, r.what("moe_layers_enum") + " entry", 0, L - 1));
    }
    r.set_moe_layers(L, [&](std::int64_t i) { return moe.count(i) > 0; }, r.key_name("moe_layers_enum"));
    decided.push_back(r.key_name("moe_layers_enum"));
  } else if (has("moe_layer_start_index") || has("moe_layer_interval")) {  // ERNIE-4.5
    const std::int64_t start = r.integer("moe_layer_start_index", {"moe_layer_start_index"}, 0);
    std::int64_t end = r.integer("moe_layer_end_index", {"moe_layer_end_index"}, L - 1);
    if (end < 0) end = L - 1;
    const std::int64_t every = r.integer("moe_layer_interval", {"moe_layer_interval"}, 1);
    if (every < 1) r.fail(fmt::format("config key {} must be at least 1", r.key_name("moe_layer_interval")));
    r.set_moe_layers(L, [&](std::int64_t i) { return (i + 1) % every == 0 && i >= start && i <= end; },
                     fmt::format("{} {}..{}, every {} ({})", r.key_name("moe_layer_start_index"), start, end, every,
                                 r.key_name("moe_layer_interval")));
    decided.push_back(r.key_name("moe_layer_start_index"));
  } else if (has("expert_layer_period")) {  // Jamba
    const std::int64_t period = r.integer("expert_layer_period", {"expert_layer_period"});
    const std::int64_t offset = r.integer("expert_layer_offset", {"expert_layer_offset"}, 0);
    if (period < 1) r.fail(fmt::format("config key {} must be at least 1", r.key_name("expert_layer_period")));
    r.set_moe_layers(L, [&](std::int64_t i) { return i % period == offset; },
                     fmt::format("{} {}, {} {}", r.key_name("expert_layer_period"), period,
                                 r.key_name("expert_layer_offset"), offset));
    decided.push_back(r.key_name("expert_layer_period"));
  } else if (has("num_dense_layers")) {
    const std::int64_t dense = r.integer("num_dense_layers", {"num_dense_layers"});
    r.set_moe_layers(L, [&](std::int64_t i) { return i >= dense; },
                     fmt::format("{} {} - {} {}", r.key_name("num_hidden_layers"), L, r.key_name("num_dense_layers"), dense));
    decided.push_back(r.key_name("num_dense_layers"));
  } else {
    r.set_moe_layers(L, [](std::int64_t) { return true; },
                     fmt::format("{} (no MoE-layer pattern key: every layer is MoE)", r.key_name("num_hidden_layers")));
  }
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

void read_fields_router(Reader& r, Model& m, std::string_view expert_key, bool gemma_layout, std::string_view type) {
  // Scoring: a key, or the softmax of the key families that never name it.
  const auto [sv, skey] = r.agreed("router.score", kScoreKeys);
  if (sv) {
    if (!sv->is_string()) r.fail(fmt::format("config key {} must be a string, got {}", r.key_name(skey), sv->dump()));
    m.router.score = parse_score(sv->get<std::string>(), r.what(skey));
    m.sources["router.score"] = r.key_name(skey);
  } else if (expert_key == "n_routed_experts") {
    r.fail(fmt::format("config key {} not found (needed for router.score: configs with {} name their scoring; "
                       "give --family NAME or --router-score)", r.names(kScoreKeys), r.key_name(expert_key)));
  } else {
    m.router.score = Score::softmax;
    m.sources["router.score"] = fmt::format("no scoring key ({}): softmax, as every config keyed by {} routes",
                                            r.names(kScoreKeys), r.key_name(expert_key));
  }
  // Correction bias and groups.
  std::string method;
  if (auto t = r.text("topk_method")) {
    method = *t;
    if (method != "noaux_tc" && method != "greedy" && method != "group_limited_greedy")
      r.fail(fmt::format("config key {}: unknown top-k method '{}' (known: greedy, group_limited_greedy, noaux_tc)",
                         r.key_name("topk_method"), method));
  }
  const auto bias = r.agreed_boolean("router.selection_bias", kBiasKeys);
  m.router.selection_bias = method == "noaux_tc" || bias.value_or(false);
  if (!method.empty() && !bias) m.sources["router.selection_bias"] = r.key_name("topk_method") + " " + method;
  else if (!bias) m.sources["router.selection_bias"] = fmt::format("no correction-bias key (topk_method, {}): none", join(kBiasKeys, ", "));
  for (const auto& f : kBiasByCode)
    if (!bias && method.empty() && f.model_type == type) {
      m.router.selection_bias = true;
      m.sources["router.selection_bias"] = fmt::format("model_type {}: {}", type, f.why);
    }
  m.router.group_score = method == "noaux_tc" ? GroupScore::top2_sum : GroupScore::max;
  m.router.groups = r.agreed_integer("router.groups", kGroupKeys).value_or(1);
  if (!r.agreed("router.groups", kGroupKeys).first) m.sources["router.groups"] = "no group key: no group limit";
  if (m.router.groups > 1) {
    const auto tg = r.agreed_integer("router.topk_groups", kTopkGroupKeys);
    if (!tg) r.fail(fmt::format("config key {} not found (needed for router.topk_groups with {} groups)",
                                r.names(kTopkGroupKeys), m.router.groups));
    if (method.empty()) {  // no top-k method: DeepSeek-V3's group score with a correction bias, V2's without
      m.router.group_score = m.router.selection_bias ? GroupScore::top2_sum : GroupScore::max;
      m.sources["router.groups"] += m.router.selection_bias
                                        ? " (no topk_method; with a correction bias: a group scores its best two, as noaux_tc)"
                                        : " (no topk_method; no correction bias: a group scores its best, as group_limited_greedy)";
    }
    m.router.topk_groups = *tg;
  } else {
    m.router.topk_groups = 1;
    m.sources["router.topk_groups"] = "one group: no group limit";
  }
  if (method == "greedy") {
    m.router.groups = m.router.topk_groups = 1;
    m.sources["router.groups"] = m.sources["router.topk_groups"] = r.key_name("topk_method") + " greedy (no group limit)";
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
  } else if (m.router.score == Score::sigmoid || m.router.selection_bias) {
    m.router.normalize = true;
    m.sources["router.normalize"] = fmt::format("no normalisation key ({}): sigmoid or bias-corrected scores are "
                                                "renormalised over the top-k (DeepSeek-V3, GLM-4.5, MiniMax-M2, "
                                                "ERNIE-4.5)", join(kNormKeys, ", "));
  } else if (gemma_layout) {
    m.router.normalize = true;
    m.sources["router.normalize"] = r.key_name("enable_moe_block") + " (Gemma-4 router: top-k renormalised)";
  } else if (expert_key == "num_local_experts" || expert_key == "moe_num_experts") {
    m.router.normalize = true;
    m.sources["router.normalize"] = fmt::format("no normalisation key: configs keyed by {} (Mixtral, Granite, PhiMoE; "
                                                "ERNIE) renormalise the top-k", r.key_name(expert_key));
  } else {
    m.router.normalize = false;
    m.sources["router.normalize"] = fmt::format("no normalisation key ({}): transformers' default norm_topk_prob false",
                                                join(kNormKeys, ", "));
  }
  m.router.scale = r.real("router.scale", kScaleKeys, 1.0);
  if (m.sources["router.scale"] == "default") m.sources["router.scale"] = "no scaling key (or null): 1.0";
}

void read_fields_shared(Reader& r, Model& m, bool gemma_layout) {
  std::string_view ckey, skey;
  const auto count = r.agreed_integer("shared_experts", kSharedCountKeys, &ckey);
  const auto size = r.agreed_integer("shared_intermediate", kSharedSizeKeys, &skey);
  m.sources["shared_gate"] = "no shared-expert gate";
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
    m.shared = {.count = 1, .size = *size, .gate = skey == "shared_expert_intermediate_size"};
    if (!count) m.sources["shared_experts"] = r.key_name(skey) + " (one shared expert of that size)";
    if (m.shared.gate) m.sources["shared_gate"] = r.key_name(skey) + " (Qwen's key: a sigmoid-gated shared expert)";
  } else if (count && *count > 0 && !(size && *size == 0)) {
    m.shared = {.count = *count, .size = m.moe_intermediate, .gate = false};
    m.sources["shared_intermediate"] = m.sources["moe_intermediate"] + " (one shared expert's size)";
  } else {
    m.shared = {};
    if (!count) m.sources["shared_experts"] = "no shared-expert key: none";
    if (!size) m.sources["shared_intermediate"] = "no shared-expert key: none";
  }
}

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
  read_fields_router(r, m, ekey, gemma_layout, type);
  read_fields_shared(r, m, gemma_layout);
  const std::string_view near = gemma_layout ? "gemma4" : nearest_family(ekey, skey != "intermediate_size");
  m.family = fmt::format("fields (like {})", near);
  std::string keys = fmt::format("{}, {}, {}, {}", r.key_name(ekey), r.key_name(tkey), r.key_name(skey),
                                 m.sources["router.score"].starts_with("no ") ? "softmax by convention" : m.sources["router.score"]);
  for (const auto& d : decided) keys += ", " + d;
  m.inference = fmt::format("family inferred from fields: model_type '{}' is not a known family; read by its keys, "
                            "like {} ({})", type.empty() ? "(none)" : type, near, keys);
}

std::optional<Family> family_by_name(std::string_view name) {
  for (auto f : {Family::deepseek, Family::qwen, Family::olmoe, Family::mixtral, Family::gpt_oss, Family::llama4})
    if (family_name(f) == name) return f;
  for (const auto& f : kFamilies)
    if (f.model_type == name) return f.family;
  return std::nullopt;
}

}  // namespace

std::vector<std::string> known_hf_families() {
  std::vector<std::string> out;
  for (const auto& f : kFamilies) out.emplace_back(f.model_type);
  return out;
}

std::vector<std::string> hf_family_names() {
  std::vector<std::string> out;
  for (auto f : {Family::deepseek, Family::qwen, Family::olmoe, Family::mixtral, Family::gpt_oss, Family::llama4})
    out.emplace_back(family_name(f));
  out.emplace_back("fields");
  return out;
}

Model model_from_hf_json(const json& doc, const std::string& origin, std::string_view forced) {
  if (!doc.is_object()) throw UsageError(fmt::format("--hf-config {}: not a JSON object", origin));
  const json* cfg = &doc;
  std::string prefix;
  for (const char* nested : {"text_config", "language_config", "llm_config"})
    if (auto it = doc.find(nested); it != doc.end() && it->is_object()) {
      cfg = &*it;
      prefix = std::string(nested) + ".";
      break;
    }
  std::string type;
  if (auto it = cfg->find("model_type"); it != cfg->end() && it->is_string() && !it->get<std::string>().empty())
    type = it->get<std::string>();
  else if (auto top = doc.find("model_type"); top != doc.end() && top->is_string()) type = top->get<std::string>();
  std::optional<Family> fam;
  for (const auto& f : kFamilies)
    if (!type.empty() && f.model_type == type) fam = f.family;
  // An unknown model_type whose (nested, else top-level) architectures name a known class: that
  // class's family (DeepSeek-VL2/OCR keep a DeepseekV2ForCausalLM under language_config).
  std::string arch_note;
  for (const json* where : {cfg, &doc}) {
    if (fam) break;
    if (auto a = where->find("architectures"); a != where->end() && a->is_array() && !a->empty() && (*a)[0].is_string())
      for (const auto& f : kFamilies)
        if (!f.architecture.empty() && f.architecture == (*a)[0].get<std::string>()) {
          fam = f.family;
          arch_note = fmt::format("; family from {}architectures {} (model_type {})", where == cfg ? prefix : "",
                                  f.architecture, type.empty() ? "(none)" : type);
          type = f.model_type;
          break;
        }
  }
  bool by_fields = !fam;
  std::string forced_note;
  if (!forced.empty()) {
    if (forced == "fields") {
      by_fields = true;
    } else if (auto f = family_by_name(forced)) {
      fam = f;
      by_fields = false;
    } else {
      std::string known;
      for (const auto& n : hf_family_names()) known += (known.empty() ? "" : ", ") + n;
      throw UsageError(fmt::format("--family {}: unknown family (known: {}; or a known model_type)", forced, known));
    }
    forced_note = fmt::format("; family forced by --family {}", forced);
  }
  Model m;
  m.name = type.empty() ? "unnamed" : type;
  m.origin = "config " + origin + (forced.empty() ? arch_note : "") + forced_note;
  m.block = Block::standard;
  Reader r(*cfg, prefix, origin, m);
  if (by_fields) {
    read_by_fields(r, m, type);
  } else {
    m.family = std::string(family_name(*fam));
    read_moe_layers(r, *fam, forced.empty() ? std::string_view(type) : forced);
    read_family(r, m, *fam, forced.empty() ? std::string_view(type) : forced);
  }
  m.layers = r.layers();
  m.sources["moe_heads"] = "default";
  check_model(m);
  return m;
}

// Python's json module writes NaN, Infinity and -Infinity (Nemotron-H's time_step_limit); JSON
// has no such literals. Outside strings they become null: the reader needs none of those keys.
static std::string python_literals_to_null(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  bool str = false;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (str) {
      out += c;
      if (c == '\\' && i + 1 < in.size()) out += in[++i];
      else if (c == '"') str = false;
      continue;
    }
    if (c == '"') str = true;
    bool replaced = false;
    for (std::string_view lit : {"-Infinity", "Infinity", "NaN"})
      if (in.substr(i, lit.size()) == lit) {
        out += "null";
        i += lit.size() - 1;
        replaced = true;
        break;
      }
    if (!replaced) out += c;
  }
  return out;
}

Model read_hf_config(const std::string& path, std::string_view family) {
  std::string file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) file = (std::filesystem::path(path) / "config.json").string();
  const input::Origin origin{"--hf-config", file};
  if (input::kind_of(file) == input::Kind::missing) throw UsageError(fmt::format("--hf-config {}: cannot read the file", file));
  const std::string content = input::read_text(origin, input::kMaxConfigBytes);  // the input layer
  json doc;
  try {
    doc = json::parse(python_literals_to_null(content));
  } catch (const json::exception& e) {
    throw UsageError(fmt::format("--hf-config {}: not valid JSON ({})", file, e.what()));
  }
  // The reader walks every layer: bound the count before it does (no published model has more
  // than a few hundred).
  input::bound_count(doc, {"num_hidden_layers", "n_layers", "num_layers", "text_config.num_hidden_layers",
                           "language_config.num_hidden_layers", "llm_config.num_hidden_layers"},
                     1 << 20, "the layers the reader walks one by one", origin);
  return model_from_hf_json(doc, file, family);
}

}  // namespace layerbench::moe
