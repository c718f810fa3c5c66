#pragma once
// The interface every MoE layer implementation publishes to the drivers (profile, what-if,
// A/B, report): its component table — name, role, parent and declared work, once — a way to run
// one component on its own over the layer's persistent buffers, and the whole forward. The
// MAGI-2 multi-head layer (moe/layer.hpp) and the standard expert-parallel block
// (moe/std_block.hpp) implement it; drivers iterate the table instead of naming components.
#include "collectives/device.hpp"
#include "reports/result.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace layerbench::moe {

struct Component {
  std::string name;
  reports::Role role = reports::Role::part;
  std::string parent;        // "" = top level (the total, probes)
  reports::Work work;        // declared once, per call on this rank
  bool host_clock = false;   // it synchronises with the host: time it on the host clock
  std::string kernel_path;   // how it runs on this backend ("" = no kernel of its own)
};

class LayerInterface {
 public:
  virtual ~LayerInterface() = default;
  virtual std::string kind() const = 0;  // "magi2_multi_head" | "standard"
  // In execution order; exactly one component has role total.
  virtual std::vector<Component> components() const = 0;
  // Runs one component of the table on its own (each reads the buffers the previous steps of a
  // forward left). Throws on a name outside the table.
  virtual void run_component(std::string_view name, Stream s) = 0;
  // The whole layer (the table's total) from x to out, both (tokens, hidden) activations.
  virtual void forward(const void* x, void* out, Stream s) = 0;
  virtual Buffer make_activation() const = 0;
  virtual void fill_input(void* x, std::uint64_t seed, Stream s) = 0;
  virtual std::size_t act_bytes() const = 0;
};

}  // namespace layerbench::moe
