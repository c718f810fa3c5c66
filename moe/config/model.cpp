// Presets, overrides, checks and the layerbench-model/1 JSON of the MoE model description.
#include "moe/config/model.hpp"

#include "collectives/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace layerbench::moe {

std::string_view to_string(Score s) { return s == Score::softmax ? "softmax" : "sigmoid"; }
std::string_view to_string(Activation a) {
  switch (a) {
    case Activation::silu_glu: return "silu_glu";
    case Activation::swiglu_clamped: return "swiglu_clamped";
    case Activation::gelu_tanh_glu: return "gelu_tanh_glu";
  }
  return "?";
}
std::string_view to_string(GroupScore g) { return g == GroupScore::max ? "max" : "top2_sum"; }
std::string_view to_string(Block b) { return b == Block::standard ? "standard" : "magi2_multi_head"; }

Score parse_score(std::string_view s, std::string_view what) {
  if (s == "softmax") return Score::softmax;
  if (s == "sigmoid") return Score::sigmoid;
  throw UsageError(fmt::format("{}: unknown scoring function '{}' (known: softmax, sigmoid)", what, s));
}

GroupScore parse_group_score(std::string_view s, std::string_view what) {
  if (s == "max") return GroupScore::max;
  if (s == "top2-sum" || s == "top2_sum") return GroupScore::top2_sum;
  throw UsageError(fmt::format("{}: unknown group score '{}' (known: max, top2-sum)", what, s));
}

