#pragma once
// Neighbouring stacks in interleaved measurements (the what-if rounds, the in-process A/B pairs).
//
// On a power-capped GPU a stack's time depends on the stack before it: the clocks the power
// controller settled on for the previous stack's work carry into the next one. Measured on an
// H200 (8-layer MoE stacks of ~60 ms, `results/moe/2026-12-02-h200-e`, `-f`): routing is a
// low-power kernel, and a stack ran 0.7-0.9 ms faster per extra copy of routing in the stack
// before it. The what-if rounds visit the copy counts in rotated order, so the stack without
// routing mostly followed stacks with 1 or 3 copies and the stack with one copy mostly followed
// 0 or 2: the removal step read 5.2 ms where the A/B, whose arms follow each arm equally often,
// read 4.1; and the two measure different mixtures of neighbours.
//
// The rule: every timed stack follows directly on a stack of its own variant. When the stack
// before it ran another variant (or the host paused, e.g. for a fit), untimed stacks of the same
// variant run first: at least `prime` of them, and for at least as long as that last stack of the
// other variant ran. One stack is not enough where neighbours differ in length: on an H100 at its
// cap (results/moe/2026-12-07-h100-i) a 6 ms stack took 5.80-5.91 ms after a 39 ms stack and
// 6.03-6.45 ms after a 276 ms one, each primed by one 6 ms stack, so a removal step measured among
// long stacks read 0.8% under the removal A/B. The what-if and the A/B then both measure each
// variant in the state it leaves itself, as a forward of it following another forward would.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace layerbench::harness {

class NeighbourPrimer {
 public:
  // At most this many untimed stacks per change (a stack far shorter than its neighbour).
  static constexpr int max_stacks_per_change = 256;
  explicit NeighbourPrimer(int prime_stacks) : prime_(prime_stacks < 0 ? 0 : prime_stacks) {}
  // One timed stack of `variant`: where the last stack ran another variant (or none, or a pause
  // came between), first runs `untimed()` (which returns its ms) prime times and until the untimed
  // stacks have run as long as that last stack did (at most max_stacks_per_change); then `timed()`.
  // Returns timed()'s ms. With prime 0 nothing is primed.
  double run(int variant, const std::function<double()>& untimed, const std::function<double()>& timed);
  // Marks a pause of the device (host work between stacks): the next timed stack is primed.
  void pause() { last_.reset(); }
  // A stack of `variant` ran outside run() (a warm-up stack) and took `ms`.
  void ran(int variant, double ms) {
    last_ = variant;
    last_ms_ = ms;
  }
  int prime_stacks() const { return prime_; }
  std::size_t primed() const { return primed_; }  // untimed stacks run so far

 private:
  int prime_;
  std::optional<int> last_;
  double last_ms_ = 0;  // the last stack's time, whichever ran it
  std::size_t primed_ = 0;
};

// The interleaved pairs of an in-process A/B, order AB, BA, AB, ... (alternating between pairs,
// so drift and the order within a pair cancel), `warmup` untimed pairs first. Every timed stack
// follows one of its own arm (NeighbourPrimer with `prime_stacks`; 0 = off). `stack(candidate,
// timed)` runs one stack and returns its time in ms (collective); `stop` (may be empty) is asked
// after each pair and ends the pairs early when it returns true.
struct PairTimes {
  std::vector<double> base, cand;  // ms, by pair
  std::vector<std::string> order;  // "AB" (base first) or "BA", by pair
  std::size_t primed = 0;          // untimed stacks run to give a timed stack a neighbour of its own arm
};
PairTimes run_interleaved_pairs(int warmup_pairs, int max_pairs, int prime_stacks,
                                const std::function<double(bool candidate, bool timed)>& stack,
                                const std::function<bool(const PairTimes&)>& stop = {});

}  // namespace layerbench::harness
