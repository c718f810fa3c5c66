#pragma once
// Sequence-parallel attention topologies: `uspU` (Ulysses degree U), `+uaa` (uneven heads and
// sequences: zero heads padded to ceil(H/U)*U, uneven shard lengths exchanged every forward),
// `cpA` (AllGather-KV degree A) and `uspU+cpA` (the composed grid: Ulysses groups are
// contiguous blocks of U ranks, AllGather groups are strided by U).
#include <string>
#include <string_view>
#include <vector>

namespace layerbench::attention {

struct Topology {
  std::string label;  // canonical spelling, e.g. "usp2+cp2", "usp4+uaa", "cp4"
  int ulysses = 1;    // U
  int allgather = 1;  // A
  bool uaa = false;   // uneven-head padding + uneven sequence split + length exchange

  long long world() const { return static_cast<long long>(ulysses) * allgather; }
  // Heads after UAA padding: ceil(H/U)*U under uaa, H otherwise.
  int padded_heads(int heads) const;
};

// Parses one topology; throws UsageError naming the bad spelling.
Topology parse_topology(std::string_view text);
// Parses a comma-separated list (no duplicates, not empty).
std::vector<Topology> parse_topologies(std::string_view list);

// Throws UsageError unless the topology fits: U*A == world, U divides H (strict mode), the
// sequence splits into A equal regions and (strict mode) each region into U equal shards.
void check_topology(const Topology& t, int world, int heads, long long seq);

// Shard lengths of the P = U*A sequence-parallel ranks, in SP-rank order. Region a (length
// S/A) is split among its U Ulysses ranks: evenly in strict mode, the remainder spread over the
// first ranks under uaa.
std::vector<long long> shard_lengths(const Topology& t, long long seq);

}  // namespace layerbench::attention
