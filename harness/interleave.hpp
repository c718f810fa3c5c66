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
// before it ran another variant (or the host paused, e.g. for a fit), `prime` untimed stacks of
// the same variant run first. The what-if and the A/B then both measure each variant in the
// state it leaves itself, as a forward of it following another forward would.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace layerbench::harness {

class NeighbourPrimer {
 public:
  explicit NeighbourPrimer(int prime_stacks) : prime_(prime_stacks < 0 ? 0 : prime_stacks) {}
  // Before a timed stack of `variant`: runs `untimed()` prime times when the last stack ran
  // another variant (or none, or a pause came between), then records `variant` as the last.
  // Returns the untimed stacks it ran.
  int before(int variant, const std::function<void()>& untimed);
  // Marks a pause of the device (host work between stacks): the next timed stack is primed.
  void pause() { last_.reset(); }
  // A stack of `variant` ran outside before() (a warm-up stack).
  void ran(int variant) { last_ = variant; }
  int prime_stacks() const { return prime_; }
  std::size_t primed() const { return primed_; }  // untimed stacks run so far

 private:
  int prime_;
  std::optional<int> last_;
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
