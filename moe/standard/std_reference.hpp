#pragma once
// The CPU oracle of the standard MoE block: one token at a time, from the seeded weights
// (moe/init.hpp) regenerated on the host, fp32, in the host backend's order of operations (so
// the host block matches it bit for bit at any EP size). With bf16 = true it rounds the weights
// and every stored activation as the CUDA backend does, for the sampled check of a GPU run.
// With an FP8 dispatch, the routed experts see the token quantized and dequantized as the block's
// dispatch does (moe/standard/fp8_dispatch.hpp, then rounded to the act type); the router and the
// shared experts see the token as it is. With FP8 experts (moe/standard/std_fp8_experts.hpp) the
// expert weights are quantized and dequantized with the block's recipe, and so are the rows each
// expert MLP reads and its activation (the routed experts, or the shared ones, or both).
#include "moe/config/model.hpp"
#include "moe/standard/std_block.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <vector>

namespace layerbench::moe {

// The seed of layer `layer` of the standard block (StdBlock uses it for its weights).
std::uint64_t std_layer_seed(std::uint64_t seed, int layer);

class StdReference {
 public:
  StdReference(const Model& m, std::uint64_t seed, int layer_index, bool bf16,
               DispatchPrecision dispatch = DispatchPrecision::act, ExpertPrecision experts = ExpertPrecision::act,
               ExpertPrecision shared = ExpertPrecision::act);
  // x (hidden) -> out (hidden); the token's routing in ids / weights (topk each) when given.
  // Returns the routing's selection margin (moe/config/router.hpp).
  float token(const float* x, float* out, std::int32_t* ids = nullptr, float* weights = nullptr);

 private:
  float w(std::uint32_t tensor, std::uint64_t index, float scale) const;
  const std::vector<float>& expert(std::int64_t e);  // [W13 (2I, H) | W_down (H, I)]
  float round(float v) const;

  Model m_;
  std::uint64_t seed_;
  bool bf16_;
  DispatchPrecision dispatch_;
  ExpertPrecision experts_p_, shared_p_;
  std::vector<float> router_, bias_, s13_, s2_, sgate_;
  std::map<std::int64_t, std::vector<float>> experts_;
};

// Sampled check of a block's last forward against the oracle: `samples` local tokens, their
// routing (ids must match unless the selection margin is a near tie) and output rows.
struct StdCheck {
  int sampled = 0, near_ties = 0, id_mismatches = 0;
  double max_abs_err = 0, max_abs_ref = 0, tolerance = 0;
  bool ok() const { return id_mismatches == 0 && max_abs_err <= tolerance && sampled + near_ties > 0; }
  nlohmann::json to_json() const;
};
StdCheck check_std_block(StdBlock& block, const void* x, const void* out, std::uint64_t seed, int samples);

}  // namespace layerbench::moe
