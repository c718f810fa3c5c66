#pragma once
// The local attention of one rank as kernel calls: which query rows meet which key rows, per
// Ring step, per request where masks differ between requests, per document where requests are
// packed. Pure host logic (no device, no communication), so it is tested on its own.
//
// Buffers: the query buffer holds [joint; image region] (front) or [image region; joint] (rear);
// key buffer 0 holds [cached; joint; image superblock] (front) or [cached; image; joint] (rear);
// key buffer 1 is the Ring block received at steps >= 1 (one image superblock).
// A call's key rows are contiguous in one buffer: the valid keys of a query range, coalesced;
// adjacent query rows that meet the same keys (joint and image rows) share one call.
// When every (request, query row) meets exactly one call, calls write the output directly;
// otherwise each call writes its partial output into a slot (calls in one slot never cover the
// same row) and its LSE into its own range, and one merge at the end reads every partial.
#include "attention/kernels.hpp"
#include "attention/workload.hpp"

#include <vector>

namespace layerbench::attention {

enum class RowKind { cached, joint, image };

// Rows [row0, row0 + count) of a buffer hold global rows [global0, global0 + count) of a kind
// (image: global image index; joint/cached: index within the joint/cached tokens).
struct Segment {
  RowKind kind = RowKind::image;
  long long row0 = 0, count = 0, global0 = 0;
};

struct Call {
  int step = 0;            // Ring step (0: key buffer 0)
  long long request = -1;  // -1: every request alike
  long long q0 = 0, nq = 0;
  int key_buffer = 0;      // 0 or 1 (the Ring block)
  long long k0 = 0, nk = 0;
  int slot = 0;            // merged plans: the partial-output slot it writes
  long long lse_row0 = 0;  // merged plans: its LSE starts at lse_row0 * heads (Partial::lse_off)
};

struct LocalPlan {
  std::vector<Call> calls;
  bool direct = true;    // each (request, query row) in exactly one call
  int slots = 0;           // merged plans: partial-output slots (each as large as the output)
  long long lse_rows = 0;  // merged plans: sum over calls of nq x (B for every request, else 1)
  std::vector<Partial> partials;  // merged plans: the merge's view of the calls (lse_off in LSE rows)
  long long calls_per_step(int step) const;
};

struct RankLayout {
  std::vector<Segment> query;  // query buffer
  std::vector<Segment> keys;   // key buffer 0
  long long query_rows = 0;    // Lq
  long long superblock = 0;    // image rows of a Ring block (A * region)
  int ring = 1, ring_rank = 0;
};

// The buffers of SP rank (u, a, r) of topology t under problem p (see the header comment).
RankLayout rank_layout(const Topology& t, const Problem& p, int allgather_rank, int ring_rank);

// Throws Error when some query row would meet no valid key (excluded by check_workload).
LocalPlan plan_local_attention(const Problem& p, const RankLayout& l);

// Running a plan (SpAttention, and the advisor timing one rank's local work on one device).
struct LocalGeometry {
  long long batch = 1, query_rows = 0;
  int heads = 0, kv_heads = 0, head_dim = 0;  // this rank's (slice) heads
  DType dtype = DType::bf16;
  float scale = 1.0f;
};
struct LocalBuffers {
  const void* q = nullptr;             // [Lq, B, Hl, D]
  const void* k[2] = {nullptr, nullptr};  // key buffers 0 and 1 (the Ring block) [*, B, Hkvl, D]
  const void* v[2] = {nullptr, nullptr};
  void* o = nullptr;                   // [Lq, B, Hl, D]
  void* o_part = nullptr;              // merged plans: [slots, Lq, B, Hl, D] partial outputs
  float* lse_part = nullptr;           // merged plans: Hl * lse_rows LSE values
};
// Buffer sizes of a merged plan (0 for a direct one), in elements.
std::size_t partial_elems(const LocalPlan& plan, const LocalGeometry& g);
std::size_t lse_elems(const LocalPlan& plan, const LocalGeometry& g);
// The calls of one step: direct plans write b.o, merged ones their slot and LSE range.
void run_local_step(Kernels& k, const LocalPlan& plan, int step, const LocalGeometry& g, const LocalBuffers& b, Stream s);
// Merged plans: one merge of every partial into b.o (no-op for direct plans).
void end_local_attention(Kernels& k, const LocalPlan& plan, const LocalGeometry& g, const LocalBuffers& b, Stream s);
// The kernel shape of one call (one request of a batch: batch 1 and the full row strides).
AttentionShape call_shape(const Call& c, const LocalGeometry& g);

}  // namespace layerbench::attention
