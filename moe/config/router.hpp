#pragma once
// The router families of the standard MoE block on one token, fp32, in a fixed order: the
// numerical definition that the host backend runs, the CPU oracle checks and the CUDA router
// kernel (moe/standard/std_kernels.cu) mirrors.
//   1. scores: softmax or sigmoid of the logits (or, with topk_before_score, the logits
//      themselves are the selection values);
//   2. selection value = score (+ bias when selection_bias);
//   3. group limit (groups > 1): group value = its best selection value (max) or the sum of its
//      two best (top2_sum); the topk_groups best groups stay, the others are excluded;
//   4. top-k of the selection values, ties to the lower expert id;
//   5. weights: the selected scores (with topk_before_score: softmax over the k selected
//      logits, or their sigmoid); normalize divides by their sum; times scale.
#include "moe/config/model.hpp"

#include <cstdint>
#include <span>

namespace layerbench::moe {

// `logits` (E), `bias` (E, used only with selection_bias; may be null otherwise). Writes k
// expert ids (in selection order) and weights. `work` holds 3E floats + E ints of scratch.
// Returns the selection margin: the k-th selected value minus the best excluded one among the
// allowed groups (+inf when nothing is excluded).
float route_token(const float* logits, const float* bias, const RouterSpec& spec, std::int64_t experts,
                  std::int64_t topk, std::int32_t* idx, float* weight, std::span<float> work);

// The activation on one (gate, up) pair, fp32.
float glu(float g, float u, const ActivationSpec& a);

}  // namespace layerbench::moe
