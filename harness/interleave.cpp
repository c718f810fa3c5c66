#include "harness/interleave.hpp"

#include <cmath>

namespace layerbench::harness {

double NeighbourPrimer::run(int variant, const std::function<double()>& untimed, const std::function<double()>& timed) {
  if (prime_ > 0 && (!last_ || *last_ != variant)) {
    // Pause or not, the clocks carry what the last stack left: match its length (a time that is
    // not finite asks for no more than the count).
    const double neighbour_ms = std::isfinite(last_ms_) ? last_ms_ : 0;
    double primed_ms = 0;
    for (int ran = 0; ran < max_stacks_per_change && (ran < prime_ || primed_ms < neighbour_ms); ++ran) {
      const double ms = untimed();
      ++primed_;
      if (std::isfinite(ms) && ms > 0)
        primed_ms += ms;
      else if (ran + 1 >= prime_)
        break;  // a stack without a time: the count only
    }
  }
  const double ms = timed();
  last_ = variant;
  last_ms_ = ms;
  return ms;
}

PairTimes run_interleaved_pairs(int warmup_pairs, int max_pairs, int prime_stacks,
                                const std::function<double(bool candidate, bool timed)>& stack,
                                const std::function<bool(const PairTimes&)>& stop) {
  NeighbourPrimer primer(prime_stacks);
  for (int i = 0; i < warmup_pairs; ++i)
    for (const bool candidate : {false, true}) {
      primer.ran(candidate ? 1 : 0, stack(candidate, false));
    }
  PairTimes r;
  for (int i = 0; i < max_pairs; ++i) {
    const bool base_first = i % 2 == 0;
    for (const bool candidate : {!base_first, base_first}) {
      (candidate ? r.cand : r.base)
          .push_back(primer.run(candidate ? 1 : 0, [&] { return stack(candidate, false); },
                                [&] { return stack(candidate, true); }));
    }
    r.order.push_back(base_first ? "AB" : "BA");
    r.primed = primer.primed();
    if (stop && stop(r)) break;
  }
  return r;
}

}  // namespace layerbench::harness