Activation parse_activation(std::string_view s, std::string_view what) {
  if (s == "silu_glu" || s == "silu-glu" || s == "silu" || s == "swiglu") return Activation::silu_glu;
  if (s == "swiglu_clamped" || s == "swiglu-clamped" || s == "swiglu7") return Activation::swiglu_clamped;
  if (s == "gelu_tanh_glu" || s == "gelu-tanh-glu") return Activation::gelu_tanh_glu;
  throw UsageError(fmt::format("{}: unknown activation '{}' (known: silu-glu, swiglu-clamped, gelu-tanh-glu)", what, s));
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Every field of a preset names its source once.
void source_all(Model& m, const std::string& src) {
  for (const char* f : {"hidden", "experts", "topk", "moe_intermediate", "moe_heads", "router.score",
                        "router.selection_bias", "router.groups", "router.topk_groups", "router.topk_before_score",
                        "router.normalize", "router.scale", "activation", "shared_experts", "shared_intermediate",
                        "shared_gate", "moe_layers"})
    m.sources[f] = src;
}

Model magi2() {
  Model m;
  m.name = "magi-2";
  m.family = "magi2";
  m.block = Block::magi2_multi_head;
  m.hidden = 3072;
  m.moe_heads = 12;
  m.experts = 256;  // per MoE head
  m.topk = 6;
  m.moe_intermediate = 1280;
  m.router = {.score = Score::sigmoid, .selection_bias = true, .normalize = true, .scale = 4.9};
  m.activation = {Activation::swiglu_clamped, 1.702, 7.0};
  m.shared = {.count = 1, .size = 1280, .gate = false};
  m.layers = 40;
  m.moe_layers = 36;
  source_all(m, "preset: SandAI-org/MAGI-2-preview configs/ and inference/model/magi2_preview.py");
  m.sources["moe_layers"] = "preset: MAGI-2-preview moe_layers 2-37 of 40 (mm_layers 0,1,38,39)";
  m.sources["router.scale"] = "preset: MAGI-2-preview route_scale";
  m.notes.push_back("MAGI-2 multi-head layer: split/merge linears around 12 MoE heads of d_head 256, each with its "
                    "own 256-expert bank; the shared branch adds a modality-specific MLP of 1280 per modality");
  return m;
}

Model deepseek_v3() {
  Model m;
  m.name = "deepseek-v3";
  m.family = "deepseek";
  m.hidden = 7168;
  m.experts = 256;
  m.topk = 8;
  m.moe_intermediate = 2048;
  m.router = {.score = Score::sigmoid, .selection_bias = true, .groups = 8, .topk_groups = 4,
              .group_score = GroupScore::top2_sum, .normalize = true, .scale = 2.5};
  m.shared = {.count = 1, .size = 2048};
  m.layers = 61;
  m.moe_layers = 58;
  source_all(m, "preset: deepseek-ai/DeepSeek-V3 config.json (tests/moe/data/hf/deepseek-ai--DeepSeek-V3.json)");
  m.sources["moe_layers"] = "preset: num_hidden_layers 61 - first_k_dense_replace 3 (moe_layer_freq 1)";
  m.sources["activation"] = "preset: DeepSeek-V3 inference/model.py (SiLU-GLU experts)";
  return m;
}

Model qwen3_30b() {
  Model m;
  m.name = "qwen3-30b-a3b";
  m.family = "qwen";
  m.hidden = 2048;
  m.experts = 128;
  m.topk = 8;
  m.moe_intermediate = 768;
  m.router = {.score = Score::softmax, .normalize = true};
  m.layers = 48;
  m.moe_layers = 48;
  source_all(m, "preset: Qwen/Qwen3-30B-A3B config.json (tests/moe/data/hf/Qwen--Qwen3-30B-A3B.json)");
  m.sources["router.score"] = "preset: transformers qwen3_moe (softmax, then top-k)";
  return m;
}

Model mixtral() {
  Model m;
  m.name = "mixtral-8x7b";
  m.family = "mixtral";
  m.hidden = 4096;
  m.experts = 8;
  m.topk = 2;
  m.moe_intermediate = 14336;
  m.router = {.score = Score::softmax, .normalize = true};
  m.layers = 32;
  m.moe_layers = 32;
  source_all(m, "preset: mistralai/Mixtral-8x7B-v0.1 config.json (intermediate_size is the expert size)");
  m.sources["router.score"] = m.sources["router.normalize"] =
      "preset: transformers mixtral (softmax, top-2, renormalised)";
  return m;
}

Model gpt_oss_120b() {
  Model m;
  m.name = "gpt-oss-120b";
  m.family = "gpt_oss";
  m.hidden = 2880;
  m.experts = 128;
  m.topk = 4;
  m.moe_intermediate = 2880;
  m.router = {.score = Score::softmax, .topk_before_score = true};
  m.activation = {Activation::swiglu_clamped, 1.702, 7.0};
  m.layers = 36;
  m.moe_layers = 36;
  source_all(m, "preset: openai/gpt-oss-120b config.json (tests/moe/data/hf/openai--gpt-oss-120b.json)");
  m.sources["router.topk_before_score"] = m.sources["activation"] =
      "preset: transformers gpt_oss (top-k then softmax over k; alpha 1.702, swiglu_limit 7)";
  m.notes.push_back("gpt-oss: router and expert biases, interleaved gate/up and MXFP4 weights are not modelled "
                    "(bf16 weights, no biases)");
  return m;
}

Model glm45_air() {
  Model m;
  m.name = "glm-4.5-air";
  m.family = "deepseek";
  m.hidden = 4096;
  m.experts = 128;
  m.topk = 8;
  m.moe_intermediate = 1408;
  m.router = {.score = Score::sigmoid, .selection_bias = true, .group_score = GroupScore::top2_sum,
              .normalize = true, .scale = 1.0};
  m.shared = {.count = 1, .size = 1408};
  m.layers = 46;
  m.moe_layers = 45;
  source_all(m, "preset: zai-org/GLM-4.5-Air config.json (tests/moe/data/hf/zai-org--GLM-4.5-Air.json)");
  m.sources["router.score"] = m.sources["router.selection_bias"] =
      "preset: transformers glm4_moe (sigmoid scores, e_score_correction_bias)";
  m.sources["moe_layers"] = "preset: num_hidden_layers 46 - first_k_dense_replace 1";
  return m;
}

struct PresetEntry {
  PresetInfo info;
  Model (*make)();
};
const std::vector<PresetEntry>& preset_table() {
  static const std::vector<PresetEntry> t = {
      {{"magi-2", "MAGI-2 preview multi-head MoE (the default)"}, magi2},
      {{"deepseek-v3", "DeepSeek-V3 / R1: 256 experts, group-limited sigmoid top-8, 1 shared"}, deepseek_v3},
      {{"qwen3-30b-a3b", "Qwen3-30B-A3B: 128 experts, softmax top-8, renormalised"}, qwen3_30b},
      {{"mixtral-8x7b", "Mixtral-8x7B: 8 experts, softmax top-2"}, mixtral},
      {{"gpt-oss-120b", "gpt-oss-120b: 128 experts, top-4 then softmax, clamped SwiGLU"}, gpt_oss_120b},
      {{"glm-4.5-air", "GLM-4.5-Air: 128 experts, sigmoid + bias top-8, 1 shared"}, glm45_air},
  };
  return t;
}

}  // namespace

