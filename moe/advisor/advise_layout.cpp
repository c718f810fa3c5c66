#include "moe/advisor/advise_layout.hpp"

#include "common/usage.hpp"
#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace layerbench::moe {

using reports::Interval;

Geometry magi2_geometry(const Model& m) {
  Geometry g;
  g.hidden = m.hidden;
  g.heads = m.moe_heads;
  g.experts = m.experts;
  g.topk = m.topk;
  g.intermediate = m.moe_intermediate;
  g.scale = m.router.scale;
  return g;
}

std::vector<AdviceLayout> advice_layouts(const Model& m, int gpus, std::vector<std::string>* rejected) {
  if (gpus < 1) throw UsageError("--advise needs --gpus N >= 1 (the machine the advice is for)");
  std::vector<AdviceLayout> out;
  auto reject = [&](const std::string& label, const std::string& why) {
    if (rejected) rejected->push_back(label + ": " + why);
  };
  if (m.block == Block::magi2_multi_head) {
    out.push_back({fmt::format("sp{}", gpus), m.block, 1, 1, Layout::sp, gpus});
    const std::string tp = fmt::format("tp{}", gpus);
    if (m.moe_heads % gpus != 0)
      reject(tp, fmt::format("{} MoE heads do not divide over {} ranks", m.moe_heads, gpus));
    else if (m.moe_intermediate % gpus != 0 || m.hidden % gpus != 0)
      reject(tp, fmt::format("hidden {} and intermediate {} must divide over {} ranks", m.hidden, m.moe_intermediate, gpus));
    else if (gpus > 1)
      out.push_back({tp, m.block, 1, 1, Layout::tp, gpus});
  } else {
    const std::int64_t Is = m.shared.intermediate();
    for (int t = 1; t <= gpus; ++t) {
      if (gpus % t != 0) continue;
      const int e = gpus / t;
      const std::string label = t == 1 ? fmt::format("ep{}", e) : fmt::format("ep{}xtp{}", e, t);
      if (m.experts % e != 0)
        reject(label, fmt::format("{} experts do not divide over EP {}", m.experts, e));
      else if (m.moe_intermediate % t != 0 || Is % t != 0)
        reject(label, fmt::format("expert intermediate {} (shared {}) does not divide over TP {}", m.moe_intermediate, Is, t));
      else
        out.push_back({label, m.block, e, t, Layout::sp, gpus});
    }
  }
  if (out.empty()) {
    std::string why;
    if (rejected)
      for (const auto& r : *rejected) why += "; " + r;
    throw UsageError(fmt::format("--gpus {}: no layout of {} divides over {} GPUs{}", gpus, m.name, gpus, why));
  }
  return out;
}

StdShape std_shape(const Model& m, const AdviceLayout& l, std::int64_t tokens_per_gpu, double act_bytes) {
  StdShape s;
  s.hidden = m.hidden;
  s.experts = m.experts;
  s.topk = m.topk;
  s.experts_local = m.experts / l.ep;
  s.inter = m.moe_intermediate / l.tp;
  s.shared_inter = m.shared.intermediate() / l.tp;
  s.tokens = tokens_per_gpu * l.tp;
  s.shared_gate = m.shared.gate;
  s.act_bytes = act_bytes;
  return s;
}

std::map<std::string, LocalWork> std_local_work(const StdShape& s) {
  const double N = double(s.tokens), H = double(s.hidden), E = double(s.experts), k = double(s.topk);
  const double I = double(s.inter), Is = double(s.shared_inter), a = s.act_bytes, R = N * k;
  std::map<std::string, LocalWork> w;
  w["router"] = {.flops = 2 * N * E * H};
  w["dispatch_permute"] = {.bytes = 2 * R * H * a};
  w["expert_compute"] = {.flops = 6 * R * H * I};
  w["weighted_sum"] = {.bytes = (R * H + N * H) * a};
  w["ep_dispatch"] = {.bytes = R * H * a};  // one rank: the all-to-allv is a copy to itself
  w["ep_combine"] = {.bytes = R * H * a};
  if (Is > 0) w["shared_experts"] = {.flops = 6 * N * H * Is + (s.shared_gate ? 2 * N * H : 0)};
  return w;
}

Plan magi2_plan(const Model& m, const AdviceLayout& l, std::int64_t tokens_per_gpu) {
  const int P = l.ranks;
  if (l.magi == Layout::sp)
    return make_plan(magi2_geometry(m), Layout::sp, 0, P, std::vector<std::int64_t>(static_cast<std::size_t>(P), tokens_per_gpu));
  return make_plan(magi2_geometry(m), Layout::tp, 0, P, {tokens_per_gpu * P});
}

