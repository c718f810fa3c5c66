#include "bench/attn/advise.hpp"

#include "attention/advise_model.hpp"
#include "harness/main.hpp"

#include "attention/kernels.hpp"
#include "attention/plan.hpp"
#include "attention/reference.hpp"
#include "collectives/error.hpp"
#include "common/cli/progress.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <set>

namespace layerbench::attention {
namespace {

// One rank's local work of topology t (SP rank 0: region 0, Ring rank 0) on this device: the
// attention of every step (its kernel calls, no transfers), the one LSE merge after the last step,
// and the pad/pack copies.
struct LocalBench {
  Device& dev;
  Kernels& k;
  harness::Runner& runner;
  std::vector<reports::Measurement>& results;

  Interval timed(const std::string& name, const std::string& group, const std::function<void(Stream)>& body) {
    reports::Measurement m = runner.time(name, body, harness::Clock::device);
    m.group = group;
    m.role = reports::Role::probe;
    const Interval x = interval_of(m);
    results.push_back(std::move(m));
    return x;
  }

  // Random values, not a constant: on a power-capped GPU constant inputs draw less power, run at
  // higher clocks and time faster than real data (seen: 18.7 ms against 21.4 ms on random data).
  Buffer filled(std::size_t bytes) {
    bytes = std::max<std::size_t>(bytes, 16);
    Buffer b = dev.alloc(bytes);
    if (pattern.empty()) {
      pattern.resize(std::size_t{1} << 21);  // 4 MiB of unit-variance bf16, repeated
      for (std::size_t i = 0; i < pattern.size(); ++i)
        pattern[i] = float_to_bf16_bits(random_value(20261201, 9, i, DType::bf16));
    }
    const std::size_t chunk = pattern.size() * sizeof(std::uint16_t);
    for (std::size_t off = 0; off < bytes; off += chunk)
      dev.copy_from_host(b.as<unsigned char>() + off, pattern.data(), std::min(chunk, bytes - off), dev.compute_stream());
    dev.synchronize(dev.compute_stream());
    return b;
  }
  std::vector<std::uint16_t> pattern;

  LocalTimes run(const Topology& t, const Problem& p) {
    const RankLayout l = rank_layout(t, p, 0, 0);
    const LocalPlan plan = plan_local_attention(p, l);
    const int hpad = t.padded_heads(p.heads), hl = hpad / t.ulysses;
    const int hkvl = (p.kv() == p.heads ? hpad : p.kv()) / t.ulysses;
    const LocalGeometry g{p.batch, l.query_rows, hl, hkvl, p.head_dim, p.dtype,
                          static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.head_dim)))};
    const std::size_t e = dtype_size(p.dtype), B = static_cast<std::size_t>(p.batch),
                      D = static_cast<std::size_t>(p.head_dim);
    const auto rows = [&](long long n, int h) { return static_cast<std::size_t>(n) * B * static_cast<std::size_t>(h) * D; };
    const long long keys0 = p.cached_kv + p.text_tokens + l.superblock;
    Buffer q = filled(rows(l.query_rows, hl) * e), o = filled(rows(l.query_rows, hl) * e);
    Buffer k0 = filled(rows(keys0, hkvl) * e), v0 = filled(rows(keys0, hkvl) * e);
    Buffer k1, v1, part, lse;
    if (t.ring > 1) {
      k1 = filled(rows(l.superblock, hkvl) * e);
      v1 = filled(rows(l.superblock, hkvl) * e);
    }
    if (!plan.direct) {  // every call's partial output and LSE (merged once, at the end)
      part = filled(partial_elems(plan, g) * e);
      lse = filled(lse_elems(plan, g) * 4);
    }
    LocalBuffers b;
    b.q = q.data();
    b.k[0] = k0.data();
    b.v[0] = v0.data();
    b.k[1] = t.ring > 1 ? k1.data() : nullptr;
    b.v[1] = t.ring > 1 ? v1.data() : nullptr;
    b.o = o.data();
    b.o_part = part.data();
    b.lse_part = lse.as<float>();
    std::set<std::tuple<long long, long long, long long>> seen;
    for (const auto& c : plan.calls)
      if (seen.insert({c.request, c.nq, c.nk}).second) k.prepare(call_shape(c, g), !plan.direct);
    dev.synchronize(dev.compute_stream());