const std::vector<PresetInfo>& presets() {
  static const std::vector<PresetInfo> v = [] {
    std::vector<PresetInfo> out;
    for (const auto& e : preset_table()) out.push_back(e.info);
    return out;
  }();
  return v;
}

Model preset(std::string_view name) {
  const std::string want = lower(name);
  std::string known;
  for (const auto& e : preset_table()) {
    if (e.info.name == want) {
      Model m = e.make();
      m.origin = "preset " + m.name;
      return m;
    }
    known += (known.empty() ? "" : ", ") + std::string(e.info.name);
  }
  throw UsageError(fmt::format("--model {}: unknown model (known: {}; or --hf-config FILE)", name, known));
}

std::string list_models_text() {
  std::string out = "Presets (--model NAME, any case; flags override their fields):\n";
  for (const auto& e : preset_table()) {
    const Model m = e.make();
    out += fmt::format("  {:<14} hidden {}, {} experts{}, top-{}, expert {}, shared {}x{}, {} {}, {} MoE layers: {}\n",
                       e.info.name, m.hidden, m.experts, m.moe_heads > 1 ? fmt::format(" x {} heads", m.moe_heads) : "",
                       m.topk, m.moe_intermediate, m.shared.count, m.shared.size, to_string(m.router.score),
                       to_string(m.activation.kind), m.moe_layers, e.info.description);
  }
  out += "Hugging Face configs (--hf-config FILE): model_type";
  for (const auto& f : known_hf_families()) out += " " + f;
  out += "; any other model_type is read by its fields (--family NAME forces one family's semantics)\n";
  return out;
}

bool ModelOverrides::any() const {
  return hidden || experts || topk || moe_intermediate || moe_heads || moe_layers || score || activation ||
         selection_bias || normalize || topk_before_score || shared_gate || groups || topk_groups || shared_experts ||
         shared_intermediate || scale || swiglu_alpha || swiglu_limit || group_score;
}

