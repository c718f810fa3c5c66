#include "moe/magi2/layer.hpp"

#include "collectives/error.hpp"
#include "moe/init.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace layerbench::moe {

namespace {
std::uint64_t layer_seed(std::uint64_t seed, int layer) {
  return splitmix64(seed ^ (0x4d6f45ull << 32) ^ static_cast<std::uint64_t>(layer));
}
float uniform_scale_for(std::int64_t fan_in) {  // unit-variance outputs for unit-variance inputs
  return std::sqrt(3.0f / static_cast<float>(fan_in));
}
}  // namespace

MoeLayer::MoeLayer(const Plan& plan, Communicator& ep, std::unique_ptr<Ops> ops,
                   std::uint64_t seed, int layer_index)
    : plan_(plan), ep_(ep), ops_(std::move(ops)), act_(ops_->act()), act_size_(dtype_size(act_)) {
  LB_CHECK(ep_.size() == plan_.world && ep_.rank() == plan_.rank, "plan matches the EP group");
  segs_ = modality_segments(plan_.token0, plan_.local_tokens, plan_.global_tokens);
  alloc_weights();
  const Stream s = ep_.device().compute_stream();
  fill_weights(layer_seed(seed, layer_index), s);

  const auto N = static_cast<std::size_t>(plan_.local_tokens);
  const auto H = static_cast<std::size_t>(plan_.hidden);
  const auto rw = static_cast<std::size_t>(plan_.width_local());
  const auto T = static_cast<std::size_t>(plan_.moe_tokens);
  const auto P = static_cast<std::size_t>(plan_.world);
  const auto Il = static_cast<std::size_t>(plan_.inter_local);
  normed_ = zeros(N * H * act_size_);
  routed_ = zeros(N * H * act_size_);
  fc1cat_ = zeros(N * 4 * Il * act_size_);
  act_buf_ = zeros(N * 2 * Il * act_size_);
  shared_ = zeros(N * H * act_size_);
  moe_out_ = zeros(T * rw * act_size_);
  if (plan_.layout == Layout::sp) {
    heads_ = zeros(N * P * rw * act_size_);
    send_ = zeros(P * N * rw * act_size_);
    moe_in_ = zeros(T * rw * act_size_);
    back_ = zeros(P * N * rw * act_size_);
    merge_in_ = zeros(N * P * rw * act_size_);
    a2a_counts(plan_.splits);
  } else {
    heads_ = zeros(N * rw * act_size_);
    shared2_ = zeros(N * H * act_size_);
    partial_ = zeros(N * H * act_size_);
  }
  ep_.device().synchronize(s);
}

Buffer MoeLayer::zeros(std::size_t bytes) {
  auto& dev = ep_.device();
  Buffer b = dev.alloc(std::max<std::size_t>(bytes, 16));
  dev.memset(b.data(), 0, b.bytes(), dev.compute_stream());
  return b;
}

Buffer MoeLayer::make_activation() const {
  auto& dev = ep_.device();
  Buffer b = dev.alloc(static_cast<std::size_t>(plan_.local_tokens * plan_.hidden) * act_size_);
  dev.memset(b.data(), 0, b.bytes(), dev.compute_stream());
  return b;
}

void MoeLayer::fill_input(void* x, std::uint64_t seed, Stream s) {
  ops_->fill(x, act_, {.seed = seed, .tensor = kInput, .scale = std::sqrt(3.0f), .rows = plan_.local_tokens, .cols = plan_.hidden, .full_cols = plan_.hidden, .row0 = plan_.token0, .ld = plan_.hidden}, s);
}

void MoeLayer::alloc_weights() {
  const auto H = static_cast<std::size_t>(plan_.hidden);
  const auto Hin = static_cast<std::size_t>(plan_.hidden_in_local);
  const auto Hl = static_cast<std::size_t>(plan_.heads_local);
  const auto E = static_cast<std::size_t>(plan_.experts);
  const auto dh = static_cast<std::size_t>(plan_.d_head);
  const auto I = static_cast<std::size_t>(plan_.inter);
  const auto Il = static_cast<std::size_t>(plan_.inter_local);
  norm_w_ = zeros(kNumModalities * H * 4);
  w_split_ = zeros(Hin * H * act_size_);
  w_merge_ = zeros(H * Hin * act_size_);
  gate_ = zeros(Hl * E * dh * 4);  // padded heads keep zero weights
  bias_ = zeros(Hl * E * 4);
  w13_ = zeros(Hl * E * dh * 2 * I * act_size_);
  w_down_ = zeros(Hl * E * I * dh * act_size_);
  fc1_ = zeros(2 * Il * H * act_size_);
  mfc1_ = zeros(kNumModalities * 2 * Il * H * act_size_);
  fc2_ = zeros(H * Il * act_size_);
  mfc2_ = zeros(kNumModalities * H * Il * act_size_);
}

