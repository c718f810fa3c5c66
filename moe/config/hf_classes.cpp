// The class defaults of the model_types the reader knows: where a config leaves a semantic key
// out, the value its config class defaults to (or its modelling code fixes), with the class and
// the file it was read from. One row per model_type; a field a row leaves empty has no default
// that was verified, so a config without its key asks for it (a flag or --family).
#include "moe/config/hf_reader.hpp"

namespace layerbench::moe::hf {

namespace {

constexpr std::string_view kTf = "huggingface/transformers src/transformers/models/";

// method: "noaux_tc" (a selection bias; groups scored by their best two), "greedy" (no bias, no
// group limit), "bias" (a selection bias, no group key), "none" (no bias); "" no default.
// normalize / shared_gate: 1, 0, or -1 (no default); scale, groups: 0 is no default.
constexpr ClassRow kRows[] = {
    {"deepseek_v2", "DeepseekV2Config", "deepseek_v2/configuration_deepseek_v2.py (topk_method greedy, "
     "norm_topk_prob False, routed_scaling_factor 1.0; softmax gate in modeling_deepseek_v2.py)",
     "softmax", "greedy", 0, 1.0, 0, 0, -1},
    {"deepseek_v3", "DeepseekV3Config", "deepseek_v3/configuration_deepseek_v3.py (norm_topk_prob True, "
     "routed_scaling_factor 2.5, n_group 8, topk_group 4; sigmoid + e_score_correction_bias in modeling_deepseek_v3.py)",
     "sigmoid", "noaux_tc", 1, 2.5, 8, 4, -1},
    {"glm4_moe", "Glm4MoeConfig", "glm4_moe/configuration_glm4_moe.py (norm_topk_prob True, routed_scaling_factor "
     "1.0, n_group 1, topk_group 1; sigmoid + e_score_correction_bias in modeling_glm4_moe.py)",
     "sigmoid", "noaux_tc", 1, 1.0, 1, 1, -1},
    {"glm4_moe_lite", "Glm4MoeLiteConfig", "glm4_moe_lite/configuration_glm4_moe_lite.py (norm_topk_prob True, "
     "routed_scaling_factor 1.8, n_group 1, topk_group 1; GLM-4's sigmoid + e_score_correction_bias router)",
     "sigmoid", "noaux_tc", 1, 1.8, 1, 1, -1},
    {"qwen3_5_moe", "Qwen3_5MoeTextConfig", "qwen3_5_moe/modeling_qwen3_5_moe.py (Qwen3_5MoeTopKRouter: softmax, "
     "top-k always renormalised, no norm_topk_prob key; sigmoid-gated shared_expert)",
     "softmax", "none", 1, 1.0, 0, 0, 1},
    {"qwen3_5_moe_text", "Qwen3_5MoeTextConfig", "qwen3_5_moe/modeling_qwen3_5_moe.py (Qwen3_5MoeTopKRouter: "
     "softmax, top-k always renormalised, no norm_topk_prob key; sigmoid-gated shared_expert)",
     "softmax", "none", 1, 1.0, 0, 0, 1},
    {"minimax_m2", "MiniMaxM2Config", "minimax_m2/modular_minimax_m2.py (MiniMaxM2TopKRouter: sigmoid, "
     "e_score_correction_bias for the selection, top-k always renormalised, no scaling; no shared expert)",
     "sigmoid", "bias", 1, 1.0, 0, 0, 0},
    // Read by the Qwen and OLMoE family readers, whose modelling code fixes the softmax router and
    // the shared-expert gate; the class settles only the normalisation a config leaves out.
    {"qwen2_moe", "Qwen2MoeConfig", "qwen2_moe/configuration_qwen2_moe.py (norm_topk_prob False)",
     "", "", 0, 0, 0, 0, -1},
    {"qwen3_moe", "Qwen3MoeConfig", "qwen3_moe/configuration_qwen3_moe.py (norm_topk_prob False; Qwen3MoeTopKRouter "
     "in modeling_qwen3_moe.py renormalises the top-k iff norm_topk_prob)",
     "", "", 0, 0, 0, 0, -1},
    {"qwen3_next", "Qwen3NextConfig", "qwen3_next/configuration_qwen3_next.py (norm_topk_prob True)",
     "", "", 1, 0, 0, 0, -1},
    {"olmoe", "OlmoeConfig", "olmoe/configuration_olmoe.py (norm_topk_prob False)",
     "", "", 0, 0, 0, 0, -1},
    {"qwen3_vl_moe", "Qwen3VLMoeTextConfig", "qwen3_vl_moe/modular_qwen3_vl_moe.py (Qwen3VLMoeTextTopKRouter: "
     "softmax over all experts, top-k always renormalised, norm_topk_prob removed from the class; "
     "Qwen3MoeSparseMoeBlock: no shared expert)",
     "softmax", "none", 1, 1.0, 0, 0, -1},
    {"qwen3_vl_moe_text", "Qwen3VLMoeTextConfig", "qwen3_vl_moe/modular_qwen3_vl_moe.py (Qwen3VLMoeTextTopKRouter: "
     "softmax over all experts, top-k always renormalised, norm_topk_prob removed from the class; "
     "Qwen3MoeSparseMoeBlock: no shared expert)",
     "softmax", "none", 1, 1.0, 0, 0, -1},
    {"ernie4_5_moe", "Ernie4_5_MoeConfig", "ernie4_5_moe/modular_ernie4_5_moe.py (Ernie4_5_MoeSparseMoeBlock: "
     "softmax, moe_statics.e_score_correction_bias added for the selection only, top-k weights renormalised "
     "(sum clamped at moe_norm_min), no scaling; shared_experts added ungated)",
     "softmax", "bias", 1, 1.0, 0, 0, 0},
    {"granitemoe", "GraniteMoeConfig", "granitemoe/modular_granitemoe.py (GraniteMoeTopKGating = JetMoeTopKGating: "
     "top-k of the logits, softmax over the k, the same weights as a softmax renormalised over the top-k; no bias, "
     "no scaling; no shared expert)",
     "softmax", "none", 1, 1.0, 0, 0, -1},
    {"dbrx", "DbrxFFNConfig", "dbrx/configuration_dbrx.py (moe_normalize_expert_weights 1.0: the top-k weights "
     "L1-normalised; DbrxRouter in modeling_dbrx.py: softmax, no bias, no scaling)",
     "softmax", "none", 1, 1.0, 0, 0, 0},
};

}  // namespace

const ClassRow* class_row(std::string_view model_type) {
  for (const auto& r : kRows)
    if (r.model_type == model_type) return &r;
  return nullptr;
}

std::string class_source(const ClassRow& row, std::string_view key, std::string_view value) {
  return fmt::format("class default: no {} key; {}'s {} ({}{})", key, row.config_class, value, kTf, row.file);
}

std::vector<const ClassRow*> class_rows() {
  std::vector<const ClassRow*> out;
  for (const auto& r : kRows) out.push_back(&r);
  return out;
}

}  // namespace layerbench::moe::hf

namespace layerbench::moe {

std::vector<std::string> hf_class_default_rows() {
  std::vector<std::string> out;
  for (const auto* r : hf::class_rows()) {
    std::string line = fmt::format("{} | {} | {}{} |", r->model_type, r->config_class, hf::kTf, r->file);
    if (!r->score.empty()) line += fmt::format(" score={}", r->score);
    if (!r->method.empty()) line += fmt::format(" method={}", r->method);
    if (r->normalize >= 0) line += fmt::format(" normalize={}", r->normalize == 1);
    if (r->scale > 0) line += fmt::format(" scale={}", r->scale);
    if (r->groups > 0) line += fmt::format(" groups={}/{}", r->groups, r->topk_groups);
    if (r->shared_gate >= 0) line += fmt::format(" shared_gate={}", r->shared_gate == 1);
    out.push_back(line);
  }
  return out;
}

}  // namespace layerbench::moe
