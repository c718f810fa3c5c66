// The grouped wgmma kernels' launch variant in words (moe/hopper/std_grouped_sm90.cuh): its
// description for the printed header, and the parser of the modifiers a kernel study names.
// Host code only; the kernels and their launches are in moe/hopper/std_grouped_sm90.cu.
#include "common/usage.hpp"
#include "moe/hopper/std_grouped_sm90.cuh"

#include <string>
#include <string_view>

namespace layerbench::moe::cuda {

namespace {

const char* l2_words(L2Priority p) {
  return p == L2Priority::evict_first ? "evict first" : p == L2Priority::evict_last ? "evict last" : "normal";
}

}  // namespace

std::string describe(const StdGroupedVariant& v) {
  return std::string(v.paired ? "paired" : "unpaired") + (v.half_tiles ? ", half tiles" : ", whole tiles") +
         (v.pack_leftovers ? ", pair order" : ", plain order") +
         (!v.deferred_epilogue ? ", epilogue in place"
          : v.spread_epilogue  ? ", deferred epilogue spread over K steps"
                               : ", deferred epilogue") +
         (v.ordered ? ", block-scaled FP8 warpgroups take turns" : v.staggered ? ", FP8 warpgroups staggered" : "") +
         (v.a_l2 != L2Priority::normal ? std::string(", A lines ") + l2_words(v.a_l2) : std::string()) +
         (v.b_l2 != L2Priority::normal ? std::string(", B lines ") + l2_words(v.b_l2) : std::string());
}

StdGroupedVariant parse_grouped_variant(std::string_view modifiers) {
  StdGroupedVariant v;
  while (!modifiers.empty()) {
    const auto cut = modifiers.find('+');
    const std::string_view w = modifiers.substr(0, cut);
    if (w == "paired" || w == "unpaired") v.paired = w == "paired";
    else if (w == "half-tiles" || w == "whole-tiles") v.half_tiles = w == "half-tiles";
    else if (w == "plain-order" || w == "pair-order") v.pack_leftovers = w == "pair-order";
    else if (w == "deferred" || w == "in-place") v.deferred_epilogue = w == "deferred";
    else if (w == "spread" || w == "at-once") v.spread_epilogue = w == "spread";
    else if (w == "staggered" || w == "ordered" || w == "in-step") {
      v.staggered = w == "staggered";
      v.ordered = w == "ordered";
    }
    else if (w.size() > 2 && (w[0] == 'a' || w[0] == 'b') && w[1] == '-' &&
             (w.substr(2) == "evict-first" || w.substr(2) == "evict-last" || w.substr(2) == "evict-normal"))
      (w[0] == 'a' ? v.a_l2 : v.b_l2) = w.substr(2) == "evict-first"  ? L2Priority::evict_first
                                        : w.substr(2) == "evict-last" ? L2Priority::evict_last
                                                                      : L2Priority::normal;
    else
      throw UsageError("grouped wgmma variant '" + std::string(w) +
                       "': expected paired, unpaired, half-tiles, whole-tiles, plain-order, pair-order, deferred, "
                       "in-place, spread, at-once, staggered, ordered, in-step, or a-/b- with evict-first, evict-last or evict-normal, joined "
                       "by '+'");
    modifiers = cut == std::string_view::npos ? std::string_view{} : modifiers.substr(cut + 1);
  }
  return v;
}

}  // namespace layerbench::moe::cuda
