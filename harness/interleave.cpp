#include "harness/interleave.hpp"

namespace layerbench::harness {

int NeighbourPrimer::before(int variant, const std::function<void()>& untimed) {
  int ran = 0;
  if (!last_ || *last_ != variant)
    for (; ran < prime_; ++ran) untimed();
  primed_ += static_cast<std::size_t>(ran);
  last_ = variant;
  return ran;
}

PairTimes run_interleaved_pairs(int warmup_pairs, int max_pairs, int prime_stacks,
                                const std::function<double(bool candidate, bool timed)>& stack,
                                const std::function<bool(const PairTimes&)>& stop) {
  NeighbourPrimer primer(prime_stacks);
  for (int i = 0; i < warmup_pairs; ++i)
    for (const bool candidate : {false, true}) {
      (void)stack(candidate, false);
      primer.ran(candidate ? 1 : 0);
    }
  PairTimes r;
  for (int i = 0; i < max_pairs; ++i) {
    const bool base_first = i % 2 == 0;
    for (const bool candidate : {!base_first, base_first}) {
      primer.before(candidate ? 1 : 0, [&] { (void)stack(candidate, false); });
      (candidate ? r.cand : r.base).push_back(stack(candidate, true));
    }
    r.order.push_back(base_first ? "AB" : "BA");
    r.primed = primer.primed();
    if (stop && stop(r)) break;
  }
  return r;
}

}  // namespace layerbench::harness
