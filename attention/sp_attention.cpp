#include "attention/sp_attention.hpp"

#include "collectives/error.hpp"

#include <cmath>
#include <numeric>
#include <set>
#include <tuple>

namespace layerbench::attention {

SpAttention::SpAttention(const SpGroups& g, const Topology& t, const Problem& p, Kernels& kernels, int sp_rank)
    : inner_(g.ulysses), outer_(g.allgather), ring_(g.ring), topo_(t), prob_(p), k_(kernels) {
  LB_CHECK(inner_.size() == t.ulysses && outer_.size() == t.allgather && ring_.size() == t.ring,
           "grid does not match topology");
  hpad_ = t.padded_heads(p.heads);
  hl_ = hpad_ / t.ulysses;
  hkvl_ = (p.kv() == p.heads ? hpad_ : p.kv()) / t.ulysses;
  region_ = p.seq / t.regions();
  const auto shards = shard_lengths(t, p.seq);
  shard_len_ = shards[static_cast<std::size_t>(sp_rank)];
  shard_off_ = std::accumulate(shards.begin(), shards.begin() + sp_rank, 0LL);
  const int group = sp_rank / t.ulysses;
  seq_lens_.assign(shards.begin() + group * t.ulysses, shards.begin() + (group + 1) * t.ulysses);
  set_counts(seq_lens_);

  layout_ = rank_layout(t, p, outer_.rank(), ring_.rank());
  plan_ = plan_local_attention(p, layout_);
  const long long lt = p.text_tokens, lc = p.cached_kv, sb = layout_.superblock;
  const bool front = p.joint == JointPosition::front;
  qi0_ = front ? lt : 0;
  qj0_ = front ? 0 : region_;
  ki0_ = lc + (front ? lt : 0);
  kj0_ = front ? lc : lc + sb;
  zero_copy_ = t.ulysses == 1 && t.ring == 1 && p.batch == 1 && lt == 0 && lc == 0 && plan_.direct;

  Device& dev = inner_.device();
  const std::size_t e = dtype_size(p.dtype);
  const long long u = t.ulysses, lq = layout_.query_rows;
  const int kv = p.kv();
  auto alloc = [&](std::size_t n, std::size_t bytes) { return dev.alloc(std::max<std::size_t>(n, 1) * bytes); };
  in_[0] = alloc(elems(shard_len_, p.heads), e);
  for (int i = 1; i < 3; ++i) in_[i] = alloc(elems(shard_len_, kv), e);
  if (lt > 0) {
    joint_[0] = alloc(elems(lt, p.heads), e);
    for (int i = 1; i < 3; ++i) joint_[i] = alloc(elems(lt, kv), e);
    joint_out_ = alloc(elems(lt, p.heads), e);
    if (u > 1) joint_gather_ = alloc(elems(u * lt, hl_), e);
  }
  if (lc > 0)
    for (auto& b : cached_) b = alloc(elems(lc, kv), e);
  if (u > 1) {
    send_[0] = alloc(elems(u * shard_len_, hl_), e);
    for (int i = 1; i < 3; ++i) send_[i] = alloc(elems(u * shard_len_, hkvl_), e);
    o_recv_ = alloc(elems(u * shard_len_, hl_), e);
  }
  out_ = alloc(elems(shard_len_, p.heads), e);
  if (!zero_copy_) {
    q_full_ = alloc(elems(lq, hl_), e);
    o_full_ = alloc(elems(lq, hl_), e);
  }
  if (!plan_.direct) {  // every call's partial output and LSE, merged once after the last step
    o_part_ = alloc(partial_elems(plan_, geometry()), e);
    lse_part_ = alloc(lse_elems(plan_, geometry()), sizeof(float));
  }
  if (t.allgather > 1)
    for (auto& b : kv_region_) b = alloc(elems(region_, hkvl_), e);
  if (t.allgather > 1 || !zero_copy_)
    for (auto& b : kv_full_) b = alloc(elems(lc + lt + sb, hkvl_), e);
  if (t.ring > 1)
    for (auto& pair : ring_buf_)
      for (auto& b : pair) b = alloc(elems(sb, hkvl_), e);
}

unsigned char* SpAttention::rows_at(const Buffer& b, long long rows, int heads) const {
  return b.as<unsigned char>() + elems(rows, heads) * dtype_size(prob_.dtype);
}

void SpAttention::set_counts(const std::vector<long long>& seq_lens) {
  const int u = topo_.ulysses;
  const int heads[2] = {hl_, hkvl_};
  for (int x = 0; x < 2; ++x) {
    send_counts_[x].assign(static_cast<std::size_t>(u), elems(shard_len_, heads[x]));
    send_displs_[x].resize(static_cast<std::size_t>(u));
    recv_counts_[x].resize(static_cast<std::size_t>(u));
    recv_displs_[x].resize(static_cast<std::size_t>(u));
    std::size_t off = 0;
    for (int j = 0; j < u; ++j) {
      const auto jj = static_cast<std::size_t>(j);
      send_displs_[x][jj] = jj * send_counts_[x][0];
      recv_counts_[x][jj] = elems(seq_lens[jj], heads[x]);
      recv_displs_[x][jj] = off;
      off += recv_counts_[x][jj];
    }
    LB_CHECK(off == elems(region_, heads[x]), "Ulysses group shard lengths do not add up to the region");
  }
}

AttentionShape SpAttention::attention_shape() const {
  AttentionShape a{prob_.batch, layout_.query_rows,
                   prob_.cached_kv + prob_.text_tokens + prob_.seq, hl_, prob_.head_dim,
                   static_cast<float>(1.0 / std::sqrt(static_cast<double>(prob_.head_dim)))};
  a.kv_heads = hkvl_;
  return a;
}

double SpAttention::attention_flops() const {
  double f = 0;
  for (const auto& c : plan_.calls)
    f += 4.0 * static_cast<double>(c.nq) * static_cast<double>(c.nk) * hl_ * prob_.head_dim *
         static_cast<double>(c.request < 0 ? prob_.batch : 1);
  return f;
}

void SpAttention::length_exchange() {
  if (!has_length_exchange()) return;
  edge("length_exchange", Edge::begin, inner_.device().compute_stream());
  // What UAA pays every forward: the group's shard lengths are not known statically.
  const auto lens = inner_.scalar_exchange(shard_len_);
  seq_lens_.assign(lens.begin(), lens.end());
  set_counts(seq_lens_);
  edge("length_exchange", Edge::end, inner_.device().compute_stream());
}

void SpAttention::pack_inputs(Stream s) {
  if (zero_copy_) return;
  edge("pad_pack", Edge::begin, s);
  const long long lt = prob_.text_tokens, lc = prob_.cached_kv;
  const int kv = prob_.kv();
  const SliceShape q_shard{prob_.batch, shard_len_, prob_.heads, prob_.head_dim, hl_};
  const SliceShape kv_shard{prob_.batch, shard_len_, kv, prob_.head_dim, hkvl_};
  if (topo_.ulysses > 1) {
    k_.pack_heads(in_[0].data(), send_[0].data(), q_shard, 0, topo_.ulysses, s);
    for (int i = 1; i < 3; ++i) k_.pack_heads(in_[i].data(), send_[i].data(), kv_shard, 0, topo_.ulysses, s);
  } else {
    // No all-to-all: pack straight into where the all-to-all would have delivered.
    k_.pack_heads(in_[0].data(), rows_at(q_full_, qi0_, hl_), q_shard, 0, 1, s);
    for (int i = 0; i < 2; ++i) {
      void* dst = topo_.allgather > 1 ? kv_region_[i].data() : rows_at(kv_full_[i], ki0_, hkvl_);
      k_.pack_heads(in_[i + 1].data(), dst, kv_shard, 0, 1, s);
    }
  }
  // Joint tokens and the cached prefix: this rank's (padded) head slice, attached after the gather.
  const int u = inner_.rank();
  if (lt > 0) {
    k_.pack_heads(joint_[0].data(), rows_at(q_full_, qj0_, hl_), {prob_.batch, lt, prob_.heads, prob_.head_dim, hl_},
                  u, 1, s);
    for (int i = 0; i < 2; ++i)
      k_.pack_heads(joint_[i + 1].data(), rows_at(kv_full_[i], kj0_, hkvl_),
                    {prob_.batch, lt, kv, prob_.head_dim, hkvl_}, u, 1, s);
  }
  if (lc > 0)
    for (int i = 0; i < 2; ++i)
      k_.pack_heads(cached_[i].data(), kv_full_[i].data(), {prob_.batch, lc, kv, prob_.head_dim, hkvl_}, u, 1, s);
  edge("pad_pack", Edge::end, s);
}

void SpAttention::qkv_all_to_all(Stream s) {
  if (topo_.ulysses == 1) return;
  edge("qkv_all_to_all", Edge::begin, s);
  const DType t = prob_.dtype;
  void* dst[3] = {rows_at(q_full_, qi0_, hl_),
                  topo_.allgather > 1 ? kv_region_[0].data() : rows_at(kv_full_[0], ki0_, hkvl_),
                  topo_.allgather > 1 ? kv_region_[1].data() : rows_at(kv_full_[1], ki0_, hkvl_)};
  // send_[i]: [U, Sl, B, Hl, D] -> dst: [R, B, Hl, D], peers' shards in sequence order.
  for (int i = 0; i < 3; ++i) {
    const int x = i == 0 ? 0 : 1;
    inner_.all_to_allv(send_[i].data(), send_counts_[x], send_displs_[x], dst[i], recv_counts_[x],
                       recv_displs_[x], t, s);
  }
  edge("qkv_all_to_all", Edge::end, s);
}

void SpAttention::kv_all_gather(Stream s) {
  if (topo_.allgather == 1) return;
  edge("kv_all_gather", Edge::begin, s);
  const void* src[2] = {zero_copy_ ? in_[1].data() : kv_region_[0].data(),
                        zero_copy_ ? in_[2].data() : kv_region_[1].data()};
  // [R, B, Hkvl, D] from each of A ranks -> superblock [A*R, B, Hkvl, D]: allgather rank a
  // holds region a + A*r, so NCCL's rank-ordered concatenation is the superblock's order.
  for (int i = 0; i < 2; ++i)
    outer_.all_gather(src[i], rows_at(kv_full_[i], ki0_, hkvl_), elems(region_, hkvl_), prob_.dtype, s);
  edge("kv_all_gather", Edge::end, s);
}

const void* SpAttention::ring_block(int i, int step) const {
  if (step == 0) return rows_at(kv_full_[i], ki0_, hkvl_);
  return ring_buf_[i][(step - 1) % 2].data();
}

void SpAttention::ring_transfer(int step, Stream s, std::vector<std::unique_ptr<Handle>>& pending) {
  // Step j sends the block it holds to ring rank r+1 and receives the next from r-1.
  const int r = ring_.rank(), n = topo_.ring;
  for (int i = 0; i < 2; ++i)
    pending.push_back(ring_.sendrecv_async(ring_block(i, step), (r + 1) % n, ring_buf_[i][step % 2].data(),
                                           (r - 1 + n) % n, elems(layout_.superblock, hkvl_), prob_.dtype, s));
}

void SpAttention::ring_p2p(Stream s) {
  if (topo_.ring == 1) return;
  edge("ring_p2p", Edge::begin, s);
  for (int step = 0; step + 1 < topo_.ring; ++step) {
    std::vector<std::unique_ptr<Handle>> pending;
    ring_transfer(step, s, pending);
    for (auto& h : pending) h->wait(s);
  }
  edge("ring_p2p", Edge::end, s);
}

LocalGeometry SpAttention::geometry() const {
  return {prob_.batch, layout_.query_rows, hl_, hkvl_, prob_.head_dim, prob_.dtype, attention_shape().scale};
}

void SpAttention::attention(Stream s, bool ring_transfers) {
  edge("attention", Edge::begin, s);
  const bool in_place = zero_copy_ && topo_.allgather == 1;
  LocalBuffers b;
  b.q = zero_copy_ ? in_[0].data() : q_full_.data();
  b.o = zero_copy_ ? out_.data() : o_full_.data();
  b.o_part = o_part_.data();
  b.lse_part = lse_part_.as<float>();
  const LocalGeometry g = geometry();
  for (int step = 0; step < topo_.ring; ++step) {
    std::vector<std::unique_ptr<Handle>> pending;
    if (ring_transfers && step + 1 < topo_.ring) ring_transfer(step, s, pending);  // overlaps this step
    for (int i = 0; i < 2; ++i) {
      const void* base = step > 0 ? ring_block(i, step) : (in_place ? in_[i + 1].data() : kv_full_[i].data());
      (i == 0 ? b.k : b.v)[step > 0 ? 1 : 0] = base;  // the Ring block's rows start at 0
    }
    run_local_step(k_, plan_, step, g, b, s);
    for (auto& h : pending) h->wait(s);
  }
  end_local_attention(k_, plan_, g, b, s);
  edge("attention", Edge::end, s);
}

void SpAttention::prepare() {
  std::set<std::tuple<long long, long long, long long>> seen;
  for (const auto& c : plan_.calls)
    if (seen.insert({c.request < 0 ? prob_.batch : 1, c.nq, c.nk}).second) k_.prepare(call_shape(c, geometry()), !plan_.direct);
}

const std::vector<std::string>& SpAttention::hook_points() {
  static const std::vector<std::string> names = {"length_exchange", "pad_pack",  "qkv_all_to_all", "kv_all_gather",
                                                 "ring_p2p",        "attention", "reverse_all_to_all"};
  return names;
}

void SpAttention::reverse_all_to_all(Stream s) {
  if (topo_.ulysses == 1) return;
  edge("reverse_all_to_all", Edge::begin, s);
  const DType t = prob_.dtype;
  // o_full image rows [R, B, Hl, D] -> o_recv [U, Sl, B, Hl, D]: the inverse split.
  inner_.all_to_allv(rows_at(o_full_, qi0_, hl_), recv_counts_[0], recv_displs_[0], o_recv_.data(), send_counts_[0],
                     send_displs_[0], t, s);
  if (prob_.text_tokens > 0)  // joint rows: gathered over the Ulysses group on the head dim
    inner_.all_gather(rows_at(o_full_, qj0_, hl_), joint_gather_.data(), elems(prob_.text_tokens, hl_), t, s);
  edge("reverse_all_to_all", Edge::end, s);
}

void SpAttention::unpack_outputs(Stream s) {
  if (zero_copy_) return;
  edge("pad_pack", Edge::begin, s);
  const long long lt = prob_.text_tokens;
  const int u = topo_.ulysses;
  const SliceShape shard{prob_.batch, shard_len_, prob_.heads, prob_.head_dim, hl_};
  const void* src = u > 1 ? o_recv_.data() : rows_at(o_full_, qi0_, hl_);
  k_.unpack_heads(src, out_.data(), shard, u, s);  // slices the UAA padding off
  if (lt > 0) {
    const SliceShape joint{prob_.batch, lt, prob_.heads, prob_.head_dim, hl_};
    k_.unpack_heads(u > 1 ? joint_gather_.data() : rows_at(o_full_, qj0_, hl_), joint_out_.data(), joint, u, s);
  }
  edge("pad_pack", Edge::end, s);
}

void SpAttention::forward(Stream s) {
  length_exchange();
  pack_inputs(s);
  qkv_all_to_all(s);
  kv_all_gather(s);
  attention(s, /*ring_transfers=*/true);
  reverse_all_to_all(s);
  unpack_outputs(s);
}

}  // namespace layerbench::attention