void MoeLayer::fill_weights(std::uint64_t seed, Stream s) {
  Ops& o = *ops_;
  const Plan& p = plan_;
  const std::int64_t H = p.hidden, Hin = p.hidden_in_local, E = p.experts, dh = p.d_head,
                     I = p.inter, Il = p.inter_local;
  const std::int64_t t = p.rank;  // TP slice index (SP: slices are whole tensors)
  const bool tp = p.layout == Layout::tp;
  o.fill(norm_w_.data(), DType::fp32, {.seed = seed, .tensor = kNormWeight, .scale = 0.1f, .rows = kNumModalities, .cols = H, .full_cols = H, .ld = H}, s);
  // split: column parallel = rows [t*Hin, (t+1)*Hin) of [H_out, H_in]
  o.fill(w_split_.data(), act_, {.seed = seed, .tensor = kSplit, .scale = uniform_scale_for(H), .rows = Hin, .cols = H, .full_cols = H, .row0 = tp ? t * Hin : 0, .ld = H}, s);
  // merge: row parallel = columns [t*Hin, ...) of [H, H]
  o.fill(w_merge_.data(), act_, {.seed = seed, .tensor = kMerge, .scale = uniform_scale_for(H), .rows = H, .cols = Hin, .full_cols = H, .col0 = tp ? t * Hin : 0, .ld = Hin}, s);
  const std::int64_t hv = p.heads_valid;
  if (hv > 0) {
    const std::int64_t e0 = p.head0 * E;  // first flattened expert of this rank
    o.fill(gate_.data(), DType::fp32, {.seed = seed, .tensor = kRouterGate, .scale = uniform_scale_for(dh), .rows = hv * E, .cols = dh, .full_cols = dh, .row0 = e0, .ld = dh}, s);
    o.fill(bias_.data(), DType::fp32, {.seed = seed, .tensor = kExpertBias, .scale = 0.05f, .rows = hv, .cols = E, .full_cols = E, .row0 = p.head0, .ld = E}, s);
    auto* w13 = static_cast<char*>(w13_.data());
    o.fill(w13, act_, {.seed = seed, .tensor = kExpertGate, .scale = uniform_scale_for(dh), .rows = hv * E * dh, .cols = I, .full_cols = I, .row0 = e0 * dh, .ld = 2 * I}, s);
    o.fill(w13 + static_cast<std::size_t>(I) * act_size_, act_, {.seed = seed, .tensor = kExpertUp, .scale = uniform_scale_for(dh), .rows = hv * E * dh, .cols = I, .full_cols = I, .row0 = e0 * dh, .ld = 2 * I}, s);
    o.fill(w_down_.data(), act_, {.seed = seed, .tensor = kExpertDown, .scale = uniform_scale_for(I), .rows = hv * E * I, .cols = dh, .full_cols = dh, .row0 = e0 * I, .ld = dh}, s);
  }
  o.fill(fc1_.data(), act_, {.seed = seed, .tensor = kSharedFc1, .scale = uniform_scale_for(H), .rows = 2 * Il, .cols = H, .full_cols = H, .row0 = t * 2 * Il * tp, .ld = H}, s);
  o.fill(fc2_.data(), act_, {.seed = seed, .tensor = kSharedFc2, .scale = uniform_scale_for(I), .rows = H, .cols = Il, .full_cols = I, .col0 = tp ? t * Il : 0, .ld = Il}, s);
  for (int m = 0; m < kNumModalities; ++m) {
    auto* f1 = static_cast<char*>(mfc1_.data()) + static_cast<std::size_t>(m * 2 * Il * H) * act_size_;
    o.fill(f1, act_, {.seed = seed, .tensor = kModalityFc1, .scale = uniform_scale_for(H), .rows = 2 * Il, .cols = H, .full_cols = H, .row0 = m * 2 * I + (tp ? t * 2 * Il : 0), .ld = H}, s);
    auto* f2 = static_cast<char*>(mfc2_.data()) + static_cast<std::size_t>(m * H * Il) * act_size_;
    o.fill(f2, act_, {.seed = seed, .tensor = kModalityFc2, .scale = uniform_scale_for(I), .rows = H, .cols = Il, .full_cols = I, .row0 = m * H, .col0 = tp ? t * Il : 0, .ld = Il}, s);
  }
  o.weights_changed();
}