std::map<std::string, LocalWork> magi2_local_work(const Plan& p, double act_bytes) {
  // As moe/magi2/layer_table.cpp declares them; pre_norm by its bytes (read and written once).
  const double N = double(p.local_tokens), H = double(p.hidden), Hin = double(p.hidden_in_local);
  const double Il = double(p.inter_local), dh = double(p.d_head);
  const double assignments = double(p.moe_tokens * p.heads_valid * p.topk);
  std::map<std::string, LocalWork> w;
  w["pre_norm"] = {.bytes = 2 * N * H * act_bytes};
  w["split_linear"] = {.flops = 2 * N * Hin * H};
  w["routing"] = {.flops = 2 * double(p.moe_tokens * p.heads_valid) * double(p.experts) * dh};
  w["local_expert_compute"] = {.flops = assignments * 2 * 3 * double(p.inter) * dh};
  w["merge_linear"] = {.flops = 2 * N * H * Hin};
  w["shared_branch"] = {.flops = 2 * N * 4 * Il * H + 2 * N * H * 2 * Il};
  return w;
}

Imbalance imbalance_from_routing(const std::vector<std::int32_t>& ids, std::int64_t topk, std::int64_t experts, int ep,
                                 std::int64_t tokens_per_rank, int draws, std::uint64_t seed) {
  Imbalance r;
  const auto routed = static_cast<std::int64_t>(ids.size()) / topk;
  if (ep <= 1 || routed == 0) {
    r.source = ep <= 1 ? "one EP rank: no imbalance between ranks" : "no routed tokens";
    return r;
  }
  const std::int64_t need = tokens_per_rank * ep, per = experts / ep;
  const std::int64_t windows = routed / need;
  const bool exact = windows >= 1;
  const int n = exact ? static_cast<int>(std::min<std::int64_t>(windows, draws)) : draws;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> pick(0, routed - 1);
  std::vector<double> factors;
  std::vector<double> load(static_cast<std::size_t>(ep));
  for (int d = 0; d < n; ++d) {
    std::fill(load.begin(), load.end(), 0.0);
    for (std::int64_t t = 0; t < need; ++t) {
      const std::int64_t src = exact ? d * need + t : pick(rng);
      for (std::int64_t j = 0; j < topk; ++j) load[static_cast<std::size_t>(ids[static_cast<std::size_t>(src * topk + j)] / per)] += 1;
    }
    factors.push_back(*std::max_element(load.begin(), load.end()) / (double(need) * double(topk) / ep));
  }
  const auto s = stats::summarize(factors);
  r.factor = {s.median, n > 1 ? s.p10 : s.median, n > 1 ? s.p90 : s.median};
  r.source = exact ? fmt::format("busiest of {} EP ranks / mean over {} windows of {} really routed tokens ({} routed)", ep,
                                 n, need, routed)
                   : fmt::format("busiest of {} EP ranks / mean over {} bootstrap resamples of {} tokens from {} really "
                                 "routed ones (fewer than the layout's {}: the resampling adds the sample's own noise)",
                                 ep, n, need, routed, need);
  return r;
}

void read_calibration(const reports::ResultFile& f, std::map<std::string, Calibration>& cals,
                      std::map<std::string, Imbalance>& imbs) {
  for (const auto& m : f.results) {
    if (m.group.rfind("calibration/", 0) != 0 || m.samples_ms.empty()) continue;
    const std::string shrink = m.params.value("shrink", std::string());
    // The declared work; files of 2026-12-03 carried it in params (work_flops, work_bytes).
    const LocalWork w = m.work.empty() ? LocalWork{m.params.value("work_flops", 0.0), m.params.value("work_bytes", 0.0)}
                                       : LocalWork{m.work.flops, m.work.bytes};
    cals[m.group][m.name] = {reports::interval_of(m), w,
                             fmt::format("{} ({}){}", f.path, m.params.value("shape", std::string()),
                                         shrink.empty() ? "" : "; " + shrink)};
  }
  if (f.config.contains("imbalance"))
    for (const auto& [label, v] : f.config["imbalance"].items())
      imbs[label] = {{v.at("median").get<double>(), v.at("lo").get<double>(), v.at("hi").get<double>()},
                     v.at("source").get<std::string>() + " (from " + f.path + ")"};
}

