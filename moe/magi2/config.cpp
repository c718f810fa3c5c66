#include "moe/magi2/config.hpp"

#include "collectives/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace layerbench::moe {

Layout parse_layout(const std::string& s) {
  if (s == "sp") return Layout::sp;
  if (s == "tp") return Layout::tp;
  throw UsageError(fmt::format("--layout must be sp or tp, got '{}'", s));
}

Plan make_plan(const Geometry& g, Layout layout, int rank, int world,
               const std::vector<std::int64_t>& splits) {
  Plan p;
  p.layout = layout;
  p.rank = rank;
  p.world = world;
  p.hidden = g.hidden;
  p.heads = g.heads;
  p.d_head = g.d_head();
  p.experts = g.experts;
  p.topk = g.topk;
  p.inter = g.intermediate;
  p.scale = g.scale;
  if (layout == Layout::sp) {
    LB_CHECK(static_cast<int>(splits.size()) == world, "one split per rank");
    p.heads_padded = (g.heads + world - 1) / world * world;
    p.heads_local = p.heads_padded / world;
    p.splits = splits;
    p.local_tokens = splits[static_cast<std::size_t>(rank)];
    p.token0 = std::accumulate(splits.begin(), splits.begin() + rank, std::int64_t{0});
    p.global_tokens = std::accumulate(splits.begin(), splits.end(), std::int64_t{0});
    p.moe_tokens = p.global_tokens;
    p.inter_local = g.intermediate;
    p.hidden_in_local = g.hidden;
  } else {
    LB_CHECK(g.heads % world == 0, "TP needs heads divisible by the world");
    LB_CHECK(splits.size() == 1, "TP: one replicated token count");
    p.heads_padded = g.heads;
    p.heads_local = g.heads / world;
    p.splits = splits;
    p.local_tokens = splits[0];
    p.token0 = 0;
    p.global_tokens = splits[0];
    p.moe_tokens = splits[0];
    p.inter_local = g.intermediate / world;
    p.hidden_in_local = g.hidden / world;
  }
  p.head0 = rank * p.heads_local;
  p.heads_valid = std::clamp<std::int64_t>(g.heads - p.head0, 0, p.heads_local);
  return p;
}

int modality_of(std::int64_t token, std::int64_t total) {
  const std::int64_t span = std::max<std::int64_t>(total / 20, 1);
  if (token < span) return kText;
  if (token >= total / 2 && token < total / 2 + span) return kAudio;
  return kVideo;
}

std::vector<Segment> modality_segments(std::int64_t begin, std::int64_t count, std::int64_t total) {
  std::vector<Segment> out;
  for (std::int64_t i = 0; i < count; ++i) {
    const int m = modality_of(begin + i, total);
    if (out.empty() || out.back().modality != m)
      out.push_back({i, 1, m});
    else
      ++out.back().count;
  }
  return out;
}

}  // namespace layerbench::moe
