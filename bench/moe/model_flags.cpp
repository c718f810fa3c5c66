// The model flags of layerbench-moe: --model, --hf-config, --list-models, --describe, the field
// overrides and --ep. The model is resolved once, when parsing completes: the preset (or the
// config file), then every field flag that was given, with its source recorded.
#include "bench/moe/model_flags.hpp"

#include "bench/moe/flag_scope.hpp"

#include "collectives/error.hpp"
#include "common/cli.hpp"

#include <fmt/format.h>

namespace layerbench::moe {

namespace {

// Flags whose value lives in the overrides (the MAGI-2 geometry flags keep their fields).
struct ModelFlagValues {
  std::string score, activation;
  std::string selection_bias, normalize, topk_before_score, shared_gate, group_score, precision;
  bool text_router_only = false;
  std::int64_t groups = 1, topk_groups = 1, shared_experts = 0, shared_intermediate = 0;
  double alpha = 1.702, limit = 7.0;
};

std::optional<bool> on_off(CLI::App& app, const char* name, const std::string& v) {
  if (!given(app, name)) return std::nullopt;
  if (v == "on" || v == "true" || v == "1") return true;
  if (v == "off" || v == "false" || v == "0") return false;
  throw UsageError(fmt::format("{} {}: expected on or off", name, v));
}

void resolve(CLI::App& app, RunConfig& c, const ModelFlagValues& f) {
  if (given(app, "--hf-config") && given(app, "--model"))
    throw UsageError("--model and --hf-config both name the model: give one");
  if (given(app, "--family") && c.hf_config.empty())
    throw UsageError("--family applies to --hf-config (how its keys are read); a preset has its family");
  ModelOverrides o;
  if (given(app, "--hidden")) o.hidden = c.geo.hidden;
  if (given(app, "--experts")) o.experts = c.geo.experts;
  if (given(app, "--topk")) o.topk = c.geo.topk;
  if (given(app, "--intermediate")) o.moe_intermediate = c.geo.intermediate;
  if (given(app, "--moe-heads")) o.moe_heads = c.geo.heads;
  if (given(app, "--moe-layers")) o.moe_layers = c.moe_layers;
  if (given(app, "--scale")) o.scale = c.geo.scale;
  if (given(app, "--router-score")) o.score = f.score;
  if (given(app, "--activation")) o.activation = f.activation;
  o.selection_bias = on_off(app, "--selection-bias", f.selection_bias);
  o.normalize = on_off(app, "--normalize", f.normalize);
  o.topk_before_score = on_off(app, "--topk-before-score", f.topk_before_score);
  o.shared_gate = on_off(app, "--shared-gate", f.shared_gate);
  if (given(app, "--groups")) o.groups = f.groups;
  if (given(app, "--topk-groups")) o.topk_groups = f.topk_groups;
  if (given(app, "--shared-experts")) o.shared_experts = f.shared_experts;
  if (given(app, "--shared-intermediate")) o.shared_intermediate = f.shared_intermediate;
  if (given(app, "--swiglu-alpha")) o.swiglu_alpha = f.alpha;
  if (given(app, "--swiglu-limit")) o.swiglu_limit = f.limit;
  if (given(app, "--group-score")) o.group_score = f.group_score;
  if (given(app, "--precision")) {
    parse_precision(f.precision, "--precision");  // an unknown spelling is named before the config is read
    o.precision = f.precision;
  }
  o.text_router_only = f.text_router_only;
  if (o.text_router_only && c.hf_config.empty())
    throw UsageError("--text-router-only applies to --hf-config (a config with per-modality routers)");
  // The config is read knowing which fields the flags settle: what it leaves unsaid is refused
  // unless a flag gives it.
  Model m = c.hf_config.empty() ? preset(c.model_name) : read_hf_config(c.hf_config, c.hf_family, o);
  if (o.moe_heads && m.block == Block::standard && *o.moe_heads != 1)
    throw UsageError(fmt::format("--moe-heads {}: MoE heads exist only in the MAGI-2 layer (--model magi-2)", *o.moe_heads));
  apply_overrides(m, o);
  if (m.shared.count > 0 && m.shared.size == 0) m.shared.size = m.moe_intermediate;
  if (m.topk > m.experts)  // named as the user gave them
    throw UsageError(fmt::format("{} {} exceeds {} {}", o.topk ? "--topk" : "topk", m.topk,
                                 o.experts ? "--experts" : "experts", m.experts));
  if (m.block == Block::magi2_multi_head && o.moe_intermediate && !o.shared_intermediate) {
    m.shared.size = m.moe_intermediate;  // one intermediate size for its experts and shared MLPs
    m.sources["shared_intermediate"] = "flag --intermediate (MAGI-2: one size)";
  }
  check_model(m);
  c.model = std::move(m);
  // The MAGI-2 layer's geometry mirrors the model.
  c.geo.hidden = c.model.hidden;
  c.geo.heads = c.model.moe_heads;
  c.geo.experts = c.model.experts;
  c.geo.topk = c.model.topk;
  c.geo.intermediate = c.model.moe_intermediate;
  c.geo.scale = c.model.router.scale;
  c.moe_layers = static_cast<int>(std::min<std::int64_t>(c.model.moe_layers, 10000));
  if (c.model.block == Block::magi2_multi_head && c.model.router.score != Score::sigmoid)
    throw UsageError("--router-score: the MAGI-2 multi-head layer routes with sigmoid scores only");
  if (c.model.block == Block::magi2_multi_head &&
      (c.model.activation.kind != Activation::swiglu_clamped || c.model.activation.alpha != 1.702 ||
       c.model.activation.limit != 7.0 || c.model.router.groups != 1 || c.model.router.topk_before_score ||
       !c.model.router.normalize || !c.model.router.selection_bias || c.model.shared.gate ||
       c.model.shared.count != 1 || c.model.shared.size != c.model.moe_intermediate))
    throw UsageError("the MAGI-2 multi-head layer has fixed router, activation and shared-branch semantics: "
                     "choose another --model (or --hf-config) for other families");
  check_flag_scope(app, c.model.block, c.model.name);
  if (c.ep > 0 && c.model.block == Block::standard) check_ep(c.model, c.ep);
}

}  // namespace

void add_model_flags(CLI::App& app, RunConfig& c) {
  auto f = std::make_shared<ModelFlagValues>();
  app.add_option("--model", c.model_name, "model preset (any case; see --list-models); default magi-2");
  app.add_option("--hf-config", c.hf_config, "a Hugging Face config.json (or its directory) to read the model from");
  app.add_option("--family", c.hf_family,
                 "with --hf-config: read the config with one family's semantics (deepseek, qwen, olmoe, mixtral, "
                 "gpt_oss, llama4, or a known model_type; fields = by its keys) instead of its model_type's");
  app.add_flag("--list-models", c.list_models, "print the presets and the config families read, then exit");
  app.add_flag("--describe", c.describe, "print the resolved model as JSON (layerbench-model/1) on stdout and exit 0");
  cli::add_int(app, "--ep", c.ep, "standard MoE block: expert-parallel ranks (experts sharded contiguously, tokens "
               "sharded over the same ranks); 0 = every rank", 0, 1 << 20);
  app.add_option("--router-score", f->score, "override: softmax | sigmoid");
  app.add_option("--activation", f->activation, "override: silu-glu | swiglu-clamped");
  app.add_option("--selection-bias", f->selection_bias, "override: on | off (per-expert bias for the selection only)");
  app.add_option("--normalize", f->normalize, "override: on | off (renormalise the selected weights)");
  app.add_option("--topk-before-score", f->topk_before_score, "override: on | off (score only the k selected logits)");
  app.add_option("--shared-gate", f->shared_gate, "override: on | off (sigmoid gate on the shared experts)");
  app.add_option("--group-score", f->group_score,
                 "override: max | top2-sum (how group-limited routing scores a group: its best expert, or its best two)");
  app.add_option("--precision", f->precision,
                 "standard block: bf16 | fp8-block (128x128 weight blocks, 1x128 dynamic activations) | fp8-rowwise "
                 "(per output channel / per token): the routed and shared experts' format, replacing the config's "
                 "quantization_config (the router keeps the config's unless the config quantizes it); default: the "
                 "config's, BF16 for the presets");
  app.add_flag("--text-router-only", f->text_router_only,
               "a config with per-modality routers (multi_gate, router_type): profile the text path's router alone");
  cli::add_int(app, "--groups", f->groups, "override: expert groups of group-limited routing", std::int64_t{1}, std::int64_t{1} << 20);
  cli::add_int(app, "--topk-groups", f->topk_groups, "override: groups kept by group-limited routing", std::int64_t{1}, std::int64_t{1} << 20);
  cli::add_int(app, "--shared-experts", f->shared_experts, "override: shared experts", std::int64_t{0}, std::int64_t{1} << 10);
  cli::add_int(app, "--shared-intermediate", f->shared_intermediate, "override: one shared expert's intermediate size",
               std::int64_t{0}, std::int64_t{1} << 20);
  cli::add_real(app, "--swiglu-alpha", f->alpha, "override: clamped SwiGLU alpha", num::RealRange::positive(1e3));
  cli::add_real(app, "--swiglu-limit", f->limit, "override: clamped SwiGLU limit", num::RealRange::positive(1e6));
  app.final_callback([&app, &c, f] { resolve(app, c, *f); });
}

}  // namespace layerbench::moe