namespace {

// A local component at the layout: the calibrated time scaled by the ratio of declared work.
struct Assembler {
  reports::Prediction pr;
  const Calibration& cal;
  bool probe = false;  // check_collectives: local parts are placeholders, only the collectives are asked
  void note(const std::string& n) {
    if (std::find(pr.notes.begin(), pr.notes.end(), n) == pr.notes.end()) pr.notes.push_back(n);
  }
  void add(const std::string& name, const Interval& x) {
    if (x.median > 0) pr.parts.emplace_back(name, x);
  }
  Interval local(const std::string& name, const LocalWork& w, double extra = 1.0) {
    if (probe) return {1, 1, 1};
    const auto it = cal.find(name);
    if (it == cal.end()) throw std::logic_error("no calibration of " + name);
    const double f = it->second.work.amount() > 0 ? w.amount() / it->second.work.amount() : 1.0;
    note(fmt::format("{}: {} (x{:.4g} by declared work)", name, it->second.source, f));
    return reports::scaled(it->second.t, f * extra);
  }
};

reports::Prediction assemble(const AdviceLayout& l, const AdviceInputs& in, const Calibration& cal, const Imbalance& imb,
                             bool probe) {
  const Model& m = *in.model;
  const ClusterCollModel& coll = *in.coll;
  Assembler a{{}, cal, probe};
  a.pr.label = l.label;
  std::string how;
  auto comm = [&](const std::string& name, const std::string& op, double bytes, int n, int stride, double times = 1.0) {
    if (n <= 1) return;
    const Interval t = reports::scaled(coll.time(op, bytes, n, stride, &how), times);
    a.note(fmt::format("{}: {} of {:.4g} bytes{}; {}", name, op, bytes, times != 1.0 ? fmt::format(" (x{:g})", times) : "", how));
    a.add(name, t);
  };
  if (l.block == Block::standard) {
    const StdShape s = std_shape(m, l, in.tokens_per_gpu, in.act_bytes);
    const auto w = std_local_work(s);
    const double rows = double(s.tokens * s.topk), row_bytes = double(s.hidden) * in.act_bytes;
    // The router at the model's own expert count when it was timed so (the one-rank block of a
    // high-EP layout scores only its few local experts: fixed costs would be scaled with FLOPs).
    a.add("router", cal.count("router_full") ? a.local("router_full", w.at("router")) : a.local("router", w.at("router")));
    if (l.tp > 1) comm("tp_gather", "all_gather", double(s.tokens) * row_bytes, l.tp, 1);
    if (l.ep > 1) {
      // The per-expert counts to every destination, then the host read that sizes the dispatch.
      comm("ep_counts_exchange", "all_to_all", 8.0 * double(m.experts), l.ep, l.tp);
      a.pr.parts.back().second += a.local("ep_counts_exchange", {});
      a.add("dispatch_permute", a.local("dispatch_permute", w.at("dispatch_permute")));
    }
    if (l.ep == 1) {  // one EP rank: the block still permutes, reads its counts back and copies to itself
      a.add("dispatch_permute", a.local("dispatch_permute", w.at("dispatch_permute")));
      if (cal.count("ep_counts_exchange")) a.add("ep_counts_exchange", a.local("ep_counts_exchange", {}));
    }
    // The all-to-allv is bound by the busiest receiver: mean rows x the imbalance at this EP.
    const auto a2a = [&](const std::string& name, double copy_bytes) {
      if (l.ep <= 1) {
        if (cal.count(name)) a.add(name, a.local(name, w.at(name)));
        else a.note(name + ": a copy to itself at EP 1, not in this calibration (left out)");
        return;
      }
      const Interval base = coll.time("all_to_all", rows * copy_bytes * imb.factor.median, l.ep, l.tp, &how);
      const Interval lo = coll.time("all_to_all", rows * copy_bytes * imb.factor.lo, l.ep, l.tp, nullptr);
      const Interval hi = coll.time("all_to_all", rows * copy_bytes * imb.factor.hi, l.ep, l.tp, nullptr);
      a.note(fmt::format("{}: all_to_allv of {:.4g} rows x {:g} bytes (busiest rank: mean {:g} x imbalance {:.3f} "
                         "[{:.3f}, {:.3f}]); {}",
                         name, rows * imb.factor.median, copy_bytes, rows, imb.factor.median, imb.factor.lo,
                         imb.factor.hi, how));
      a.add(name, {base.median, lo.lo, hi.hi});
    };
    a2a("ep_dispatch", in.dispatch_row_bytes > 0 ? in.dispatch_row_bytes : row_bytes);
    Interval ex = a.local("expert_compute", w.at("expert_compute"));
    ex = {ex.median * imb.factor.median, ex.lo * imb.factor.lo, ex.hi * imb.factor.hi};
    a.note(fmt::format("expert_compute: the busiest rank's rows, imbalance {:.3f} [{:.3f}, {:.3f}] ({})", imb.factor.median,
                       imb.factor.lo, imb.factor.hi, imb.source));
    a.add("expert_compute", ex);
    a2a("ep_combine", row_bytes);
    a.add("weighted_sum", a.local("weighted_sum", w.at("weighted_sum")));
    if (w.count("shared_experts")) a.add("shared_experts", a.local("shared_experts", w.at("shared_experts")));
    if (l.tp > 1) {
      // Reduce-scatter of the partial outputs: half an all-reduce's traffic at the same buffer.
      comm("tp_reduction", "all_reduce", double(s.tokens) * row_bytes, l.tp, 1, 0.5);
      a.note("tp_reduction: a reduce-scatter costed as half the all-reduce of the same buffer (its bus traffic)");
    }
  } else {
    const Plan p = magi2_plan(m, l, in.tokens_per_gpu);
    const auto w = magi2_local_work(p, in.act_bytes);
    const int P = l.ranks;
    const double a2a_bytes = double(p.local_tokens * p.heads_padded * p.d_head) * in.act_bytes;
    const double act = double(p.local_tokens * p.hidden) * in.act_bytes;
    a.add("pre_norm", a.local("pre_norm", w.at("pre_norm")));
    a.add("split_linear", a.local("split_linear", w.at("split_linear")));
    if (l.magi == Layout::sp) comm("ep_dispatch", "all_to_all", a2a_bytes, P, 1);
    a.add("routing", a.local("routing", w.at("routing")));
    a.add("local_expert_compute", a.local("local_expert_compute", w.at("local_expert_compute")));
    a.note("local_expert_compute: every rank's experts see all tokens of its heads (equal loads by construction); the "
           "per-expert imbalance is inside the calibrated time (same rows per expert)");
    if (l.magi == Layout::sp) comm("ep_undispatch", "all_to_all", a2a_bytes, P, 1);
    a.add("merge_linear", a.local("merge_linear", w.at("merge_linear")));
    if (l.magi == Layout::tp) comm("tp_reduction", "all_reduce", act, P, 1);
    Interval shared = a.local("shared_branch", w.at("shared_branch"));
    if (l.magi == Layout::tp && P > 1) {
      shared += reports::scaled(coll.time("all_reduce", act, P, 1, &how), 2.0);
      a.note("shared_branch (TP): its two fc2 all-reduces of [N, hidden]; " + how);
    }
    a.add("shared_branch", shared);
  }
  for (const auto& [name, x] : a.pr.parts) a.pr.total += x;
  a.pr.total = reports::widened(a.pr.total, in.margin);
  return a.pr;
}

}  // namespace