void apply_overrides(Model& m, const ModelOverrides& o) {
  std::vector<std::string> given;
  auto set = [&](auto& field, const auto& v, const char* key, const char* flag) {
    if (!v) return;
    field = *v;
    m.sources[key] = std::string("flag ") + flag;
    m.not_from_config[key] = m.sources[key];
    given.emplace_back(flag);
  };
  set(m.hidden, o.hidden, "hidden", "--hidden");
  set(m.experts, o.experts, "experts", "--experts");
  set(m.topk, o.topk, "topk", "--topk");
  set(m.moe_intermediate, o.moe_intermediate, "moe_intermediate", "--moe-intermediate");
  set(m.moe_heads, o.moe_heads, "moe_heads", "--moe-heads");
  set(m.moe_layers, o.moe_layers, "moe_layers", "--moe-layers");
  if (o.score) {
    m.router.score = parse_score(*o.score, "--router-score");
    m.sources["router.score"] = m.not_from_config["router.score"] = "flag --router-score";
    given.emplace_back("--router-score");
  }
  if (o.activation) {
    m.activation.kind = parse_activation(*o.activation, "--activation");
    m.sources["activation"] = m.not_from_config["activation"] = "flag --activation";
    given.emplace_back("--activation");
  }
  set(m.router.selection_bias, o.selection_bias, "router.selection_bias", "--selection-bias");
  set(m.router.normalize, o.normalize, "router.normalize", "--normalize");
  set(m.router.topk_before_score, o.topk_before_score, "router.topk_before_score", "--topk-before-score");
  set(m.router.groups, o.groups, "router.groups", "--groups");
  set(m.router.topk_groups, o.topk_groups, "router.topk_groups", "--topk-groups");
  set(m.router.scale, o.scale, "router.scale", "--scale");
  if (o.group_score) {
    m.router.group_score = parse_group_score(*o.group_score, "--group-score " + *o.group_score);
    m.sources["router.group_score"] = m.not_from_config["router.group_score"] = "flag --group-score";
    given.emplace_back("--group-score");
  }
  set(m.shared.count, o.shared_experts, "shared_experts", "--shared-experts");
  set(m.shared.size, o.shared_intermediate, "shared_intermediate", "--shared-intermediate");
  set(m.shared.gate, o.shared_gate, "shared_gate", "--shared-gate");
  set(m.activation.alpha, o.swiglu_alpha, "activation", "--swiglu-alpha");
  set(m.activation.limit, o.swiglu_limit, "activation", "--swiglu-limit");
  if (o.groups && !o.topk_groups && m.router.topk_groups > m.router.groups) m.router.topk_groups = m.router.groups;
  if (!given.empty()) {
    m.origin += "; flags:";
    for (const auto& g : given) m.origin += " " + g;
  }
}

void require_resolved(const Model& m) {
  std::string missing;
  for (const auto& u : m.unresolved) {
    const auto it = m.sources.find(u.field);
    if (it != m.sources.end() && it->second.starts_with("flag ")) continue;  // settled by its flag
    missing += fmt::format("\n  {}: no key ({}); give {}", u.field, u.keys, u.flag);
  }
  if (missing.empty()) return;
  throw UsageError(fmt::format(
      "{}: model_type '{}' is not a family the reader knows, and the config does not say how its router works "
      "(a key's spelling is no evidence of its semantics):{}\nor give --family NAME to read it with a known family's "
      "semantics{}", m.origin.starts_with("config ") ? "--hf-" + m.origin : m.origin, m.name, missing,
      m.suggestion.empty() ? std::string() : fmt::format(" (its keys resemble {}'s; not assumed)", m.suggestion)));
}

std::vector<std::string> not_from_config_lines(const Model& m) {
  std::vector<std::string> out;
  for (const auto& [field, source] : m.not_from_config) out.push_back(fmt::format("{}: {}", field, source));
  return out;
}

