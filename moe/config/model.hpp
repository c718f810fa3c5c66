#pragma once
// The MoE model description: geometry, router, activation, shared experts and MoE layers per
// forward, with the source of every field (a preset, a Hugging Face config.json key, a flag or
// "default"). Resolved once (presets, --hf-config, flag overrides) before any measurement; a
// field that cannot be resolved is a UsageError naming the key — never a silent guess.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace layerbench::moe {

enum class Score { softmax, sigmoid };
// gelu_tanh_glu: gelu(g, tanh approximation) * u (Gemma-4's experts); the host backend runs it,
// the CUDA kernels do not (a UsageError on that backend).
enum class Activation { silu_glu, swiglu_clamped, gelu_tanh_glu };
// How a group is scored for group-limited top-k: its best expert (DeepSeek-V2's
// group_limited_greedy) or the sum of its two best (DeepSeek-V3's noaux_tc).
enum class GroupScore { max, top2_sum };
// Which layer implements the model: MAGI-2's multi-head layer (moe/magi2/layer.hpp) or the standard
// expert-parallel MoE block (moe/standard/std_block.hpp).
enum class Block { magi2_multi_head, standard };

struct RouterSpec {
  Score score = Score::softmax;
  bool selection_bias = false;  // a per-expert bias added for the selection only (noaux_tc)
  std::int64_t groups = 1, topk_groups = 1;
  GroupScore group_score = GroupScore::max;
  // true: softmax over the k selected logits (gpt-oss, Llama-4's sigmoid of the k selected);
  // false: score every expert, then select (DeepSeek, Qwen, Mixtral).
  bool topk_before_score = false;
  bool normalize = false;  // divide the selected weights by their sum
  double scale = 1.0;      // routed scaling factor applied to the weights
};

struct ActivationSpec {
  Activation kind = Activation::silu_glu;
  double alpha = 1.702, limit = 7.0;  // clamped SwiGLU: min(g,limit)*sigmoid(alpha g)*(clamp(u)+1)
};

struct SharedSpec {
  std::int64_t count = 0;         // shared experts, fused into one MLP of count x size
  std::int64_t size = 0;          // intermediate size of one shared expert
  bool gate = false;              // sigmoid(x . w) gate on the shared output (Qwen2-MoE)
  std::int64_t intermediate() const { return count * size; }
};

// A semantic field a config of an unknown family leaves without a key: never guessed; a flag
// settles it, or --family NAME reads the config with a known family's semantics.
struct Unresolved {
  std::string field;  // "router.score", ...
  std::string keys;   // the config keys looked for
  std::string flag;   // the flag that settles it, with its values
};

struct Model {
  std::string name;    // preset name, or the config's model_type
  std::string family;  // the key family used to read it
  std::string origin;  // "preset magi-2", "config FILE (sha256 ...)", plus "+ flags"
  Block block = Block::standard;
  std::int64_t hidden = 0, experts = 0, topk = 0, moe_intermediate = 0;
  std::int64_t moe_heads = 1;  // MAGI-2: MoE heads (experts per head); standard: 1
  RouterSpec router;
  ActivationSpec activation;
  SharedSpec shared;
  std::int64_t layers = 0, moe_layers = 0;
  std::map<std::string, std::string> sources;  // field -> where it came from
  std::vector<std::string> notes;              // semantics not modelled, stated once
  // A config read by its fields (model_type not a known family): "family inferred from fields:
  // ..." with the key family it resembles and the keys that decided it; "" otherwise.
  std::string inference;
  // Fields no config key gave (a class default, modelling code, --family, a rule or a flag):
  // field -> its source; the profile header and --describe list them one per line.
  std::map<std::string, std::string> not_from_config;
  std::vector<Unresolved> unresolved;  // what the config does not say (require_resolved refuses)
  std::string suggestion;              // a family the keys resemble: suggested in that refusal, never used
};

