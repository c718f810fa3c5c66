#pragma once
// Sampled reference of the routed experts at the layer's own geometry: for a few (token, head)
// pairs it recomputes the routing and the expert outputs on the CPU (fp32) from the
// backend's own input row and the chosen experts' weights (only those are downloaded), and
// compares them with the backend's output rows. This checks the timed expert path (padded,
// bucketed or fused GEMMs, permutation, SwiGLU7, combine) at the real shape before timing,
// which the small-geometry tests cannot. The CPU math is the host backend's own (route_row,
// add_expert_row in moe/magi2/ops.hpp). Pure host code over the Device interface.
#include "collectives/device.hpp"
#include "moe/magi2/ops.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>

namespace layerbench::moe {

struct ExpertCheck {
  int sampled = 0;             // (token, head) pairs compared
  int near_ties = 0;           // pairs skipped: top-k boundary closer than the router's rounding
  double max_abs_err = 0;      // over the compared rows
  double max_abs_ref = 0;      // largest |reference| over the compared rows
  double tolerance = 0;        // max_abs_err must not exceed this
  bool ok() const { return max_abs_err <= tolerance; }
  nlohmann::json to_json() const;
};

// `r` must describe the last route() + experts() of the layer, completed (synchronised).
// act: the backend's activation type (bf16 on cuda, fp32 on host).
ExpertCheck check_routed_experts(Device& dev, const RoutedArgs& r, DType act, std::uint64_t seed, int samples);

}  // namespace layerbench::moe
