#include "attention/sp_attention.hpp"

#include "collectives/error.hpp"

#include <cmath>
#include <numeric>

namespace layerbench::attention {
namespace {
unsigned char* at_rows(const Buffer& b, std::size_t elems_before, DType t) {
  return b.as<unsigned char>() + elems_before * dtype_size(t);
}
}  // namespace

SpAttention::SpAttention(Communicator& inner, Communicator& outer, const Topology& t,
                         const Problem& p, Kernels& kernels, int sp_rank)
    : inner_(inner), outer_(outer), topo_(t), prob_(p), k_(kernels) {
  LB_CHECK(inner.size() == t.ulysses && outer.size() == t.allgather, "grid does not match topology");
  hpad_ = t.padded_heads(p.heads);
  hl_ = hpad_ / t.ulysses;
  region_ = p.seq / t.allgather;
  const auto shards = shard_lengths(t, p.seq);
  shard_len_ = shards[static_cast<std::size_t>(sp_rank)];
  shard_off_ = std::accumulate(shards.begin(), shards.begin() + sp_rank, 0LL);
  const int group = sp_rank / t.ulysses;
  seq_lens_.assign(shards.begin() + group * t.ulysses, shards.begin() + (group + 1) * t.ulysses);
  set_counts(seq_lens_);
  zero_copy_ = t.ulysses == 1 && p.batch == 1 && p.text_tokens == 0;

  Device& dev = inner.device();
  const std::size_t e = dtype_size(p.dtype);
  const long long lt = p.text_tokens, u = t.ulysses;
  auto alloc = [&](std::size_t n) { return dev.alloc(std::max<std::size_t>(n, 1) * e); };
  for (auto& b : in_) b = alloc(elems(shard_len_, p.heads));
  if (lt > 0) {
    for (auto& b : joint_) b = alloc(elems(lt, p.heads));
    joint_out_ = alloc(elems(lt, p.heads));
    if (u > 1) joint_gather_ = alloc(elems(u * lt, hl_));
  }
  if (u > 1) {
    for (auto& b : send_) b = alloc(elems(u * shard_len_, hl_));
    o_recv_ = alloc(elems(u * shard_len_, hl_));
  }
  if (!zero_copy_) {
    q_full_ = alloc(elems(lt + region_, hl_));
    o_full_ = alloc(elems(lt + region_, hl_));
    out_ = alloc(elems(shard_len_, p.heads));
  } else {
    out_ = alloc(elems(shard_len_, p.heads));
  }
  if (t.allgather > 1)
    for (auto& b : kv_region_) b = alloc(elems(region_, hl_));
  if (t.allgather > 1 || !zero_copy_)
    for (auto& b : kv_full_) b = alloc(elems(lt + p.seq, hl_));
}

void SpAttention::set_counts(const std::vector<long long>& seq_lens) {
  const int u = topo_.ulysses;
  send_counts_.assign(static_cast<std::size_t>(u), elems(shard_len_, hl_));
  send_displs_.resize(static_cast<std::size_t>(u));
  recv_counts_.resize(static_cast<std::size_t>(u));
  recv_displs_.resize(static_cast<std::size_t>(u));
  std::size_t off = 0;
  for (int j = 0; j < u; ++j) {
    const auto jj = static_cast<std::size_t>(j);
    send_displs_[jj] = jj * send_counts_[0];
    recv_counts_[jj] = elems(seq_lens[jj], hl_);
    recv_displs_[jj] = off;
    off += recv_counts_[jj];
  }
  LB_CHECK(off == elems(region_, hl_), "Ulysses group shard lengths do not add up to the region");
}

const void* SpAttention::output() const { return out_.data(); }

AttentionShape SpAttention::attention_shape() const {
  return {prob_.batch, prob_.text_tokens + region_, prob_.text_tokens + prob_.seq, hl_,
          prob_.head_dim, static_cast<float>(1.0 / std::sqrt(static_cast<double>(prob_.head_dim)))};
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
  const DType t = prob_.dtype;
  const long long lt = prob_.text_tokens;
  const SliceShape shard{prob_.batch, shard_len_, prob_.heads, prob_.head_dim, hl_};
  if (topo_.ulysses > 1) {
    for (int i = 0; i < 3; ++i) k_.pack_heads(in_[i].data(), send_[i].data(), shard, 0, topo_.ulysses, s);
  } else {
    // No all-to-all: pack straight into where the all-to-all would have delivered.
    k_.pack_heads(in_[0].data(), at_rows(q_full_, elems(lt, hl_), t), shard, 0, 1, s);
    for (int i = 0; i < 2; ++i) {
      void* dst = topo_.allgather > 1 ? kv_region_[i].data() : at_rows(kv_full_[i], elems(lt, hl_), t);
      k_.pack_heads(in_[i + 1].data(), dst, shard, 0, 1, s);
    }
  }
  if (lt > 0) {
    // Joint tokens: this rank's (padded) head slice, attached in front after the gather.
    const SliceShape joint{prob_.batch, lt, prob_.heads, prob_.head_dim, hl_};
    const int u = inner_.rank();
    k_.pack_heads(joint_[0].data(), q_full_.data(), joint, u, 1, s);
    for (int i = 0; i < 2; ++i) k_.pack_heads(joint_[i + 1].data(), kv_full_[i].data(), joint, u, 1, s);
  }
  edge("pad_pack", Edge::end, s);
}

void SpAttention::qkv_all_to_all(Stream s) {
  if (topo_.ulysses == 1) return;
  edge("qkv_all_to_all", Edge::begin, s);
  const DType t = prob_.dtype;
  const std::size_t lt_rows = elems(prob_.text_tokens, hl_);
  void* dst[3] = {at_rows(q_full_, lt_rows, t),
                  topo_.allgather > 1 ? kv_region_[0].data() : at_rows(kv_full_[0], lt_rows, t),
                  topo_.allgather > 1 ? kv_region_[1].data() : at_rows(kv_full_[1], lt_rows, t)};
  // send_[i]: [U, Sl, B, Hl, D] -> dst: [R, B, Hl, D], peers' shards in sequence order.
  for (int i = 0; i < 3; ++i)
    inner_.all_to_allv(send_[i].data(), send_counts_, send_displs_, dst[i], recv_counts_,
                       recv_displs_, t, s);
  edge("qkv_all_to_all", Edge::end, s);
}

void SpAttention::kv_all_gather(Stream s) {
  if (topo_.allgather == 1) return;
  edge("kv_all_gather", Edge::begin, s);
  const DType t = prob_.dtype;
  const void* src[2] = {zero_copy_ ? in_[1].data() : kv_region_[0].data(),
                        zero_copy_ ? in_[2].data() : kv_region_[1].data()};
  // [R, B, Hl, D] from each of A ranks -> [S, B, Hl, D]: allgather rank a holds region a, so
  // NCCL's rank-ordered concatenation is already the global sequence order.
  for (int i = 0; i < 2; ++i)
    outer_.all_gather(src[i], at_rows(kv_full_[i], elems(prob_.text_tokens, hl_), t),
                      elems(region_, hl_), t, s);
  edge("kv_all_gather", Edge::end, s);
}

void SpAttention::attention(Stream s) {
  edge("attention", Edge::begin, s);
  const void* q = zero_copy_ ? in_[0].data() : q_full_.data();
  const bool kv_in_place = zero_copy_ && topo_.allgather == 1;
  const void* k = kv_in_place ? in_[1].data() : kv_full_[0].data();
  const void* v = kv_in_place ? in_[2].data() : kv_full_[1].data();
  void* o = zero_copy_ ? out_.data() : o_full_.data();
  k_.attention(q, k, v, o, attention_shape(), s);
  edge("attention", Edge::end, s);
}

const std::vector<std::string>& SpAttention::hook_points() {
  static const std::vector<std::string> names = {"length_exchange", "pad_pack",  "qkv_all_to_all",
                                                 "kv_all_gather",   "attention", "reverse_all_to_all"};
  return names;
}

void SpAttention::reverse_all_to_all(Stream s) {
  if (topo_.ulysses == 1) return;
  edge("reverse_all_to_all", Edge::begin, s);
  const DType t = prob_.dtype;
  // o_full image rows [R, B, Hl, D] -> o_recv [U, Sl, B, Hl, D]: the inverse split.
  inner_.all_to_allv(at_rows(o_full_, elems(prob_.text_tokens, hl_), t), recv_counts_,
                     recv_displs_, o_recv_.data(), send_counts_, send_displs_, t, s);
  if (prob_.text_tokens > 0)  // joint rows: gathered over the Ulysses group on the head dim
    inner_.all_gather(o_full_.data(), joint_gather_.data(), elems(prob_.text_tokens, hl_), t, s);
  edge("reverse_all_to_all", Edge::end, s);
}

void SpAttention::unpack_outputs(Stream s) {
  if (zero_copy_) return;
  edge("pad_pack", Edge::begin, s);
  const DType t = prob_.dtype;
  const long long lt = prob_.text_tokens;
  const int u = topo_.ulysses;
  const SliceShape shard{prob_.batch, shard_len_, prob_.heads, prob_.head_dim, hl_};
  const void* src = u > 1 ? o_recv_.data() : at_rows(o_full_, elems(lt, hl_), t);
  k_.unpack_heads(src, out_.data(), shard, u, s);  // slices the UAA padding off
  if (lt > 0) {
    const SliceShape joint{prob_.batch, lt, prob_.heads, prob_.head_dim, hl_};
    k_.unpack_heads(u > 1 ? joint_gather_.data() : o_full_.data(), joint_out_.data(), joint, u, s);
  }
  edge("pad_pack", Edge::end, s);
}

void SpAttention::forward(Stream s) {
  length_exchange();
  pack_inputs(s);
  qkv_all_to_all(s);
  kv_all_gather(s);
  attention(s);
  reverse_all_to_all(s);
  unpack_outputs(s);
}

}  // namespace layerbench::attention