std::string_view to_string(Score s);
std::string_view to_string(Activation a);
std::string_view to_string(GroupScore g);
std::string_view to_string(Block b);
// UsageError naming `what` on an unknown spelling.
Score parse_score(std::string_view s, std::string_view what);
Activation parse_activation(std::string_view s, std::string_view what);

// ---- presets ----------------------------------------------------------------------------
struct PresetInfo {
  std::string_view name;
  std::string_view description;
};
const std::vector<PresetInfo>& presets();
// Case-insensitive; UsageError listing the presets on an unknown name.
Model preset(std::string_view name);
// The --list-models text: one line per preset with its shape and source.
std::string list_models_text();

// ---- Hugging Face config.json -------------------------------------------------------------
// Reads a config.json (or a directory holding one), descending into a nested text_config /
// language_config / llm_config. A known model_type (or architecture) is read by its family's
// key table; any other by its fields (moe/hf_config.cpp: the alias lists and the rules, each
// recorded in `sources` and `inference`). `family` (--family) forces one family's semantics:
// a family name or a known model_type. UsageError naming the key on anything it cannot
// resolve: a missing required key, keys that disagree (naming --family), a dense config, an
// unknown scoring function or activation, a per-layer list whose length is not the layer count.
// `flags` are the field flags given (they settle what the config leaves unsaid; the caller applies
// them); a field still unresolved after them is a UsageError naming its keys and flags.
struct ModelOverrides;
Model read_hf_config(const std::string& path, std::string_view family = {});
Model read_hf_config(const std::string& path, std::string_view family, const ModelOverrides& flags);
Model model_from_hf_json(const nlohmann::json& doc, const std::string& origin, std::string_view family = {});
Model model_from_hf_json(const nlohmann::json& doc, const std::string& origin, std::string_view family,
                         const ModelOverrides& flags);
// One row per model_type with class defaults or code-fixed semantics (moe/config/hf_classes.cpp):
// "model_type | class | file | field=value ..." lines, for docs/model-configs.md and its test.
std::vector<std::string> hf_class_default_rows();
// The model_type values the reader knows, for messages and --list-models.
std::vector<std::string> known_hf_families();
// The family names --family accepts.
std::vector<std::string> hf_family_names();

// ---- overrides and output -----------------------------------------------------------------
// Field overrides from flags (each given flag replaces its field; source "flag --x").
struct ModelOverrides {
  std::optional<std::int64_t> hidden, experts, topk, moe_intermediate, moe_heads, moe_layers;
  std::optional<std::string> score, activation;
  std::optional<bool> selection_bias, normalize, topk_before_score, shared_gate;
  std::optional<std::int64_t> groups, topk_groups, shared_experts, shared_intermediate;
  std::optional<double> scale, swiglu_alpha, swiglu_limit;
  std::optional<std::string> group_score;  // max | top2-sum
  // Profile the text path alone of a config with per-modality routers (--text-router-only).
  bool text_router_only = false;
  bool any() const;
};
void apply_overrides(Model& m, const ModelOverrides& o);
// UsageError when a field the config left unsaid was not settled by a flag (see Unresolved).
void require_resolved(const Model& m);
// "field: source" for every field not read from the config (not_from_config), one per line.
std::vector<std::string> not_from_config_lines(const Model& m);
GroupScore parse_group_score(std::string_view s, std::string_view what);
// Structural checks of a resolved model (UsageError naming the field): positive sizes, topk
// within the experts, groups dividing the experts, topk_groups x experts/groups >= topk.
void check_model(const Model& m);
// Experts sharded contiguously over `ep` ranks: UsageError naming the key when not divisible.
void check_ep(const Model& m, std::int64_t ep);

// Schema layerbench-model/1.
inline constexpr std::string_view kModelSchema = "layerbench-model/1";
nlohmann::json to_json(const Model& m);
// One line for report headers: "deepseek-v3 (preset; flags: --experts)".
std::string summary(const Model& m);

}  // namespace layerbench::moe
