#include "attention/plan.hpp"

#include "collectives/error.hpp"

#include <algorithm>

namespace layerbench::attention {

long long LocalPlan::calls_per_step(int step) const {
  return std::count_if(calls.begin(), calls.end(), [&](const Call& c) { return c.step == step; });
}

RankLayout rank_layout(const Topology& t, const Problem& p, int allgather_rank, int ring_rank) {
  RankLayout l;
  const long long region = p.seq / t.regions(), lt = p.text_tokens, lc = p.cached_kv;
  const long long g = allgather_rank + static_cast<long long>(t.allgather) * ring_rank;  // region index
  l.superblock = region * t.allgather;
  l.ring = t.ring;
  l.ring_rank = ring_rank;
  l.query_rows = lt + region;
  const bool front = p.joint == JointPosition::front;
  if (lt > 0) l.query.push_back({RowKind::joint, front ? 0 : region, lt, 0});
  l.query.push_back({RowKind::image, front ? lt : 0, region, g * region});
  if (lc > 0) l.keys.push_back({RowKind::cached, 0, lc, 0});
  const long long image_row = lc + (front ? lt : 0);
  if (lt > 0) l.keys.push_back({RowKind::joint, front ? lc : lc + l.superblock, lt, 0});
  l.keys.push_back({RowKind::image, image_row, l.superblock, ring_rank * l.superblock});
  std::sort(l.query.begin(), l.query.end(), [](const Segment& a, const Segment& b) { return a.row0 < b.row0; });
  std::sort(l.keys.begin(), l.keys.end(), [](const Segment& a, const Segment& b) { return a.row0 < b.row0; });
  return l;
}

namespace {

struct Interval {
  long long lo, hi;  // buffer rows
};

// Valid key rows of one key segment for request b and (packed) the query's document [d0, d1).
void valid_keys(const Problem& p, const Segment& k, long long b, long long d0, long long d1,
                std::vector<Interval>& out) {
  long long lo = k.global0, hi = k.global0 + k.count;  // global rows of the kind
  if (k.kind == RowKind::joint) hi = std::min(hi, p.joint_valid_of(b < 0 ? 0 : b));
  if (k.kind == RowKind::image) {
    hi = std::min(hi, p.image_valid_of(b < 0 ? 0 : b));
    lo = std::max(lo, d0);
    hi = std::min(hi, d1);
  }
  if (hi > lo) out.push_back({k.row0 + lo - k.global0, k.row0 + hi - k.global0});
}

// Calls from index `first` on belong to the same step and request as the new ones.
void add_calls(const Problem& p, const std::vector<Segment>& keys, int step, int buffer, long long b,
               long long q0, long long nq, long long d0, long long d1, std::size_t first, LocalPlan& plan) {
  std::vector<Interval> iv;
  for (const auto& k : keys) valid_keys(p, k, b, d0, d1, iv);
  std::sort(iv.begin(), iv.end(), [](const Interval& x, const Interval& y) { return x.lo < y.lo; });
  std::vector<Interval> merged;
  for (const auto& i : iv) {
    if (!merged.empty() && merged.back().hi == i.lo)
      merged.back().hi = i.hi;
    else
      merged.push_back(i);
  }
  for (const auto& m : merged) {
    // Query rows right after an earlier call's rows (joint then image, or image then joint) that
    // meet the same keys extend that call: one kernel instead of a short one beside a long one.
    auto same = std::find_if(plan.calls.begin() + static_cast<std::ptrdiff_t>(first), plan.calls.end(), [&](const Call& c) {
      return c.key_buffer == buffer && c.k0 == m.lo && c.nk == m.hi - m.lo && c.q0 + c.nq == q0;
    });
    if (same != plan.calls.end())
      same->nq += nq;
    else
      plan.calls.push_back({step, b, q0, nq, buffer, m.lo, m.hi - m.lo});
  }
}

bool overlaps(const Call& a, const Call& b) {
  const bool same_request = a.request < 0 || b.request < 0 || a.request == b.request;
  return same_request && a.q0 < b.q0 + b.nq && b.q0 < a.q0 + a.nq;
}

// Merged plans: slots (greedy: the first slot none of whose calls covers a row of this one) and
// LSE ranges, and the merge's list of partials.
void assign_partials(const Problem& p, LocalPlan& plan) {
  plan.slots = 0;
  plan.lse_rows = 0;
  plan.partials.clear();
  for (std::size_t i = 0; i < plan.calls.size(); ++i) {
    Call& c = plan.calls[i];
    int slot = 0;
    const auto earlier = plan.calls.begin() + static_cast<std::ptrdiff_t>(i);
    while (std::any_of(plan.calls.begin(), earlier, [&](const Call& o) { return o.slot == slot && overlaps(o, c); }))
      ++slot;
    c.slot = slot;
    plan.slots = std::max(plan.slots, slot + 1);
    c.lse_row0 = plan.lse_rows;
    plan.lse_rows += c.nq * (c.request < 0 ? p.batch : 1);
    plan.partials.push_back({c.q0, c.nq, c.request, c.lse_row0, c.slot});
  }
}

}  // namespace

LocalPlan plan_local_attention(const Problem& p, const RankLayout& l) {
  LocalPlan plan;
  const bool per_request = p.masked();
  const long long requests = per_request ? p.batch : 1;
  for (int step = 0; step < l.ring; ++step) {
    std::vector<Segment> keys;
    if (step == 0) {
      keys = l.keys;
    } else {  // the Ring block: superblock (r - step) mod R, alone in buffer 1
      const long long owner = ((l.ring_rank - step) % l.ring + l.ring) % l.ring;
      keys.push_back({RowKind::image, 0, l.superblock, owner * l.superblock});
    }
    for (long long rq = 0; rq < requests; ++rq) {
      const long long b = per_request ? rq : -1;
      const std::size_t first = plan.calls.size();
      for (const auto& q : l.query) {
        if (q.kind == RowKind::image && p.packed()) {
          // The seed's remap: local query documents of this rank's span, one entry per request.
          const auto local = remap_cu_seqlens(p.cu_seqlens, q.global0, q.global0 + q.count);
          for (std::size_t d = 0; d + 1 < local.size(); ++d)
            if (local[d + 1] > local[d])
              add_calls(p, keys, step, step == 0 ? 0 : 1, b, q.row0 + local[d], local[d + 1] - local[d],
                        p.cu_seqlens[d], p.cu_seqlens[d + 1], first, plan);
        } else {
          add_calls(p, keys, step, step == 0 ? 0 : 1, b, q.row0, q.count, 0, p.seq, first, plan);
        }
      }
    }
  }
  // Coverage: each (request, row) must meet at least one call; exactly one allows direct writes.
  // Checked on the calls' row intervals (sorted per request), not row by row: the plan of a
  // sequence of 2^31 rows costs its calls, not its rows.
  std::vector<std::pair<long long, long long>> spans;  // (request * query_rows + q0, end)
  spans.reserve(plan.calls.size());
  for (const auto& c : plan.calls) {
    const long long base = (c.request < 0 ? 0 : c.request) * l.query_rows;
    if (c.nq > 0) spans.emplace_back(base + c.q0, base + c.q0 + c.nq);
  }
  std::sort(spans.begin(), spans.end());
  long long covered = 0;  // every row below it meets a call
  for (const auto& [b, e] : spans) {
    LB_CHECK(b <= covered, "a query row meets no valid key (workload validation missed a case)");
    if (b < covered) plan.direct = false;  // a row met by two calls
    covered = std::max(covered, e);
  }
  LB_CHECK(covered >= requests * l.query_rows, "a query row meets no valid key (workload validation missed a case)");
  if (!plan.direct) assign_partials(p, plan);
  return plan;
}

AttentionShape call_shape(const Call& c, const LocalGeometry& g) {
  AttentionShape a{c.request < 0 ? g.batch : 1, c.nq, c.nk, g.heads, g.head_dim, g.scale};
  a.kv_heads = g.kv_heads;
  a.q_row = g.batch * g.heads * g.head_dim;
  a.kv_row = g.batch * g.kv_heads * g.head_dim;
  return a;
}

std::size_t partial_elems(const LocalPlan& plan, const LocalGeometry& g) {
  if (plan.direct) return 0;
  return static_cast<std::size_t>(plan.slots * g.query_rows * g.batch * g.heads * g.head_dim);
}

std::size_t lse_elems(const LocalPlan& plan, const LocalGeometry& g) {
  return plan.direct ? 0 : static_cast<std::size_t>(plan.lse_rows * g.heads);
}

void run_local_step(Kernels& k, const LocalPlan& plan, int step, const LocalGeometry& g, const LocalBuffers& b,
                    Stream s) {
  const std::size_t e = dtype_size(g.dtype);
  const std::size_t slot_bytes = static_cast<std::size_t>(g.query_rows * g.batch * g.heads * g.head_dim) * e;
  for (const auto& c : plan.calls) {
    if (c.step != step) continue;
    const long long r = c.request < 0 ? 0 : c.request;
    const std::size_t q_off = static_cast<std::size_t>((c.q0 * g.batch + r) * g.heads * g.head_dim) * e;
    const std::size_t k_off = static_cast<std::size_t>((c.k0 * g.batch + r) * g.kv_heads * g.head_dim) * e;
    const auto* q = static_cast<const unsigned char*>(b.q) + q_off;
    const auto* kp = static_cast<const unsigned char*>(b.k[c.key_buffer]) + k_off;
    const auto* vp = static_cast<const unsigned char*>(b.v[c.key_buffer]) + k_off;
    const AttentionShape a = call_shape(c, g);
    if (plan.direct)
      k.attention(q, kp, vp, static_cast<unsigned char*>(b.o) + q_off, a, s, nullptr);
    else
      k.attention(q, kp, vp, static_cast<unsigned char*>(b.o_part) + static_cast<std::size_t>(c.slot) * slot_bytes + q_off,
                  a, s, b.lse_part + c.lse_row0 * g.heads);
  }
}

void end_local_attention(Kernels& k, const LocalPlan& plan, const LocalGeometry& g, const LocalBuffers& b, Stream s) {
  if (!plan.direct) k.merge(b.o_part, b.lse_part, plan.partials, b.o, {g.query_rows, g.batch, g.heads, g.head_dim}, s);
}

}  // namespace layerbench::attention