    const std::string group = fmt::format("{}/S={}", t.label, p.seq);
    LocalTimes lt;
    lt.source = "timed on this device";
    lt.attention = timed("local_attention", group, [&](Stream s) {
      for (int step = 0; step < t.ring; ++step) run_local_step(k, plan, step, g, b, s);
      end_local_attention(k, plan, g, b, s);
    });
    if (t.ring > 1) {  // step 0 (with joint / cached keys) and a later step (one superblock)
      const Interval s0 = timed("local_attention_step0", group, [&](Stream s) { run_local_step(k, plan, 0, g, b, s); });
      const Interval s1 = timed("local_attention_step1", group, [&](Stream s) { run_local_step(k, plan, 1, g, b, s); });
      lt.step.assign(static_cast<std::size_t>(t.ring), s1);
      lt.step[0] = s0;
      lt.merge = timed("local_attention_merge", group, [&](Stream s) { end_local_attention(k, plan, g, b, s); });
    }
    lt.pad_pack = pad_pack(t, p, hl, hkvl, group);
    return lt;
  }

  // The copies SpAttention makes around its collectives (none in the zero-copy case).
  Interval pad_pack(const Topology& t, const Problem& p, int hl, int hkvl, const std::string& group) {
    if (t.ulysses == 1 && t.ring == 1 && p.batch == 1 && p.text_tokens == 0 && p.cached_kv == 0 && !p.masked() &&
        !p.packed())
      return {};
    const std::size_t e = dtype_size(p.dtype);
    const long long sl = shard_lengths(t, p.seq).front(), u = t.ulysses;
    const auto n = [&](long long r, int h) { return static_cast<std::size_t>(r * p.batch * h * p.head_dim) * e; };
    Buffer in_q = filled(n(sl, p.heads)), in_kv = filled(n(sl, p.kv())), send_q = filled(n(u * sl, hl)),
           send_kv = filled(n(u * sl, hkvl)), out = filled(n(sl, p.heads));
    const SliceShape qs{p.batch, sl, p.heads, p.head_dim, hl}, kvs{p.batch, sl, p.kv(), p.head_dim, hkvl};
    const long long lt = p.text_tokens;
    Buffer jq, jkv, jq_dst, jkv_dst, jout;
    if (lt > 0) {
      jq = filled(n(lt, p.heads));
      jkv = filled(n(lt, p.kv()));
      jq_dst = filled(n(u * lt, hl));
      jkv_dst = filled(n(lt, hkvl));
      jout = filled(n(lt, p.heads));
    }
    dev.synchronize(dev.compute_stream());
    return timed("local_pad_pack", group, [&](Stream s) {
      k.pack_heads(in_q.data(), send_q.data(), qs, 0, static_cast<int>(u), s);
      for (int i = 0; i < 2; ++i) k.pack_heads(in_kv.data(), send_kv.data(), kvs, 0, static_cast<int>(u), s);
      if (lt > 0) {
        k.pack_heads(jq.data(), jq_dst.data(), {p.batch, lt, p.heads, p.head_dim, hl}, 0, 1, s);
        for (int i = 0; i < 2; ++i) k.pack_heads(jkv.data(), jkv_dst.data(), {p.batch, lt, p.kv(), p.head_dim, hkvl}, 0, 1, s);
        k.unpack_heads(jq_dst.data(), jout.data(), {p.batch, lt, p.heads, p.head_dim, hl}, static_cast<int>(u), s);
      }
      k.unpack_heads(send_q.data(), out.data(), qs, static_cast<int>(u), s);
    });
  }
};

// SP rank 0's local plan as timed (so that another implementation can run the same calls):
// buffers' rows and heads, and each call as [step, request, q0, nq, key_buffer, k0, nk].
nlohmann::json plan_json(const Topology& t, const Problem& p) {
  const RankLayout l = rank_layout(t, p, 0, 0);
  const LocalPlan plan = plan_local_attention(p, l);
  const int hpad = t.padded_heads(p.heads);
  nlohmann::json calls = nlohmann::json::array();
  for (const auto& c : plan.calls) calls.push_back({c.step, c.request, c.q0, c.nq, c.key_buffer, c.k0, c.nk});
  return {{"query_rows", l.query_rows}, {"keys0", p.cached_kv + p.text_tokens + l.superblock},
          {"superblock", l.superblock}, {"local_heads", hpad / t.ulysses},
          {"local_kv_heads", (p.kv() == p.heads ? hpad : p.kv()) / t.ulysses}, {"direct", plan.direct},
          {"slots", plan.slots}, {"calls", calls}};
}

