#pragma once
// The Hugging Face config.json reader's internals (moe/config/): the key families, the Reader
// that records where each field came from, and the steps the public entry points
// (moe/config/hf_config.cpp) compose: the MoE-layer patterns (hf_patterns.cpp), the known
// families' readers (hf_family.cpp) and the field reader for any other model_type (hf_fields.cpp).
#include "common/numeric.hpp"
#include "common/json_text.hpp"
#include "common/text.hpp"
#include "collectives/error.hpp"
#include "moe/config/model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace layerbench::moe::hf {

using nlohmann::json;

enum class Family { deepseek, qwen, olmoe, mixtral, gpt_oss, llama4 };

struct FamilyEntry {
  std::string_view model_type;
  std::string_view architecture;
  Family family;
};
inline constexpr FamilyEntry kFamilies[] = {
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

std::string_view family_name(Family f);
std::optional<Family> family_by_name(std::string_view name);

using Keys = std::vector<std::string_view>;
inline std::string join(const Keys& keys, std::string_view sep, const std::string& prefix = {}) {
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
  // A semantic field the config does not give: recorded, refused unless a flag settles it.
  void ask(const char* field, const Keys& keys, std::string_view flag) {
    m_.unresolved.push_back({field, names(keys), std::string(flag)});
    m_.sources[field] = fmt::format("not in the config ({})", names(keys));
  }
  void fixed(const char* field, std::string_view model_type) {
    m_.sources[field] = fmt::format("fixed by model_type {}", model_type);
  }

  // Which layers are MoE: `is_moe` over [0, layers).
  void set_moe_layers(std::int64_t layers, const std::function<bool(std::int64_t)>& is_moe, std::string source) {
    layers_ = layers;
    first_moe_ = -1;
    std::int64_t n = 0;
    moe_mask_.assign(static_cast<std::size_t>(layers), false);
    for (std::int64_t i = 0; i < layers; ++i)
      if (is_moe(i)) {
        moe_mask_[static_cast<std::size_t>(i)] = true;
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
  const json& config() const { return cfg_; }
  const std::string& prefix() const { return prefix_; }
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
        fail(fmt::format("config key {} must be a whole number, got {}", key_name(key), json_text(x)));
      return x.get<std::int64_t>();
    };
    if (!v.is_array()) return {as_int(v), ""};
    if (layers_ <= 0) fail(fmt::format("config key {} is a list before the layer count is known", key_name(key)));
    const json& list = per_layer_list(key, v);
    const auto at = static_cast<std::size_t>(std::max<std::int64_t>(first_moe_, 0));
    // One profile stands for every MoE layer: values that differ between MoE layers (experts of
    // unequal sizes or counts) are refused, naming the layers.
    for (std::size_t i = 0; i < moe_mask_.size() && i < list.size(); ++i)
      if (moe_mask_[i] && as_int(list[i]) != as_int(list[at]))
        fail(fmt::format("config key {}: MoE layer {} has {} and MoE layer {} has {}: layers whose experts differ "
                         "(unequal sizes or counts) are not one standard block", key_name(key), at,
                         json_text(list[at]), i, json_text(list[i])));
    return {as_int(list[at]), fmt::format("[{}] (per-layer list, first MoE layer)", at)};
  }

  const json& cfg_;
  std::string prefix_, file_;
  Model& m_;
  std::int64_t layers_ = 0, first_moe_ = -1;
  std::vector<bool> moe_mask_;
};

// A model_type's semantic defaults: its config class's (or modelling code's) value of each field a
// config may leave out, and the file it was read from (hf_classes.cpp). Empty / -1 / 0: no default.
struct ClassRow {
  std::string_view model_type, config_class, file;
  std::string_view score, method;
  int normalize;
  double scale;
  std::int64_t groups, topk_groups;
  int shared_gate;
};
const ClassRow* class_row(std::string_view model_type);
std::vector<const ClassRow*> class_rows();
// "class default: no KEY key; CLASS's VALUE (FILE)".
std::string class_source(const ClassRow& row, std::string_view key, std::string_view value);

// The MoE-layer patterns (hf_patterns.cpp).
void deepseek_pattern(Reader& r, std::int64_t L);
void qwen_pattern(Reader& r, std::int64_t L);
void llama4_pattern(Reader& r, std::int64_t L);
std::int64_t layer_count(Reader& r);
void read_moe_layers(Reader& r, Family fam, std::string_view type);
// Which layers are MoE, from whichever pattern key a config of an unknown family carries.
void field_pattern(Reader& r, std::vector<std::string>& decided);

// Refusals of what the standard block cannot represent, and bounds (hf_refusals.cpp).
void refuse_unrepresentable(const json& doc, Reader& r, Model& m, bool text_router_only);
void check_bounds(Reader& r, const Model& m);
inline constexpr std::int64_t kMaxLayers = 100000;

// A known family's reader (hf_family.cpp) and the field reader (hf_fields.cpp).
void read_family(Reader& r, Model& m, Family fam, std::string_view type);
void read_by_fields(Reader& r, Model& m, std::string_view type);

}  // namespace layerbench::moe::hf
