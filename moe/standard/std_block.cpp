#include "moe/standard/std_block.hpp"

#include "collectives/error.hpp"
#include "moe/expert_buckets.hpp"
#include "moe/init.hpp"
#include "moe/standard/fp8_dispatch.hpp"
#include "moe/standard/std_reference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

namespace layerbench::moe {

namespace {

// The steps of a forward, in order (components() declares them; finish() is not a component).
constexpr const char* kSteps[] = {"router",     "dispatch_permute", "ep_counts_exchange", "ep_dispatch",
                                  "expert_compute", "ep_combine", "weighted_sum",       "shared_experts"};
float uniform_scale_for(std::int64_t fan_in) { return std::sqrt(3.0f / static_cast<float>(fan_in)); }
}  // namespace

StdPlan make_std_plan(const Model& m, int rank, int world, const std::vector<std::int64_t>& splits) {
  check_ep(m, world);
  LB_CHECK(static_cast<int>(splits.size()) == world, "one token count per rank");
  StdPlan p;
  p.rank = rank;
  p.world = world;
  p.splits = splits;
  p.tokens = splits[static_cast<std::size_t>(rank)];
  p.token0 = std::accumulate(splits.begin(), splits.begin() + rank, std::int64_t{0});
  p.global_tokens = std::accumulate(splits.begin(), splits.end(), std::int64_t{0});
  p.experts_local = m.experts / world;
  p.expert0 = rank * p.experts_local;
  p.experts = expert_precision(m.precision.experts);
  p.shared = expert_precision(m.precision.shared);
  return p;
}

std::string_view to_string(DispatchPrecision d) { return d == DispatchPrecision::fp8 ? "fp8" : "act"; }

void check_dispatch(const Model& m, DispatchPrecision d) {
  if (d == DispatchPrecision::fp8 && m.hidden % 2 != 0)
    throw UsageError(fmt::format("FP8 dispatch: hidden {} is odd; the packed rows (hidden e4m3 bytes + 4 bytes of "
                                 "scale per 128 channels) travel as 2-byte words, so hidden must be even",
                                 m.hidden));
}

std::int64_t StdBlock::dispatch_row_bytes() const {
  return plan_.dispatch == DispatchPrecision::fp8 ? fp8::dispatch_row_bytes(model_.hidden)
                                                  : model_.hidden * static_cast<std::int64_t>(act_size_);
}
std::int64_t StdBlock::combine_row_bytes() const { return model_.hidden * static_cast<std::int64_t>(act_size_); }

StdBlock::StdBlock(const Model& m, const StdPlan& plan, Communicator& ep, std::unique_ptr<StdOps> ops,
                   std::uint64_t seed, int layer_index)
    : model_(m), plan_(plan), ep_(ep), ops_(std::move(ops)), act_(ops_->act()), act_size_(dtype_size(act_)) {
  LB_CHECK(ep_.size() == plan_.world && ep_.rank() == plan_.rank, "plan matches the EP group");
  check_dispatch(m, plan_.dispatch);
  const bool fp8 = plan_.dispatch == DispatchPrecision::fp8;
  const auto N = static_cast<std::size_t>(plan_.tokens), H = static_cast<std::size_t>(m.hidden);
  const auto E = static_cast<std::size_t>(m.experts), k = static_cast<std::size_t>(m.topk);
  const auto El = static_cast<std::size_t>(plan_.experts_local), I = static_cast<std::size_t>(m.moe_intermediate);
  const auto Is = static_cast<std::size_t>(inter_shared());
  w_router_ = zeros(E * H * act_size_);
  bias_ = zeros(E * 4);
  w13_ = zeros(El * 2 * I * H * act_size_);
  w_down_ = zeros(El * H * I * act_size_);
  w_s13_ = zeros(2 * Is * H * act_size_);
  w_s2_ = zeros(H * Is * act_size_);
  w_sgate_ = zeros(H * act_size_);
  const Stream s = ep_.device().compute_stream();
  fill_weights(std_layer_seed(seed, layer_index), s);
  make_fp8_experts(s);
  logits_ = zeros(N * E * 4);
  idx_ = zeros(N * k * 4);
  weight_ = zeros(N * k * 4);
  slot_ = zeros(N * k * 4);
  send_map_ = zeros(N * k * 4);
  if (fp8)
    send_fp8_ = zeros(N * k * static_cast<std::size_t>(fp8::dispatch_row_bytes(m.hidden)));
  else
    send_ = zeros(N * k * H * act_size_);
  back_ = zeros(N * k * H * act_size_);
  routed_ = zeros(N * H * act_size_);
  counts_send_ = zeros(E * 8);
  counts_recv_ = zeros(static_cast<std::size_t>(plan_.world) * El * 8);
  s_gu_ = zeros(N * 2 * Is * act_size_);
  s_act_ = zeros(N * Is * act_size_);
  shared_out_ = zeros(N * H * act_size_);
  s_gate_ = zeros(N * 4);
  blocker_ = find_graph_blocker();
  if (device_path()) prepare_device_path();
  ep_.device().synchronize(s);
}

Buffer StdBlock::zeros(std::size_t bytes) {
  auto& dev = ep_.device();
  Buffer b = dev.alloc(std::max<std::size_t>(bytes, 16));
  dev.memset(b.data(), 0, b.bytes(), dev.compute_stream());
  return b;
}

void StdBlock::ensure(Buffer& b, std::size_t bytes) {
  if (b.data() && b.bytes() >= bytes) return;
  b = zeros(bytes + bytes / 4);  // grows rarely: the loads of one input repeat
}

Buffer StdBlock::make_activation() const {
  auto& dev = ep_.device();
  Buffer b = dev.alloc(std::max<std::size_t>(static_cast<std::size_t>(plan_.tokens * model_.hidden) * act_size_, 16));
  dev.memset(b.data(), 0, b.bytes(), dev.compute_stream());
  return b;
}

void StdBlock::fill_input(void* x, std::uint64_t seed, Stream s) {
  ops_->dense().fill(x, act_, {.seed = seed, .tensor = kInput, .scale = std::sqrt(3.0f), .rows = plan_.tokens, .cols = model_.hidden, .full_cols = model_.hidden, .row0 = plan_.token0, .ld = model_.hidden}, s);
}

void StdBlock::fill_weights(std::uint64_t seed, Stream s) {
  DenseOps& o = ops_->dense();
  const std::int64_t H = model_.hidden, E = model_.experts, I = model_.moe_intermediate, Is = inter_shared();
  const std::int64_t El = plan_.experts_local, e0 = plan_.expert0;
  o.fill(w_router_.data(), act_, {.seed = seed, .tensor = kRouterGate, .scale = uniform_scale_for(H), .rows = E, .cols = H, .full_cols = H, .ld = H}, s);
  o.fill(bias_.data(), DType::fp32, {.seed = seed, .tensor = kExpertBias, .scale = 0.05f, .rows = 1, .cols = E, .full_cols = E, .ld = E}, s);
  for (std::int64_t el = 0; el < El; ++el) {
    auto* w = static_cast<char*>(w13_.data()) + static_cast<std::size_t>(el * 2 * I * H) * act_size_;
    o.fill(w, act_, {.seed = seed, .tensor = kExpertGate, .scale = uniform_scale_for(H), .rows = I, .cols = H, .full_cols = H, .row0 = (e0 + el) * I, .ld = H}, s);
    o.fill(w + static_cast<std::size_t>(I * H) * act_size_, act_, {.seed = seed, .tensor = kExpertUp, .scale = uniform_scale_for(H), .rows = I, .cols = H, .full_cols = H, .row0 = (e0 + el) * I, .ld = H}, s);
  }
  o.fill(w_down_.data(), act_, {.seed = seed, .tensor = kExpertDown, .scale = uniform_scale_for(I), .rows = El * H, .cols = I, .full_cols = I, .row0 = e0 * H, .ld = I}, s);
  if (Is > 0) {
    o.fill(w_s13_.data(), act_, {.seed = seed, .tensor = kSharedFc1, .scale = uniform_scale_for(H), .rows = 2 * Is, .cols = H, .full_cols = H, .ld = H}, s);
    o.fill(w_s2_.data(), act_, {.seed = seed, .tensor = kSharedFc2, .scale = uniform_scale_for(Is), .rows = H, .cols = Is, .full_cols = Is, .ld = Is}, s);
    // the gate reuses the id of a tensor this block does not have (MAGI-2 modality MLP)
    o.fill(w_sgate_.data(), act_, {.seed = seed, .tensor = kModalityFc1, .scale = uniform_scale_for(H), .rows = 1, .cols = H, .full_cols = H, .ld = H}, s);
  }
}

void StdBlock::make_fp8_experts(Stream s) {
  const bool cuda = ep_.backend() == Backend::cuda;
  auto make = [&](ExpertPrecision p, std::int64_t experts, std::int64_t inter, std::int64_t rows_cap, const char* what) {
    const Fp8ExpertShape shape{p, experts, model_.hidden, inter, rows_cap, model_.activation};
    if (!cuda) return make_host_fp8_experts(shape);
    const std::string why = cuda_fp8_experts_unsupported(shape);
    if (!why.empty())
      throw UsageError(fmt::format("{} in {} (hidden {}, intermediate {}, {} experts): {}; --precision bf16 runs the "
                                   "BF16 layer", what, to_string(p), model_.hidden, inter, experts, why));
    return make_cuda_fp8_experts(ep_.device(), shape);
  };
  if (plan_.experts != ExpertPrecision::act && plan_.experts_local > 0) {
    // A rank receives at most min(k, local experts) copies of every token.
    const std::int64_t cap = plan_.global_tokens * std::min<std::int64_t>(model_.topk, plan_.experts_local);
    fp8_experts_ = make(plan_.experts, plan_.experts_local, model_.moe_intermediate, cap, "the routed experts");
    fp8_experts_->set_weights(w13_.data(), w_down_.data(), s);
  }
  if (shared_precision() != ExpertPrecision::act) {
    fp8_shared_ = make(plan_.shared, 1, inter_shared(), plan_.tokens, "the shared experts");
    fp8_shared_->set_weights(w_s13_.data(), w_s2_.data(), s);
  }
}

void StdBlock::route(Stream s) {
  const std::int64_t N = plan_.tokens, H = model_.hidden, E = model_.experts, k = model_.topk;
  ops_->logits(x_, w_router_.data(), logits_.as<float>(), N, H, E, s);
  ops_->route(logits_.as<float>(), bias_.as<float>(), model_.router, N, E, k, idx_.as<std::int32_t>(),
              weight_.as<float>(), s);
}

void StdBlock::dispatch_permute(Stream s) {
  auto& dev = ep_.device();
  const std::int64_t N = plan_.tokens, E = model_.experts, k = model_.topk, H = model_.hidden;
  const std::int64_t El = plan_.experts_local, P = plan_.world;
  const auto ids = dev.download<std::int32_t>(idx_.data(), static_cast<std::size_t>(N * k));
  ++host_syncs_;
  on_device_ = false;
  expert_counts_.assign(static_cast<std::size_t>(E), 0);
  for (auto e : ids) ++expert_counts_[static_cast<std::size_t>(e)];
  std::vector<std::int64_t> pos(static_cast<std::size_t>(E), 0);
  for (std::int64_t e = 1; e < E; ++e) pos[e] = pos[e - 1] + expert_counts_[e - 1];
  send_rows_ = N * k;
  std::vector<std::int32_t> slot(static_cast<std::size_t>(N * k)), map(static_cast<std::size_t>(N * k));
  for (std::int64_t t = 0; t < N; ++t)  // copies grouped by expert (so by destination), token order inside
    for (std::int64_t j = 0; j < k; ++j) {
      const auto p = pos[static_cast<std::size_t>(ids[t * k + j])]++;
      slot[t * k + j] = static_cast<std::int32_t>(p);
      map[p] = static_cast<std::int32_t>(t);
    }
  sc_.assign(static_cast<std::size_t>(P), 0);
  sd_.assign(static_cast<std::size_t>(P), 0);
  for (std::int64_t e = 0; e < E; ++e) sc_[static_cast<std::size_t>(e / El)] += static_cast<std::size_t>(expert_counts_[e]);
  for (std::int64_t d = 1; d < P; ++d) sd_[d] = sd_[d - 1] + sc_[d - 1];
  dev.copy_from_host(slot_.data(), slot.data(), slot.size() * 4, s);
  dev.copy_from_host(send_map_.data(), map.data(), map.size() * 4, s);
  dev.copy_from_host(counts_send_.data(), expert_counts_.data(), expert_counts_.size() * 8, s);
  if (plan_.dispatch == DispatchPrecision::fp8)  // quantized as they are gathered
    ops_->gather_quantize_fp8(x_, send_map_.as<std::int32_t>(), send_fp8_.as<std::uint8_t>(), send_rows_, H, s);
  else
    ops_->gather_rows(x_, send_map_.as<std::int32_t>(), send_.data(), send_rows_, H, s);
}

void StdBlock::counts_exchange(Stream s) {
  auto& dev = ep_.device();
  const std::int64_t El = plan_.experts_local, P = plan_.world, H = model_.hidden;
  const std::int64_t I = model_.moe_intermediate;
  const std::vector<std::size_t> cnt(static_cast<std::size_t>(P), static_cast<std::size_t>(El));
  std::vector<std::size_t> displ(static_cast<std::size_t>(P));
  for (std::int64_t r = 0; r < P; ++r) displ[r] = static_cast<std::size_t>(r * El);
  ep_.all_to_allv(counts_send_.data(), cnt, displ, counts_recv_.data(), cnt, displ, DType::int64, s);
  recv_counts_ = dev.download<std::int64_t>(counts_recv_.data(), static_cast<std::size_t>(P * El));
  ++host_syncs_;
  rc_.assign(static_cast<std::size_t>(P), 0);
  rd_.assign(static_cast<std::size_t>(P), 0);
  expert_rows_.assign(static_cast<std::size_t>(El), 0);
  for (std::int64_t r = 0; r < P; ++r)
    for (std::int64_t e = 0; e < El; ++e) {
      rc_[r] += static_cast<std::size_t>(recv_counts_[r * El + e]);
      expert_rows_[e] += recv_counts_[r * El + e];
    }
  for (std::int64_t r = 1; r < P; ++r) rd_[r] = rd_[r - 1] + rc_[r - 1];
  recv_rows_ = static_cast<std::int64_t>(rd_[P - 1] + rc_[P - 1]);
  // Expert-major order of the received rows: expert e's rows from rank 0, then rank 1, ...
  std::vector<std::int32_t> em;
  em.reserve(static_cast<std::size_t>(recv_rows_));
  for (std::int64_t e = 0; e < El; ++e)
    for (std::int64_t r = 0; r < P; ++r) {
      std::int64_t off = static_cast<std::int64_t>(rd_[r]);
      for (std::int64_t e2 = 0; e2 < e; ++e2) off += recv_counts_[r * El + e2];
      for (std::int64_t i = 0; i < recv_counts_[r * El + e]; ++i) em.push_back(static_cast<std::int32_t>(off + i));
    }
  const auto R = static_cast<std::size_t>(recv_rows_);
  ensure(expert_map_, R * 4);
  if (plan_.dispatch == DispatchPrecision::fp8)
    ensure(recv_fp8_, R * static_cast<std::size_t>(dispatch_row_bytes()));
  else
    ensure(recv_, R * H * act_size_);
  ensure(xe_, R * H * act_size_);
  ensure(ye_, R * H * act_size_);
  ensure(y_recv_, R * H * act_size_);
  ensure(gu_, R * 2 * I * act_size_);
  ensure(act_buf_, R * I * act_size_);
  if (R > 0) dev.copy_from_host(expert_map_.data(), em.data(), R * 4, s);
  dev.synchronize(s);  // `em` is a host temporary (kept simple: this component reads back anyway)
  ++host_syncs_;
}

void StdBlock::dispatch(Stream s) {
  if (plan_.dispatch == DispatchPrecision::fp8) {  // packed rows as 2-byte words (hidden is even)
    const auto words = static_cast<std::size_t>(dispatch_row_bytes()) / 2;
    auto rows = [words](std::vector<std::size_t> v) {
      for (auto& x : v) x *= words;
      return v;
    };
    ep_.all_to_allv(send_fp8_.data(), rows(sc_), rows(sd_), recv_fp8_.data(), rows(rc_), rows(rd_), DType::bf16, s);
    return;
  }
  const auto H = static_cast<std::size_t>(model_.hidden);
  auto scale = [H](std::vector<std::size_t> v) {
    for (auto& x : v) x *= H;
    return v;
  };
  ep_.all_to_allv(send_.data(), scale(sc_), scale(sd_), recv_.data(), scale(rc_), scale(rd_), act_, s);
}

void StdBlock::experts(Stream s) {
  if (recv_rows_ == 0) return;  // no copy reached this rank's experts
  const std::int64_t H = model_.hidden, I = model_.moe_intermediate, R = recv_rows_;
  if (plan_.dispatch == DispatchPrecision::fp8)  // dequantized as they are reordered (the FP8 rows stay in recv_fp8_)
    ops_->gather_dequantize_fp8(recv_fp8_.as<std::uint8_t>(), expert_map_.as<std::int32_t>(), xe_.data(), R, H, s);
  else
    ops_->gather_rows(recv_.data(), expert_map_.as<std::int32_t>(), xe_.data(), R, H, s);
  if (fp8_experts_)
    fp8_experts_->mlp(xe_.data(), act_buf_.data(), ye_.data(), expert_rows_, s);
  else
    ops_->expert_mlp(xe_.data(), w13_.data(), w_down_.data(), gu_.data(), act_buf_.data(), ye_.data(), expert_rows_, H,
                     I, model_.activation, s);
  ops_->scatter_rows(ye_.data(), expert_map_.as<std::int32_t>(), y_recv_.data(), R, H, s);
}

void StdBlock::combine(Stream s) {
  const auto H = static_cast<std::size_t>(model_.hidden);
  auto scale = [H](std::vector<std::size_t> v) {
    for (auto& x : v) x *= H;
    return v;
  };
  ep_.all_to_allv(y_recv_.data(), scale(rc_), scale(rd_), back_.data(), scale(sc_), scale(sd_), act_, s);
}

void StdBlock::weighted_sum(Stream s) {
  // the copies' outputs in the send order: back from the combine, or where the device path's
  // expert MLPs left them (at EP 1 the same order)
  ops_->combine(on_device_ ? ye_.data() : back_.data(), slot_.as<std::int32_t>(), weight_.as<float>(), routed_.data(), plan_.tokens,
                model_.topk, model_.hidden, s);
}

void StdBlock::shared(Stream s) {
  const std::int64_t Is = inter_shared(), N = plan_.tokens, H = model_.hidden;
  if (Is == 0) return;
  if (fp8_shared_) {  // one expert over every token
    fp8_shared_->mlp(x_, s_act_.data(), shared_out_.data(), {N}, s);
  } else {
    DenseOps& o = ops_->dense();
    o.linear(x_, w_s13_.data(), s_gu_.data(), {.m = N, .n = 2 * Is, .k = H, .lda = H, .ldw = H, .ldc = 2 * Is}, false, s);
    ops_->glu(s_gu_.data(), s_act_.data(), N, Is, model_.activation, s);
    o.linear(s_act_.data(), w_s2_.data(), shared_out_.data(), {.m = N, .n = H, .k = Is, .lda = Is, .ldw = Is, .ldc = H},
             false, s);
  }
  if (model_.shared.gate) {
    ops_->logits(x_, w_sgate_.data(), s_gate_.as<float>(), N, H, 1, s);
    ops_->gate_scale(shared_out_.data(), s_gate_.as<float>(), N, H, s);
  }
}

void StdBlock::finish(void* out, Stream s) {
  const auto n = plan_.tokens * model_.hidden;
  if (inter_shared() > 0)
    ops_->dense().add(routed_.data(), shared_out_.data(), out, n, s);
  else
    ep_.device().copy(out, routed_.data(), static_cast<std::size_t>(n) * act_size_, s);
}

void StdBlock::forward(const void* x, void* out, Stream s) {
  set_input(x);
  if (device_path()) {  // EP 1 on CUDA: no host synchronisation (moe/standard/std_block_device.cpp)
    for (const auto* name : {"router", "dispatch_permute", "expert_compute", "weighted_sum", "shared_experts"})
      run_component(name, s);
    finish(out, s);
    return;
  }
  for (const auto* name : kSteps) run_component(name, s);
  finish(out, s);
}

bool StdBlock::has_component(std::string_view name) {
  return std::find(std::begin(kSteps), std::end(kSteps), name) != std::end(kSteps);
}

void StdBlock::set_copies(const std::string& component, int k) {
  LB_CHECK(k >= 0, "a component runs 0 or more times");
  LB_CHECK(component.empty() || has_component(component), "set_copies: not a component of the standard block");
  copied_ = component;
  copies_ = component.empty() ? 1 : k;
}

double StdBlock::expert_tiles() {
  double t = 0;
  for (const auto n : expert_rows_) t += static_cast<double>((n + kExpertTileRows - 1) / kExpertTileRows);
  return t;
}

std::vector<Component> StdBlock::components() const {
  using reports::Role;
  const double N = double(plan_.tokens), H = double(model_.hidden), E = double(model_.experts);
  const double k = double(model_.topk), I = double(model_.moe_intermediate), Is = double(inter_shared());
  const double a = double(act_size_), P = double(plan_.world), S = double(send_rows_), R = double(recv_rows_);
  const double bus = (P - 1) / P;  // nccl-tests' all-to-all factor
  const std::string total = "whole_layer";
  auto path = [this](const char* c) { return ops_->path(c); };
  const bool fp8 = plan_.dispatch == DispatchPrecision::fp8;
  const double drow = double(dispatch_row_bytes()), crow = double(combine_row_bytes());
  std::string permute_path = path("dispatch_permute"), dispatch_path = path("ep_dispatch");
  if (fp8) {
    permute_path += "; FP8 dispatch: rows quantized to e4m3 (one fp32 scale per 128 channels) as they are gathered";
    dispatch_path += fmt::format("; FP8 dispatch: one packed row per copy, {} e4m3 + {} scale bytes", model_.hidden,
                                 dispatch_row_bytes() - model_.hidden);
  }
  // The path that this shape takes and why (a --expert-table row, else the device's fastest path).
  std::string expert_path = path("expert_compute");
  if (ep_.backend() == Backend::cuda) {
    const auto [hh, ii, ee] = std::tuple{model_.hidden, model_.moe_intermediate, plan_.experts_local};
    expert_path += fmt::format("; this shape (hidden {}, intermediate {}, {} local experts) runs {}: {}", hh, ii, ee,
                               to_string(ops_->expert_path_for(hh, ii, ee)), ops_->expert_choice_reason(hh, ii, ee));
  }
  if (fp8_experts_) expert_path = fp8_experts_->path();
  if (fp8) expert_path = "FP8 dispatch: rows dequantized to the act type as they are reordered; " + expert_path;
  const std::string shared_path = fp8_shared_ ? fp8_shared_->path() + " (one expert over every token)" : path("shared_experts");
  std::vector<Component> t = {
      {"router", Role::part, total, {.flops = 2 * N * E * H}, false, path("router")},
      {"dispatch_permute", Role::part, total, {.bytes = S * H * a + S * drow}, true, permute_path},
      {"ep_counts_exchange", Role::communication, total, {.bytes = E * 8, .bus_factor = bus}, true, path("ep_counts_exchange")},
      {"ep_dispatch", Role::communication, total, {.bytes = S * drow, .bus_factor = bus}, false, dispatch_path},
      {"expert_compute", Role::part, total, {.flops = 6 * R * H * I}, false, expert_path},
      {"ep_combine", Role::communication, total, {.bytes = R * crow, .bus_factor = bus}, false, path("ep_combine")},
      {"weighted_sum", Role::part, total, {.bytes = (N * k * H + N * H) * a}, false, path("weighted_sum")},
  };
  if (Is > 0)
    t.push_back({"shared_experts", Role::part, total, {.flops = 6 * N * H * Is + (model_.shared.gate ? 2 * N * H : 0)},
                 false, shared_path});
  for (auto& c : t) {
    c.allows = {.replicated = true, .removed = true, .delayed = true};
    if (c.name == "expert_compute" && fp8_experts_) c.precision = std::string(to_string(expert_precision()));
    if (c.name == "shared_experts" && fp8_shared_) c.precision = std::string(to_string(shared_precision()));
  }
  t.push_back({total, Role::total, "", {}, true, ""});
  return device_path() ? device_table(std::move(t)) : t;
}

void StdBlock::run_component(std::string_view name, Stream s) {
  if (device_path() && (name == "dispatch_permute" || name == "expert_compute")) {
    step(name, s, [&] { run_device_component(name, s); });
    return;
  }
  if (device_path() && (name == "ep_counts_exchange" || name == "ep_dispatch" || name == "ep_combine"))
    run_device_component(name, s);  // throws: one rank exchanges nothing
  else if (name == "router") step(name, s, [&] { route(s); });
  else if (name == "dispatch_permute") step(name, s, [&] { dispatch_permute(s); });
  else if (name == "ep_counts_exchange") step(name, s, [&] { counts_exchange(s); });
  else if (name == "ep_dispatch") step(name, s, [&] { dispatch(s); });
  else if (name == "expert_compute") step(name, s, [&] { experts(s); });
  else if (name == "ep_combine") step(name, s, [&] { combine(s); });
  else if (name == "weighted_sum") step(name, s, [&] { weighted_sum(s); });
  else if (name == "shared_experts") step(name, s, [&] { shared(s); });
  else throw Error(fmt::format("the standard MoE block has no component '{}'", name));
}

std::vector<std::int32_t> StdBlock::routed_ids() {
  return ep_.device().download<std::int32_t>(idx_.data(), static_cast<std::size_t>(plan_.tokens * model_.topk));
}
std::vector<float> StdBlock::routed_weights() {
  return ep_.device().download<float>(weight_.data(), static_cast<std::size_t>(plan_.tokens * model_.topk));
}

}  // namespace layerbench::moe