// Multiply-adds of rank 0's local attention calls (all steps, or one step) of topology t: the
// declared work by which a calibration at a shorter sequence is scaled.
double attention_work(const Topology& t, const Problem& p, int step = -1) {
  const LocalPlan plan = plan_local_attention(p, rank_layout(t, p, 0, 0));
  double w = 0;
  for (const auto& c : plan.calls)
    if (step < 0 || c.step == step) w += double(c.nq) * double(c.nk);
  const int hpad = t.padded_heads(p.heads);
  return w * double(p.batch) * double(hpad / t.ulysses) * double(p.head_dim) * 4.0;  // QK^T and PV, 2 FLOP each
}

// The calibration of (t, p) at a sequence the backend handles within `budget_s` (at an assumed
// rate): p itself, or p with a shorter sequence (halved until it fits and still serves t) when
// its lengths are plain (no packed requests, masks or cached keys).
Problem calibration_problem(const Topology& t, const Problem& p, int gpus, double rate, double budget_s, double calls) {
  Problem c = p;
  if (!p.cu_seqlens.empty() || !p.joint_valid.empty() || !p.image_valid.empty() || p.cached_kv > 0) return c;
  const long long unit = 8LL * gpus;
  while (calls * attention_work(t, c) / rate > budget_s && c.seq / 2 >= 4 * unit) {
    Problem half = c;
    half.seq = c.seq / 2 / unit * unit;
    try {
      check_workload(t, half, gpus);
    } catch (const UsageError&) {
      break;
    }
    c = half;
  }
  return c;
}

LocalTimes scaled_local(LocalTimes lt, const Topology& t, const Problem& full, const Problem& cal) {
  if (cal.seq == full.seq) return lt;
  const double rows = double(full.seq) / double(cal.seq);
  lt.attention = reports::scaled(lt.attention, attention_work(t, full) / attention_work(t, cal));
  for (std::size_t s = 0; s < lt.step.size(); ++s)
    lt.step[s] = reports::scaled(lt.step[s], attention_work(t, full, int(s)) / attention_work(t, cal, int(s)));
  lt.merge = reports::scaled(lt.merge, rows);
  lt.pad_pack = reports::scaled(lt.pad_pack, rows);
  lt.source += fmt::format(" at S = {} instead of {}, scaled by declared work (attention x{:.3g} by its calls' "
                           "multiply-adds, merge and pad_pack x{:.3g} by rows; --advise-budget-s to change)",
                           cal.seq, full.seq, attention_work(t, full) / attention_work(t, cal), rows);
  return lt;
}

}  // namespace