void MoeLayer::a2a_counts(std::span<const std::int64_t> splits) {
  const auto P = static_cast<std::size_t>(plan_.world);
  const auto rw = static_cast<std::size_t>(plan_.width_local());
  const auto N = static_cast<std::size_t>(plan_.local_tokens);
  sc_.assign(P, N * rw);
  sd_.resize(P);
  rc_.resize(P);
  rd_.resize(P);
  std::size_t off = 0;
  for (std::size_t r = 0; r < P; ++r) {
    sd_[r] = r * N * rw;  // chunk r: my tokens for head shard r
    rc_[r] = static_cast<std::size_t>(splits[r]) * rw;  // rank r's tokens, in sequence order
    rd_[r] = off;
    off += rc_[r];
  }
}

void MoeLayer::pre_norm(const void* x, Stream s) {
  edge("pre_norm", Edge::begin, s);
  for (int c = copies("pre_norm"); c > 0; --c) ops_->rms_norm(x, norm_w_.as<float>(), normed_.data(), segs_, plan_.hidden, s);
  edge("pre_norm", Edge::end, s);
}

void MoeLayer::split_linear(Stream s) {
  edge("split_linear", Edge::begin, s);
  // SP: (N, hidden) -> (N, Hpad*dh) with ld Hpad*dh, the padded head columns untouched (zero).
  // TP: column parallel -> (N, Hl*dh), exactly this rank's heads.
  const std::int64_t ld = plan_.layout == Layout::sp ? plan_.heads_padded * plan_.d_head
                                                     : plan_.hidden_in_local;
  for (int c = copies("split_linear"); c > 0; --c)
    ops_->linear(normed_.data(), w_split_.data(), heads_.data(), {.m = plan_.local_tokens, .n = plan_.hidden_in_local, .k = plan_.hidden, .lda = plan_.hidden, .ldw = plan_.hidden, .ldc = ld}, false, s);
  edge("split_linear", Edge::end, s);
}

std::vector<std::int64_t> MoeLayer::exchange_sizes() {
  const Stream s = ep_.device().compute_stream();
  edge("seq_size_exchange", Edge::begin, s);
  auto sizes = ep_.scalar_exchange(plan_.local_tokens);
  edge("seq_size_exchange", Edge::end, s);
  return sizes;
}

const std::vector<std::string>& MoeLayer::hook_points() {
  static const std::vector<std::string> names = {
      "pre_norm",      "split_linear", "seq_size_exchange", "ep_dispatch",  "routing",
      "local_expert_compute", "ep_undispatch", "merge_linear", "tp_reduction", "shared_branch"};
  return names;
}

void MoeLayer::set_copies(const std::string& component, int k) {
  LB_CHECK(k >= 0, "a component runs 0 or more times");
  LB_CHECK(component.empty() || k == 1 || (k == 0 ? skippable(component) : replicable(component)),
           "this component cannot run that many times per call");
  copied_ = component;
  copies_ = component.empty() ? 1 : k;
}

bool MoeLayer::replicable(const std::string& c) {
  const auto& h = hook_points();
  return c != "seq_size_exchange" && c != "tp_reduction" && std::find(h.begin(), h.end(), c) != h.end();
}

bool MoeLayer::skippable(const std::string& c) {
  const auto& h = hook_points();
  return c != "seq_size_exchange" && std::find(h.begin(), h.end(), c) != h.end();
}

void MoeLayer::ep_dispatch(std::span<const std::int64_t> splits, Stream s) {
  edge("ep_dispatch", Edge::begin, s);
  LB_CHECK(plan_.layout == Layout::sp, "dispatch is the SP path");
  LB_CHECK(std::equal(splits.begin(), splits.end(), plan_.splits.begin(), plan_.splits.end()),
           "the split sizes disagree with the layer's plan");
  // (N, P, Hl*dh) -> (P, N, Hl*dh): chunk p holds my tokens for the heads of rank p.
  for (int c = copies("ep_dispatch"); c > 0; --c) {
    ops_->transpose_blocks(heads_.data(), send_.data(), plan_.local_tokens, plan_.world,
                           plan_.width_local(), s);
    ep_.all_to_allv(send_.data(), sc_, sd_, moe_in_.data(), rc_, rd_, act_, s);
  }
  edge("ep_dispatch", Edge::end, s);
}

