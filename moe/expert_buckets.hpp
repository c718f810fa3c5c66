#pragma once
// Grouping of experts by load for batched expert GEMMs: experts of similar row count share one
// batched call whose row dimension is the bucket's capacity (its largest count rounded up to 8).
// Pure host code, shared by the CUDA path and its tests.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace layerbench::moe {

struct ExpertBuckets {
  struct Bucket {
    std::size_t first = 0, count = 0;  // range in `order`
    std::int64_t cap = 0;              // rows per expert slot, a multiple of 8
  };
  std::vector<int> order;            // non-empty experts, by count descending (stable)
  std::vector<Bucket> buckets;
  std::vector<std::int64_t> base;    // per expert: first row of its slot (0 for empty experts)
  std::int64_t rows = 0;             // rows of all slots together
};

// A bucket opens with its largest expert (capacity = that count rounded up to 8) and takes
// the next experts while their count is at least 3/4 of the capacity: padding is at most a
// quarter of a joining expert's slot (a third of its live rows), and at most 7 rows for the
// expert that opened the bucket; one capacity for all experts pads ~3x under skewed routing.
// Slots are disjoint and hold their expert.
ExpertBuckets plan_expert_buckets(std::span<const int> counts);

// One row tile of one expert for the fused expert kernels: rows [row0, row0 + valid) of the
// expert-major input, valid <= kExpertTileRows.
inline constexpr std::int64_t kExpertTileRows = 128;
struct ExpertTile {
  std::int64_t row0;
  int expert;
  int valid;
};
// The Hopper gate/up kernel's wide tiles (three consumer warpgroups; the device-wide expert
// path): a third fewer weight streams per expert than 128-row tiles.
inline constexpr std::int64_t kWideTileRows = 192;
// ceil(count / rows) tiles of at most `rows` rows for each expert of `order`, in that order (an
// expert's tiles adjacent), its rows starting at base[e]. expert_tile_count() sizes `out`.
std::int64_t expert_tile_count(std::span<const int> counts, std::span<const int> order,
                               std::int64_t rows = kExpertTileRows);
void fill_expert_tiles(std::span<const int> counts, std::span<const std::int64_t> base, std::span<const int> order,
                       std::span<ExpertTile> out, std::int64_t rows = kExpertTileRows);

}  // namespace layerbench::moe