int run_advise(harness::Context& ctx, const BenchConfig& c) {
  Communicator& world = ctx.world;
  if (world.size() != 1) throw UsageError("--advise runs on one rank (it times one rank's local work on this device)");
  if (c.gpus < 1) throw UsageError("--advise needs --gpus N (the machine the advice is for)");
  CollModel coll;
  coll.rescale = c.coll_rescale;
  for (const auto& f : c.coll_files) coll.add(reports::load_result_file(f));
  if (coll.empty() && c.gpus > 1) throw UsageError("--advise for more than one GPU needs --coll FILE (layerbench-coll JSON)");
  std::map<std::string, LocalTimes> table;
  if (!c.local_table.empty()) table = local_times_from(reports::load_result_file(c.local_table));

  const bool gpu = world.backend() == Backend::cuda;
  const DType dtype = parse_dtype(c.dtype);
  auto kernels = gpu ? make_cuda_kernels(dtype, c.sdpa) : make_host_kernels(dtype);
  harness::Runner runner(world, harness::timing_from(c.common));
  std::vector<reports::Measurement> results;
  LocalBench bench{world.device(), *kernels, runner, results, {}};

  std::vector<Topology> candidates =
      c.topologies.empty() || c.topologies == "all" ? all_topologies(c.gpus, c.heads) : parse_topologies(c.topologies);
  std::string md;
  nlohmann::json advice = nlohmann::json::array();
  // What will be timed, at which sequence, and how long it should take, before any of it runs.
  const double rate = gpu ? 3e14 : 2e9;  // assumed FLOP/s of the local attention (for the estimate only)
  const double budget = c.advise_budget_s > 0 ? c.advise_budget_s : (gpu ? 60.0 : 3.0);
  const double calls = runner.options().warmup + runner.options().iterations + 1.0;
  std::map<std::string, std::pair<Problem, double>> plan_of;  // group -> calibration problem, estimate (s)
  std::vector<double> weights;
  for (long long seq : c.seqs)
    for (const auto& t : candidates) {
      const std::string group = fmt::format("{}/S={}", t.label, seq);
      try {
        check_case(c, t, c.gpus);
      } catch (const UsageError&) {
        continue;
      }
      const Problem full = problem_of(c, seq);
      check_collectives(t, full, coll);  // a group size no sweep has: exit 2 before any timing
      if (table.count(group)) continue;
      const Problem cal = calibration_problem(t, full, c.gpus, rate, budget, calls * (t.ring > 1 ? 2 : 1));
      const double est = calls * (t.ring > 1 ? 2 : 1) * attention_work(t, cal) / rate;
      plan_of[group] = {cal, est};
      weights.push_back(std::max(est, 1e-3));
    }
  if (ctx.is_root() && !plan_of.empty()) {
    double total = 0;
    int shrunk = 0;
    for (const auto& [g, pe] : plan_of) {
      total += pe.second;
      shrunk += std::to_string(pe.first.seq) != g.substr(g.rfind("=") + 1);
    }
    std::fprintf(stderr,
                 "layerbench-attn --advise: %zu topologies to time on %s, estimated %s at an assumed %.3g FLOP/s; "
                 "%d timed at a shorter sequence and scaled by declared work (--advise-budget-s %g per topology: "
                 "lower it to shrink; --local-table FILE skips the timing)\n",
                 plan_of.size(), world.device().name().c_str(), cli::format_duration(total).c_str(), rate, shrunk,
                 budget);
    std::fflush(stderr);
  }
  cli::Progress progress("advise calibration", weights.size(), weights);
  for (long long seq : c.seqs) {
    const Problem p = problem_of(c, seq);
    std::vector<Prediction> preds;
    std::string invalid;
    for (const auto& t : candidates) {
      try {
        check_case(c, t, c.gpus);
      } catch (const UsageError& e) {
        invalid += fmt::format("- {}: {}\n", t.label, e.what());
        continue;
      }
      const std::string group = fmt::format("{}/S={}", t.label, seq);
      const auto it = table.find(group);
      LocalTimes local;
      if (it != table.end()) {
        local = it->second;
      } else {
        const Problem& cal = plan_of.at(group).first;
        local = scaled_local(bench.run(t, cal), t, p, cal);
        progress.step(group);
      }
      Prediction pr = predict(t, p, local, coll, c.margin);
      pr.notes.push_back("local work: " + local.source);
      nlohmann::json a = reports::to_json(pr);
      a.update({{"seq", seq}, {"topology", t.label}, {"local_plan", plan_json(t, p)}});
      advice.push_back(std::move(a));
      preds.push_back(std::move(pr));
    }
    const std::string title = fmt::format("Advice for {} GPUs: {}S = {}, {}, D = {}, B = {}", c.gpus,
                                          c.model.empty() ? std::string() : c.model + ", ", seq, p.describe(),
                                          p.head_dim, p.batch);
    md += preds.empty() ? fmt::format("### {}\n\nno topology serves it.\n", title) : advice_markdown(title, preds, c.margin);
    if (!invalid.empty()) md += fmt::format("\nTopologies of {} GPUs that do not serve it:\n{}", c.gpus, invalid);
    if (!c.seq_formula.empty()) md += "\nsequence: " + c.seq_formula + "\n";
    md += fmt::format("\nLocal work timed on: {} ({}).\n\n", world.device().name(), kernels->describe());
  }
  progress.finish();
  if (ctx.is_root()) std::fputs(md.c_str(), harness::text_stream(c.common));
  const nlohmann::json config = {{"advise", true}, {"advise_budget_s", budget}, {"gpus", c.gpus}, {"model", c.model}, {"seqs", c.seqs},
                                 {"heads", c.heads}, {"kv_heads", c.kv_heads}, {"head_dim", c.head_dim},
                                 {"text_tokens", c.text_tokens}, {"coll", c.coll_files}, {"coll_rescale", c.coll_rescale},
                                 {"local_table", c.local_table}, {"margin", c.margin},
                                 {"sequence_formula", c.seq_formula}, {"batch", c.batch},
                                 {"joint_position", c.joint}, {"joint_lengths", c.joint_lengths},
                                 {"image_lengths", c.image_lengths}, {"cached_kv", c.cached_kv},
                                 {"cu_seqlens_used", problem_of(c, c.seqs.front()).cu_seqlens},
                                 {"workload", problem_of(c, c.seqs.front()).describe()}};
  const auto doc = harness::make_document(ctx, runner, config, results, {{"advice", advice}});
  harness::write_outputs(ctx, c.common, doc, results, md);
  return 0;
}

}  // namespace layerbench::attention
