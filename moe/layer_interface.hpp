#pragma once
// The interface every MoE layer implementation publishes to the one profile driver
// (bench/moe/driver.cpp: profile, stacks, graphs, what-ifs, A/Bs, report): its component table —
// name, role, parent, declared work, kernel path and what a driver may do with each component,
// once — a way to run one component on its own over the layer's persistent buffers, the whole
// forward, and the hooks that replicate, leave out or delay a component. The MAGI-2 multi-head
// layer (moe/magi2/layer.hpp) and the standard expert-parallel block (moe/standard/std_block.hpp)
// implement it; the driver iterates the table instead of naming components.
#include "collectives/communicator.hpp"
#include "collectives/delay.hpp"
#include "collectives/device.hpp"
#include "moe/dense_ops.hpp"
#include "reports/result.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace layerbench::moe {

// What a driver may do with a component.
//   replicated: run k >= 1 times per call (the replication what-if: each copy reads only its inputs
//     and overwrites its outputs, so k copies leave the result of one);
//   removed: run 0 times (the removal A/B and the what-if's zero copies: its output buffer keeps
//     what it last wrote, which a stack of layers on the same input would have written again);
//   delayed: a device spin at its begin and end edges (the delay what-if), or a host wait where
//     delay_on_host (a component that waits on the host: an injected idle there is a host wait).
struct Allows {
  bool replicated = false, removed = false, delayed = false, delay_on_host = false;
};

struct Component {
  std::string name;
  reports::Role role = reports::Role::part;
  std::string parent;        // "" = top level (the total, probes)
  reports::Work work;        // declared once, per call on this rank
  bool host_clock = false;   // it synchronises with the host: time it on the host clock
  std::string kernel_path;   // how it runs on this backend ("" = no kernel of its own)
  Allows allows = {};
  // The number format its declared FLOPs run in: "" the act type; "fp8-block" or "fp8-rowwise"
  // (e4m3 operands): the driver rates those FLOPs against its FP8 dense reference.
  std::string precision = {};
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
  // One layer of a stack as a model runs it (the stack figures, what-ifs and A/Bs time these);
  // forward() unless the family's stacked layer differs (MAGI-2: the per-layer size exchange).
  virtual void stack_forward(const void* x, void* out, Stream s) { forward(x, out, s); }
  virtual Buffer make_activation() const = 0;
  virtual void fill_input(void* x, std::uint64_t seed, Stream s) = 0;
  virtual std::size_t act_bytes() const = 0;
  virtual Communicator& ep() = 0;
  // The backend's dense primitives (the driver's dense GEMM reference runs on them).
  virtual DenseOps& dense() = 0;

  // Every call of `component`'s step runs its body k times (0: left out), as its Allows permit;
  // one component at a time; set_copies("", 1) restores the layer.
  virtual void set_copies(const std::string& component, int k) = 0;
  // Called at the begin and end edge of every component that allows a delay (not owned;
  // nullptr = none).
  virtual void set_delay_hook(DelayHook* hook) = 0;
  // Host synchronisations made so far by the layer and its primitives: their difference over one
  // forward is what keeps the layer from running ahead of the device and out of a CUDA graph.
  virtual std::int64_t host_syncs() const = 0;
  // Expert tiles (kExpertTileRows rows each, moe/expert_buckets.hpp) of the last forward on this
  // rank: how the expert work of a stack's layers varies with their input.
  virtual double expert_tiles() = 0;
};

// The component of the table with this name, or nullptr.
inline const Component* find_component(const std::vector<Component>& table, std::string_view name) {
  for (const auto& c : table)
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace layerbench::moe