void check_model(const Model& m) {
  auto positive = [](std::int64_t v, const char* key) {
    if (v <= 0) throw UsageError(fmt::format("model field {} must be positive, got {}", key, v));
  };
  positive(m.hidden, "hidden");
  positive(m.experts, "experts");
  positive(m.topk, "topk");
  positive(m.moe_intermediate, "moe_intermediate");
  positive(m.moe_heads, "moe_heads");
  positive(m.moe_layers, "moe_layers");
  positive(m.router.groups, "router.groups");
  positive(m.router.topk_groups, "router.topk_groups");
  if (m.topk > m.experts) throw UsageError(fmt::format("topk {} exceeds experts {}", m.topk, m.experts));
  if (m.experts % m.router.groups != 0)
    throw UsageError(fmt::format("router.groups {} does not divide experts {}", m.router.groups, m.experts));
  if (m.router.topk_groups > m.router.groups)
    throw UsageError(fmt::format("router.topk_groups {} exceeds router.groups {}", m.router.topk_groups, m.router.groups));
  if (m.router.topk_groups * (m.experts / m.router.groups) < m.topk)
    throw UsageError(fmt::format("router.topk_groups {} x {} experts per group cannot hold topk {}",
                                 m.router.topk_groups, m.experts / m.router.groups, m.topk));
  if (m.router.groups > 1 && m.router.group_score == GroupScore::top2_sum && m.experts / m.router.groups < 2)
    throw UsageError("router.groups: a top-2-sum group score needs at least 2 experts per group");
  if (!(m.router.scale > 0) || !std::isfinite(m.router.scale))
    throw UsageError(fmt::format("router.scale must be positive, got {}", m.router.scale));
  if (m.shared.count < 0 || m.shared.size < 0 || (m.shared.count > 0) != (m.shared.size > 0))
    throw UsageError(fmt::format("shared experts {} x {}: both positive or both zero", m.shared.count, m.shared.size));
  if (!(m.activation.limit > 0) || !(m.activation.alpha > 0))
    throw UsageError("activation: alpha and limit must be positive");
}

void check_ep(const Model& m, std::int64_t ep) {
  if (ep < 1) throw UsageError(fmt::format("--ep must be at least 1, got {}", ep));
  if (m.experts % ep != 0)
    throw UsageError(fmt::format("experts {} (from {}) is not divisible by --ep {}", m.experts,
                                 m.sources.count("experts") ? m.sources.at("experts") : "default", ep));
}

nlohmann::json to_json(const Model& m) {
  nlohmann::json j;
  j["schema"] = kModelSchema;
  j["name"] = m.name;
  j["family"] = m.family;
  j["origin"] = m.origin;
  j["block"] = to_string(m.block);
  j["hidden"] = m.hidden;
  j["experts"] = m.experts;
  j["moe_heads"] = m.moe_heads;
  j["topk"] = m.topk;
  j["moe_intermediate"] = m.moe_intermediate;
  j["shared_experts"] = m.shared.count;
  j["shared_intermediate"] = m.shared.size;
  j["shared_gate"] = m.shared.gate;
  j["router"] = {{"score", to_string(m.router.score)}, {"selection_bias", m.router.selection_bias},
                 {"groups", m.router.groups}, {"topk_groups", m.router.topk_groups},
                 {"group_score", to_string(m.router.group_score)},
                 {"topk_before_score", m.router.topk_before_score}, {"normalize", m.router.normalize},
                 {"scale", m.router.scale}};
  j["activation"] = m.activation.kind == Activation::swiglu_clamped
                        ? nlohmann::json{{"kind", "swiglu_clamped"}, {"alpha", m.activation.alpha}, {"limit", m.activation.limit}}
                        : nlohmann::json{{"kind", to_string(m.activation.kind)}};
  j["layers"] = m.layers;
  j["moe_layers"] = m.moe_layers;
  j["sources"] = m.sources;
  j["notes"] = m.notes;
  if (!m.inference.empty()) j["inference"] = m.inference;
  j["not_from_config"] = m.not_from_config;
  return j;
}

std::string summary(const Model& m) {
  return fmt::format("{} ({}): hidden {}, {} experts{}, top-{}, expert {}, shared {}x{}{}, router {}{}{}{}{} x{}, {}",
                     m.name, m.origin, m.hidden, m.experts, m.moe_heads > 1 ? fmt::format(" x {} heads", m.moe_heads) : "",
                     m.topk, m.moe_intermediate, m.shared.count, m.shared.size, m.shared.gate ? " gated" : "",
                     to_string(m.router.score), m.router.selection_bias ? " + bias" : "",
                     m.router.groups > 1 ? fmt::format(", {} groups / top-{}", m.router.groups, m.router.topk_groups) : "",
                     m.router.topk_before_score ? ", top-k first" : "", m.router.normalize ? ", renormalised" : "",
                     m.router.scale, to_string(m.activation.kind));
}

}  // namespace layerbench::moe