RoutedArgs MoeLayer::routed_args() {
  RoutedArgs r;
  r.x = plan_.layout == Layout::sp ? moe_in_.data() : heads_.data();
  r.gate = gate_.as<float>();
  r.bias = bias_.as<float>();
  r.w13 = w13_.data();
  r.w_down = w_down_.data();
  r.y = moe_out_.data();
  r.tokens = plan_.moe_tokens;
  r.heads_local = plan_.heads_local;
  r.heads_valid = plan_.heads_valid;
  r.experts = plan_.experts;
  r.d = plan_.d_head;
  r.inter = plan_.inter;
  r.topk = plan_.topk;
  r.scale = static_cast<float>(plan_.scale);
  return r;
}

std::int64_t MoeLayer::expert_assignments() const {
  return plan_.moe_tokens * plan_.heads_valid * plan_.topk;
}

void MoeLayer::route(Stream s) {
  edge("routing", Edge::begin, s);
  for (int c = copies("routing"); c > 0 && plan_.heads_valid > 0; --c) ops_->route(routed_args(), s);  // a padding-only rank computes nothing
  edge("routing", Edge::end, s);
}

void MoeLayer::experts(Stream s) {
  edge("local_expert_compute", Edge::begin, s);
  for (int c = copies("local_expert_compute"); c > 0 && plan_.heads_valid > 0; --c) ops_->experts(routed_args(), s);
  edge("local_expert_compute", Edge::end, s);
}

void MoeLayer::ep_undispatch(std::span<const std::int64_t> splits, Stream s) {
  edge("ep_undispatch", Edge::begin, s);
  LB_CHECK(plan_.layout == Layout::sp, "undispatch is the SP path");
  LB_CHECK(std::equal(splits.begin(), splits.end(), plan_.splits.begin(), plan_.splits.end()),
           "the split sizes disagree with the layer's plan");
  // Inverse exchange: rank r's tokens go home; back is (P, N, Hl*dh), head shard p in chunk p.
  for (int c = copies("ep_undispatch"); c > 0; --c) {
    ep_.all_to_allv(moe_out_.data(), rc_, rd_, back_.data(), sc_, sd_, act_, s);
    ops_->transpose_blocks(back_.data(), merge_in_.data(), plan_.world, plan_.local_tokens,
                           plan_.width_local(), s);
  }
  edge("ep_undispatch", Edge::end, s);
}

void MoeLayer::merge_linear(Stream s) {
  edge("merge_linear", Edge::begin, s);
  // SP: (N, Hpad*dh) with only the first H*dh columns real -> k = hidden, lda = Hpad*dh.
  // TP: row parallel (N, Hl*dh) x (hidden, Hl*dh)^T -> partial (N, hidden), reduced into routed.
  const bool sp = plan_.layout == Layout::sp;
  const void* a = sp ? merge_in_.data() : moe_out_.data();
  const std::int64_t lda = sp ? plan_.heads_padded * plan_.d_head : plan_.hidden_in_local;
  for (int c = copies("merge_linear"); c > 0; --c)
    ops_->linear(a, w_merge_.data(), sp ? routed_.data() : partial_.data(), {.m = plan_.local_tokens, .n = plan_.hidden, .k = plan_.hidden_in_local, .lda = lda, .ldw = plan_.hidden_in_local, .ldc = plan_.hidden}, false, s);
  edge("merge_linear", Edge::end, s);
}

void MoeLayer::tp_reduction(Stream s) {
  if (plan_.layout != Layout::tp) return;
  edge("tp_reduction", Edge::begin, s);
  const auto n = static_cast<std::size_t>(plan_.local_tokens * plan_.hidden);
  // Out of place: left out (--ab drop:), merge's partial sums and the last reduced sums both stay
  // as written, so the rest of a same-input stack computes on unchanged data.
  if (copies("tp_reduction") > 0) ep_.all_reduce(partial_.data(), routed_.data(), n, act_, s);
  edge("tp_reduction", Edge::end, s);
}

void MoeLayer::shared_branch(Stream s) {
  edge("shared_branch", Edge::begin, s);
  for (int c = copies("shared_branch"); c > 0; --c) shared_branch_body(s);
  edge("shared_branch", Edge::end, s);
}