reports::Prediction predict_layout(const AdviceLayout& l, const AdviceInputs& in, const Calibration& cal,
                                   const Imbalance& imb) {
  return assemble(l, in, cal, imb, false);
}

void check_collectives(const std::vector<AdviceLayout>& layouts, const AdviceInputs& in) {
  const Calibration none;
  for (const auto& l : layouts) (void)assemble(l, in, none, Imbalance{}, true);
}

std::string deciding_component(const reports::Prediction& best, const reports::Prediction* runner_up) {
  const auto largest = std::max_element(best.parts.begin(), best.parts.end(),
                                        [](const auto& x, const auto& y) { return x.second.median < y.second.median; });
  if (largest == best.parts.end()) return "";
  std::string out = fmt::format("{}: its largest part is {} ({:.3f} ms, {:.0f}% of the layer)", best.label, largest->first,
                                largest->second.median, 100 * largest->second.median / best.total.median);
  if (runner_up) {
    std::map<std::string, double> diff;
    for (const auto& [n, x] : runner_up->parts) diff[n] += x.median;
    for (const auto& [n, x] : best.parts) diff[n] -= x.median;
    const auto d = std::max_element(diff.begin(), diff.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
    if (d != diff.end())
      out += fmt::format("; against {} (+{:.3f} ms) the deciding component is {} ({:+.3f} ms there)", runner_up->label,
                         runner_up->total.median - best.total.median, d->first, d->second);
  }
  return out;
}

}  // namespace layerbench::moe
