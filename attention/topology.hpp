#pragma once
// Sequence-parallel attention topologies, one grammar for every (U, R, A) with U*R*A = world:
//   uspU   Ulysses degree U (all-to-all: scatter heads, gather sequence)
//   ringR  Ring degree R (K/V superblocks rotated peer to peer, partial outputs merged by LSE)
//   cpA    AllGather-KV degree A (K/V all-gathered along the sequence)
//   +uaa   uneven heads and sequences under Ulysses (zero heads padded to ceil(H/U)*U)
// Parts in any order, each at most once; the canonical label orders them usp, ring, cp, uaa
// (`cp2+usp2` is `usp2+cp2`, `ring2+usp2` is `usp2+ring2`).
//
// One grid: SP rank p = u + U*(a + A*r). Ulysses groups are contiguous blocks of U ranks,
// AllGather groups stride by U (size A), Ring groups stride by U*A (size R). After the Ulysses
// all-to-all a rank holds region g = a + A*r (S/(A*R) rows); after the K/V all-gather its
// AllGather group holds superblock r (A regions, contiguous); the ring rotates superblocks.
#include <string>
#include <string_view>
#include <vector>

namespace layerbench::attention {

struct Topology {
  std::string label;  // canonical spelling, e.g. "usp2+ring2", "usp4+uaa", "cp4", "ring4"
  int ulysses = 1;    // U
  int ring = 1;       // R
  int allgather = 1;  // A
  bool uaa = false;   // uneven-head padding + uneven sequence split + length exchange

  long long world() const { return static_cast<long long>(ulysses) * ring * allgather; }
  long long regions() const { return static_cast<long long>(ring) * allgather; }  // R*A
  // Heads after UAA padding: ceil(H/U)*U under uaa, H otherwise.
  int padded_heads(int heads) const;
};

// Canonical label of degrees (parts of degree 1 left out; all ones: "usp1").
std::string topology_label(int ulysses, int ring, int allgather, bool uaa);

// Parses one topology; throws UsageError naming the bad spelling.
Topology parse_topology(std::string_view text);
// Parses a comma-separated list (no duplicates, not empty).
std::vector<Topology> parse_topologies(std::string_view list);

// Every (U, R, A) with U*R*A = world, plus U+uaa where U does not divide `heads`: the candidate
// list of the advisor (validity per workload is check_workload's).
std::vector<Topology> all_topologies(int world, int heads);

// Throws UsageError unless the topology fits: U*R*A == world, U divides H (strict mode), the
// sequence splits into R*A equal regions and (strict mode) each region into U equal shards.
void check_topology(const Topology& t, int world, int heads, long long seq);

// Shard lengths of the P = U*R*A sequence-parallel ranks, in SP-rank order. Region g (length
// S/(R*A)) is split among its U Ulysses ranks: evenly in strict mode, the remainder spread over
// the first ranks under uaa.
std::vector<long long> shard_lengths(const Topology& t, long long seq);

}  // namespace layerbench::attention