void MoeLayer::shared_branch_body(Stream s) {
  const std::int64_t N = plan_.local_tokens, H = plan_.hidden, Il = plan_.inter_local;
  auto* cat = static_cast<char*>(fc1cat_.data());
  // fc1 -> cat[:, 0:2Il]; modality fc1 -> cat[:, 2Il:4Il], one weight per modality run.
  ops_->linear(normed_.data(), fc1_.data(), cat, {.m = N, .n = 2 * Il, .k = H, .lda = H, .ldw = H, .ldc = 4 * Il}, false, s);
  for (const auto& g : segs_) {
    const auto* w = static_cast<const char*>(mfc1_.data()) +
                    static_cast<std::size_t>(g.modality * 2 * Il * H) * act_size_;
    ops_->linear(static_cast<const char*>(normed_.data()) + static_cast<std::size_t>(g.begin * H) * act_size_, w, cat + static_cast<std::size_t>(g.begin * 4 * Il + 2 * Il) * act_size_, {.m = g.count, .n = 2 * Il, .k = H, .lda = H, .ldw = H, .ldc = 4 * Il}, false, s);
  }
  // SwiGLU7 over the packed concat -> (N, 2Il) = [fc2 input (Il) | modality fc2 input (Il)].
  ops_->swiglu_packed(cat, act_buf_.data(), N, 2 * Il, s);
  ops_->linear(act_buf_.data(), fc2_.data(), shared_.data(), {.m = N, .n = H, .k = Il, .lda = 2 * Il, .ldw = Il, .ldc = H}, false, s);
  const bool tp = plan_.layout == Layout::tp;
  void* dst2 = tp ? shared2_.data() : shared_.data();
  const auto* a2 = static_cast<const char*>(act_buf_.data()) + static_cast<std::size_t>(Il) * act_size_;
  for (const auto& g : segs_) {
    const auto* w = static_cast<const char*>(mfc2_.data()) +
                    static_cast<std::size_t>(g.modality * H * Il) * act_size_;
    ops_->linear(a2 + static_cast<std::size_t>(g.begin * 2 * Il) * act_size_, w, static_cast<char*>(dst2) + static_cast<std::size_t>(g.begin * H) * act_size_, {.m = g.count, .n = H, .k = Il, .lda = 2 * Il, .ldw = Il, .ldc = H}, !tp, s);
  }
  if (tp) {  // row-parallel fc2s: each its own all-reduce (the reference's layout)
    const auto n = static_cast<std::size_t>(N * H);
    ep_.all_reduce(shared_.data(), shared_.data(), n, act_, s);
    ep_.all_reduce(shared2_.data(), shared2_.data(), n, act_, s);
    ops_->add(shared_.data(), shared2_.data(), shared_.data(), N * H, s);
  }
}

void MoeLayer::finish(void* out, Stream s) {
  ops_->add(routed_.data(), shared_.data(), out, plan_.local_tokens * plan_.hidden, s);
}

void MoeLayer::routed_branch(std::optional<std::span<const std::int64_t>> splits, Stream s) {
  split_linear(s);
  if (plan_.layout == Layout::sp) {
    std::vector<std::int64_t> exchanged;
    if (!splits) {  // legacy: per-layer scalar all_gather + host read
      exchanged = exchange_sizes();
      splits = std::span<const std::int64_t>(exchanged);
    }
    ep_dispatch(*splits, s);
    route(s);
    experts(s);
    ep_undispatch(*splits, s);
  } else {
    route(s);
    experts(s);
  }
  merge_linear(s);
  tp_reduction(s);
}

void MoeLayer::forward(const void* x, void* out,
                       std::optional<std::span<const std::int64_t>> splits, Stream s) {
  last_x_ = x;
  pre_norm(x, s);
  routed_branch(splits, s);
  shared_branch(s);
  finish(out, s);
}

void MoeLayer::branches(std::span<const std::int64_t> splits, bool overlapped, Stream s) {
  LB_CHECK(plan_.layout == Layout::sp, "the overlap probe is the SP path");
  if (!overlapped) {
    ep_dispatch(splits, s);
    route(s);
    experts(s);
    ep_undispatch(splits, s);
    shared_branch(s);
    return;
  }
  ops_->transpose_blocks(heads_.data(), send_.data(), plan_.local_tokens, plan_.world,
                         plan_.width_local(), s);
  auto h = ep_.all_to_allv_async(send_.data(), sc_, sd_, moe_in_.data(), rc_, rd_, act_, s);
  // NOTES: the host backend has no asynchronous progress (and Open MPI's libnbc fails an
  // Ialltoallv left pending across long host compute), so there the probe completes the
  // dispatch first; on the cuda backend the all-to-all runs on the comm stream under the
  // shared branch on the compute stream.
  if (ep_.backend() == Backend::host) h->wait(s);
  shared_branch(s);
  h->wait(s);
  route(s);
  experts(s);
  ep_undispatch(splits, s);
}

}  // namespace layerbench::moe
