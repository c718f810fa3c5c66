#pragma once
// Process grids: a world of P = inner * outer ranks split two ways.
//   inner groups: contiguous blocks of `inner` ranks   {0..inner-1}, {inner..2*inner-1}, ...
//   outer groups: ranks strided by `inner`             {0, inner, 2*inner, ...}, {1, 1+inner, ...}
// Ulysses x AllGather-KV: Ulysses = inner (U), AllGather = outer (A).
// MoE TP x SP: TP = inner (contiguous, like tensor-parallel groups), SP = outer (strided).
// Every inner group meets every outer group in exactly one rank.
#include <memory>
#include <stdexcept>
#include <vector>

namespace layerbench {

class Communicator;

struct GridLayout {
  int inner = 1;  // size of a contiguous group
  int outer = 1;  // number of contiguous groups = size of a strided group

  // Throws std::invalid_argument unless inner, outer >= 1 and inner * outer == world.
  static GridLayout make(int world, int inner, int outer);

  int world() const { return inner * outer; }
  int inner_group(int rank) const { return rank / inner; }   // which contiguous block
  int inner_rank(int rank) const { return rank % inner; }    // position inside it
  int outer_group(int rank) const { return rank % inner; }   // which strided group
  int outer_rank(int rank) const { return rank / inner; }    // position inside it
  std::vector<int> inner_members(int group) const;           // contiguous block `group`
  std::vector<int> outer_members(int group) const;           // strided group `group`
};

// The two sub-communicators of a grid, built by splitting `world`.
struct GridComms {
  GridLayout layout;
  std::unique_ptr<Communicator> inner;  // contiguous groups (Ulysses / TP)
  std::unique_ptr<Communicator> outer;  // strided groups (AllGather / SP)
};
GridComms make_grid(Communicator& world, int inner, int outer);

// Three levels: rank p = i + inner * (m + middle * o). Inner groups are contiguous blocks of
// `inner` ranks (same m, o), middle groups stride by `inner` (same i, o; size `middle`), outer
// groups stride by inner * middle (same i, m; size `outer`). Sequence-parallel attention:
// Ulysses = inner, AllGather-KV = middle, Ring = outer. With outer = 1 it is make_grid.
struct Grid3Comms {
  std::unique_ptr<Communicator> inner, middle, outer;
};
// Throws std::invalid_argument unless the degrees are >= 1 and multiply to the world size.
Grid3Comms make_grid3(Communicator& world, int inner, int middle, int outer);

}  // namespace layerbench
