// The Hugging Face config.json reader of the MoE model description: one key table per family
// (moe_models.md §2), a nested text_config, per-layer lists, and the MoE-layer count. Every field
// records the key it came from, "default" (the family's documented default when the key is
// absent) or "fixed by model_type X" (semantics the family fixes in code, not in the config).
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

// Reads fields of one (text) config, recording where each came from.
class Reader {
 public:
  Reader(const json& cfg, std::string prefix, std::string file, Model& m)
      : cfg_(cfg), prefix_(std::move(prefix)), file_(std::move(file)), m_(m) {}

  const json* find(std::string_view key) const {
    const auto it = cfg_.find(std::string(key));
    return it == cfg_.end() || it->is_null() ? nullptr : &*it;
  }
  std::string key_name(std::string_view key) const { return prefix_ + std::string(key); }
  std::string what(std::string_view key) const { return fmt::format("--hf-config {}: config key {}", file_, key_name(key)); }
  [[noreturn]] void fail(const std::string& what) const { throw UsageError(fmt::format("--hf-config {}: {}", file_, what)); }

  // The value of an integer field at the first MoE layer: a number, or a per-layer list of
  // `layers_` entries (Hunyuan-style). Missing: the first alias that is present, else the
  // default, else an error naming every alias looked for.
  std::int64_t integer(const char* field, std::initializer_list<std::string_view> aliases,
                       std::optional<std::int64_t> fallback = std::nullopt) {
    for (auto key : aliases)
      if (const json* v = find(key)) return record(field, key, number_at_moe_layer(key, *v));
    return defaulted(field, aliases, fallback);
  }
  double real(const char* field, std::string_view key, double fallback) {
    if (const json* v = find(key)) {
      if (!v->is_number()) fail(fmt::format("config key {} must be a number, got {}", key_name(key), v->dump()));
      m_.sources[field] = key_name(key);
      return v->get<double>();
    }
    m_.sources[field] = "default";
    return fallback;
  }
  bool boolean(const char* field, std::string_view key, bool fallback) {
    if (const json* v = find(key)) {
      if (!v->is_boolean()) fail(fmt::format("config key {} must be true or false, got {}", key_name(key), v->dump()));
      m_.sources[field] = key_name(key);
      return v->get<bool>();
    }
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
  std::int64_t record(const char* field, std::string_view key, std::pair<std::int64_t, std::string> v) {
    m_.sources[field] = key_name(key) + v.second;
    return v.first;
  }
  std::int64_t defaulted(const char* field, std::initializer_list<std::string_view> aliases,
                         std::optional<std::int64_t> fallback) {
    if (fallback) {
      m_.sources[field] = "default";
      return *fallback;
    }
    std::string names;
    for (auto k : aliases) names += (names.empty() ? "" : " or ") + key_name(k);
    fail(fmt::format("config key {} not found (needed for {})", names, field));
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

void read_moe_layers(Reader& r, Family fam, std::string_view type) {
  const std::int64_t L = r.integer("layers", {"num_hidden_layers"});
  if (L < 1) r.fail(fmt::format("config key {} must be at least 1, got {}", r.key_name("num_hidden_layers"), L));
  r.set_layer_count(L);
  auto all = [](std::int64_t) { return true; };
  if (fam == Family::deepseek) {
    const std::int64_t first = r.integer("first_k_dense_replace", {"first_k_dense_replace"}, 0);
    if (const json* freq = r.find("moe_layer_freq"); freq && freq->is_array()) {
      const json& list = r.per_layer_list("moe_layer_freq", *freq);
      r.set_moe_layers(L, [&](std::int64_t i) { return list[static_cast<std::size_t>(i)] != 0; },
                       r.key_name("moe_layer_freq") + " (per-layer list)");
    } else {
      const std::int64_t f = r.integer("moe_layer_freq", {"moe_layer_freq"}, 1);
      if (f < 1) r.fail(fmt::format("config key {} must be at least 1", r.key_name("moe_layer_freq")));
      r.set_moe_layers(L, [&](std::int64_t i) { return i >= first && i % f == 0; },
                       fmt::format("{} {} - {} {} (every {} from there)", r.key_name("num_hidden_layers"), L,
                                   r.key_name("first_k_dense_replace"), first, f));
    }
  } else if (fam == Family::qwen) {
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
  } else if (fam == Family::llama4) {
    if (const json* v = r.find("moe_layers"); v && v->is_array()) {
      std::set<std::int64_t> moe;
      for (const auto& e : *v) moe.insert(e.get<std::int64_t>());
      r.set_moe_layers(L, [&](std::int64_t i) { return moe.count(i) > 0; }, r.key_name("moe_layers"));
    } else {
      const std::int64_t step = r.integer("interleave_moe_layer_step", {"interleave_moe_layer_step"}, 1);
      if (step < 1) r.fail(fmt::format("config key {} must be at least 1", r.key_name("interleave_moe_layer_step")));
      r.set_moe_layers(L, [&](std::int64_t i) { return (i + 1) % step == 0; },
                       fmt::format("{} {} / {} {}", r.key_name("num_hidden_layers"), L,
                                   r.key_name("interleave_moe_layer_step"), step));
    }
  } else {
    r.set_moe_layers(L, all, fmt::format("{} (every layer is MoE in model_type {})", r.key_name("num_hidden_layers"), type));
  }
}

void read_deepseek_router(Reader& r, Model& m, std::string_view type) {
  const bool glm = type == "glm4_moe";
  std::string scoring = "sigmoid", method = "noaux_tc";
  if (auto s = r.text("scoring_func")) {
    scoring = *s;
    m.sources["router.score"] = r.key_name("scoring_func");
  } else if (glm) {
    r.fixed("router.score", type);
  } else {
    r.fail(fmt::format("config key {} not found (needed for router.score)", r.key_name("scoring_func")));
  }
  m.router.score = parse_score(scoring, r.what("scoring_func"));
  if (auto t = r.text("topk_method")) {
    method = *t;
    m.sources["router.selection_bias"] = r.key_name("topk_method");
  } else if (glm) {
    r.fixed("router.selection_bias", type);
  } else {
    r.fail(fmt::format("config key {} not found (needed for router.selection_bias)", r.key_name("topk_method")));
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
      m.router.normalize = r.boolean("router.normalize", "norm_topk_prob", false);
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

}  // namespace

std::vector<std::string> known_hf_families() {
  std::vector<std::string> out;
  for (const auto& f : kFamilies) out.emplace_back(f.model_type);
  return out;
}

Model model_from_hf_json(const json& doc, const std::string& origin) {
  if (!doc.is_object()) throw UsageError(fmt::format("--hf-config {}: not a JSON object", origin));
  const json* cfg = &doc;
  std::string prefix;
  if (auto it = doc.find("text_config"); it != doc.end() && it->is_object()) {
    cfg = &*it;
    prefix = "text_config.";
  }
  std::string type;
  if (auto it = cfg->find("model_type"); it != cfg->end() && it->is_string()) type = it->get<std::string>();
  else if (auto top = doc.find("model_type"); top != doc.end() && top->is_string()) type = top->get<std::string>();
  std::optional<Family> fam;
  for (const auto& f : kFamilies)
    if (!type.empty() && f.model_type == type) fam = f.family;
  if (!fam) {
    if (auto a = doc.find("architectures"); a != doc.end() && a->is_array() && !a->empty() && (*a)[0].is_string())
      for (const auto& f : kFamilies)
        if (!f.architecture.empty() && f.architecture == (*a)[0].get<std::string>()) {
          fam = f.family;
          type = f.model_type;
        }
  }
  if (!fam) {
    std::string known;
    for (const auto& f : known_hf_families()) known += (known.empty() ? "" : ", ") + f;
    throw UsageError(fmt::format("--hf-config {}: config key {}model_type '{}' is not a known MoE family (known: {})",
                                 origin, prefix, type, known));
  }
  Model m;
  m.name = type;
  m.family = std::string(family_name(*fam));
  m.origin = "config " + origin;
  m.block = Block::standard;
  Reader r(*cfg, prefix, origin, m);
  read_moe_layers(r, *fam, type);
  m.layers = r.layers();
  read_family(r, m, *fam, type);
  m.sources["moe_heads"] = "default";
  check_model(m);
  return m;
}

Model read_hf_config(const std::string& path) {
  std::string file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) file = (std::filesystem::path(path) / "config.json").string();
  const auto content = text::read_file(file);
  if (!content) throw UsageError(fmt::format("--hf-config {}: cannot read the file", file));
  json doc;
  try {
    doc = json::parse(*content);
  } catch (const json::exception& e) {
    throw UsageError(fmt::format("--hf-config {}: not valid JSON ({})", file, e.what()));
  }
  return model_from_hf_json(doc, file);
}

}  // namespace layerbench::moe
