// The precision of the standard block's parts, read from a config's quantization_config
// (fp8_moe.md §2): which of the router, the routed experts and the shared experts run in FP8, with
// which scales, and the key that says so. Three ways a config declares it:
//   quant_method "fp8" (transformers' FineGrainedFP8Config): weight_block_size, activation_scheme,
//     fmt, scale_fmt, dequantize, and the modules left BF16 (modules_to_not_convert, ignored_layers),
//     matched as transformers' should_convert_module does: a regular expression matched at the
//     start of the module name, or a suffix of the name;
//   quant_method "compressed-tensors": config_groups (targets, weights, input_activations) and
//     `ignore`, matched as compressed-tensors' match_name does: "re:" + a regular expression
//     matched at the start of the name, else the exact name, or the class name "Linear";
//   any other method (mxfp4, modelopt/nvfp4, gptq, awq, bitsandbytes, ...): no kernel here, so a
//     UsageError naming the method, unless --precision replaces it.
// Module names are those of the checkpoints (the names a config's lists are written against):
// model.layers.N. (or model.language_model.layers.N., language_model.model.layers.N.) followed
// by mlp.gate / block_sparse_moe.gate / mlp.router / feed_forward.router (router),
// mlp.experts.E.{gate,up,down}_proj / block_sparse_moe.experts.E.{w1,w3,w2} / fused
// mlp.experts (routed experts) and mlp.shared_experts.* / mlp.shared_expert.* /
// feed_forward.shared_expert.* (shared experts). Every MoE layer is checked: one profile stands
// for them all, so a part whose precision differs between MoE layers or projections is refused.
// No quantization_config: BF16, from torch_dtype / dtype. The schemes of the first two methods
// (which FP8 format a scheme runs as) are read in hf_quant_schemes.cpp; the lists of modules they
// cover, here.
#include "moe/config/hf_quant_schemes.hpp"
#include "moe/config/hf_reader.hpp"

#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_set>

namespace layerbench::moe::hf {

namespace {

using Format = Precision::Format;

constexpr std::string_view kBf16Hint = "--precision bf16 profiles the BF16 layer instead";

// ---- module names -------------------------------------------------------------------------
// One projection of a part: its spellings relative to a decoder layer ("{e}" = an expert index).
struct Projection {
  std::string_view name;
  std::vector<std::string_view> spellings;
};
using Part = std::vector<Projection>;

const Part kRouter = {{"gate", {"mlp.gate", "block_sparse_moe.gate", "mlp.router", "feed_forward.router"}}};
const Part kExperts = {
    {"gate_proj", {"mlp.experts.{e}.gate_proj", "mlp.experts.{e}.w1", "block_sparse_moe.experts.{e}.w1",
                   "feed_forward.experts.{e}.gate_proj", "mlp.experts", "feed_forward.experts"}},
    {"up_proj", {"mlp.experts.{e}.up_proj", "mlp.experts.{e}.w3", "block_sparse_moe.experts.{e}.w3",
                 "feed_forward.experts.{e}.up_proj", "mlp.experts", "feed_forward.experts"}},
    {"down_proj", {"mlp.experts.{e}.down_proj", "mlp.experts.{e}.w2", "block_sparse_moe.experts.{e}.w2",
                   "feed_forward.experts.{e}.down_proj", "mlp.experts", "feed_forward.experts"}}};
const Part kShared = {
    {"gate_proj", {"mlp.shared_experts.gate_proj", "mlp.shared_expert.gate_proj", "feed_forward.shared_expert.gate_proj"}},
    {"up_proj", {"mlp.shared_experts.up_proj", "mlp.shared_expert.up_proj", "feed_forward.shared_expert.up_proj"}},
    {"down_proj", {"mlp.shared_experts.down_proj", "mlp.shared_expert.down_proj", "feed_forward.shared_expert.down_proj"}}};
constexpr std::string_view kLayerPrefixes[] = {"model.layers.", "model.language_model.layers.",
                                               "language_model.model.layers."};

// The full names of one projection at MoE layer `layer` (experts 0 and E-1), the family's own
// spelling (`preferred`: "block_sparse_moe.", "feed_forward." or "mlp.") first, so that a match
// is reported by the name the model has.
std::vector<std::string> names_of(const Projection& p, std::int64_t layer, std::int64_t experts,
                                  std::string_view preferred) {
  std::vector<std::string_view> spellings = p.spellings;
  std::stable_partition(spellings.begin(), spellings.end(), [&](std::string_view s) { return s.starts_with(preferred); });
  std::vector<std::string> out;
  for (auto prefix : kLayerPrefixes)
    for (auto spelling : spellings) {
      const std::string base = fmt::format("{}{}.{}", prefix, layer, spelling);
      const auto at = base.find("{e}");
      if (at == std::string::npos) {
        out.push_back(base);
        continue;
      }
      for (std::int64_t e : {std::int64_t{0}, experts - 1})
        out.push_back(base.substr(0, at) + std::to_string(e) + base.substr(at + 3));
    }
  return out;
}

// ---- name lists ---------------------------------------------------------------------------
// A list of module entries (exclusions or targets) in one library's matching dialect.
enum class Dialect {
  transformers,        // a regex matched at the start, or a suffix of the name
  compressed_tensors,  // "re:" + a regex matched at the start, else the exact name or a class name
  glob,                // modelopt: fnmatch-style '*' wildcards over the whole name
};

class NameList {
 public:
  NameList(Dialect d, const json* list, std::string key, const Reader& r) : dialect_(d), key_(std::move(key)) {
    if (!list) return;
    if (!list->is_array()) r.fail(fmt::format("config key {} must be a list of module names", key_));
    re2::RE2::Options opt;
    opt.set_max_mem(std::int64_t{256} << 20);
    opt.set_log_errors(false);
    set_ = std::make_unique<re2::RE2::Set>(opt, re2::RE2::ANCHOR_START);
    for (const auto& e : *list) {
      if (!e.is_string()) r.fail(fmt::format("config key {}: entry {} is not a module name", key_, e.dump()));
      const std::string entry = e.get<std::string>();
      std::string pattern;
      if (d == Dialect::transformers) {
        pattern = entry;
        literal_.push_back(entry);
      } else if (d == Dialect::compressed_tensors) {
        if (!entry.starts_with("re:")) {
          exact_.insert(entry);
          continue;
        }
        pattern = entry.substr(3);
      } else {
        std::string_view rest = entry;
        for (auto star = rest.find('*'); ; star = rest.find('*')) {
          pattern += re2::RE2::QuoteMeta(std::string(rest.substr(0, star)));
          if (star == std::string_view::npos) break;
          pattern += ".*";
          rest = rest.substr(star + 1);
        }
        pattern += "$";
      }
      std::string error;
      if (set_->Add(pattern, &error) < 0)
        r.fail(fmt::format("config key {}: entry \"{}\" is not a regular expression RE2 reads ({})", key_, entry, error));
      regex_entries_.push_back(entry);
    }
    if (!regex_entries_.empty() && !set_->Compile())
      r.fail(fmt::format("config key {}: its {} patterns do not compile together", key_, regex_entries_.size()));
  }

  // The entry that matches `name` (a module that is a Linear when `linear`), or "" when none does.
  std::string match(const std::string& name, bool linear) const {
    if (dialect_ == Dialect::compressed_tensors) {
      if (exact_.count(name)) return name;
      if (linear && exact_.count("Linear")) return "Linear";
    }
    for (const auto& lit : literal_)
      if (name.ends_with(lit)) return lit;
    if (!regex_entries_.empty()) {
      std::vector<int> hits;
      if (set_->Match(name, &hits) && !hits.empty()) return regex_entries_[static_cast<std::size_t>(hits.front())];
    }
    return {};
  }
  const std::string& key() const { return key_; }

 private:
  Dialect dialect_;
  std::string key_;
  std::unique_ptr<re2::RE2::Set> set_;
  std::vector<std::string> regex_entries_, literal_;
  std::unordered_set<std::string> exact_;
};

// ---- per-part resolution -------------------------------------------------------------------
// What one projection at one MoE layer runs as: a scheme id ("" = not quantized) and why.
struct Verdict {
  std::string scheme, why;
};

// Whether the family's router is a Linear module (quantization methods convert Linear layers):
// DeepSeek-keyed routers (DeepSeek-V2/V3's MoEGate and Gate, transformers' DeepseekV3TopkRouter,
// Glm4MoeTopkRouter) and gpt-oss's GptOssTopKRouter hold a weight parameter instead.
bool router_is_linear(std::optional<Family> fam) {
  return !(fam && (*fam == Family::deepseek || *fam == Family::gpt_oss));
}

std::string router_rule(std::optional<Family> fam) {
  return fmt::format("the {} family's router is a weight parameter, not a Linear layer (DeepSeek-V3 inference/model.py "
                     "Gate; transformers DeepseekV3TopkRouter, Glm4MoeTopkRouter, GptOssTopKRouter): not converted",
                     family_name(*fam));
}

// Every MoE layer and projection of a part must agree: the common verdict, or a UsageError.
Verdict agree(const Reader& r, const std::string& what, const char* part_name, const Part& part,
              const std::function<Verdict(const Projection&, std::int64_t)>& verdict_at) {
  std::optional<Verdict> first;
  std::string first_at;
  for (std::int64_t layer : r.moe_layer_indices())
    for (const auto& proj : part) {
      Verdict v = verdict_at(proj, layer);
      const std::string at = fmt::format("{} at MoE layer {}", proj.name, layer);
      if (!first) {
        first = v;
        first_at = at;
      } else if (v.scheme != first->scheme) {
        auto say = [](const Verdict& x) { return x.scheme.empty() ? "not quantized (" + x.why + ")" : x.why; };
        r.fail(fmt::format("config key {}: the precision of the {} differs between projections or MoE layers: "
                           "{}: {}; {}: {} (one standard block has one precision per part)", what, part_name, first_at,
                           say(*first), at, say(v)));
      }
    }
  return first.value_or(Verdict{});
}

// The key path of the quantization config and the object itself (the nested text config's first,
// then the top level's; compression_config is its older spelling).
std::pair<const json*, std::string> find_quantization(const json& doc, const Reader& r) {
  for (const char* k : {"quantization_config", "compression_config"}) {
    if (const json* q = r.find(k)) return {q, r.key_name(k)};
    if (auto it = doc.find(k); it != doc.end() && !it->is_null()) return {&*it, k};
  }
  return {nullptr, {}};
}

void set_part(Model& m, Precision::Part& part, const char* field, const Resolved& res) {
  part = {res.format, res.source};
  if (res.from_rule) m.not_from_config[field] = res.source;
}

}  // namespace

void read_precision(const json& doc, Reader& r, Model& m, std::optional<Family> fam,
                    const std::optional<std::string>& flag) {
  Precision& p = m.precision;
  p = Precision{};
  const auto [q, qkey] = find_quantization(doc, r);
  if (!q) {  // BF16, from the config's dtype
    p.method = "none";
    std::string src;
    bool rule = false;
    std::string key;
    const json* dt = nullptr;
    for (const char* k : {"torch_dtype", "dtype"}) {
      if ((dt = r.find(k))) {
        key = r.key_name(k);
        break;
      }
      if (auto it = doc.find(k); it != doc.end() && !it->is_null()) {
        dt = &*it;
        key = k;
        break;
      }
    }
    if (!dt) {
      src = "no quantization_config and no torch_dtype / dtype key: bf16";
      rule = true;
    } else {
      const std::string v = dt->is_string() ? dt->get<std::string>() : dt->dump();
      if (v == "bfloat16") {
        src = fmt::format("{} bfloat16 (no quantization_config)", key);
      } else if (v == "float16" || v == "float32" || v == "float" || v == "half") {
        src = fmt::format("{} {} (no quantization_config): timed as bf16, the suite's unquantized format", key, v);
        rule = true;
      } else {
        r.fail(fmt::format("config key {} = {} without a quantization_config: no scales to read the weights by; {}",
                           key, dt->dump(), kBf16Hint));
      }
    }
    for (auto [part, field] : {std::pair{&p.router, "precision.router"}, {&p.experts, "precision.experts"},
                               {&p.shared, "precision.shared"}}) {
      *part = {Format::bf16, src};
      if (rule) m.not_from_config[field] = src;
    }
    return;
  }
  if (!q->is_object()) r.fail(fmt::format("config key {} must be an object, got {}", qkey, q->dump()));
  std::string method;
  if (auto it = q->find("quant_method"); it != q->end() && it->is_string()) method = it->get<std::string>();
  auto key = [&](std::string_view k) { return fmt::format("{}.{}", qkey, k); };
  const bool linear_router = router_is_linear(fam);
  // The module names of the family's modelling code: Mixtral's and MiniMax's block_sparse_moe,
  // Llama-4's feed_forward, mlp for the others.
  const std::string_view preferred = (fam && *fam == Family::mixtral) || m.name.starts_with("minimax")
                                         ? "block_sparse_moe."
                                         : fam && *fam == Family::llama4 ? "feed_forward." : "mlp.";
  const std::int64_t experts = m.experts;

  // Per part: the verdict at every MoE layer and projection, then its format (or why no kernel).
  Resolved router, routed, shared;
  if (method == "fp8" || method == "compressed-tensors" || method == "compressed_tensors") {
    p.method = method == "fp8" ? "fp8" : "compressed-tensors";
    std::vector<NameList> excluded;
    if (method == "fp8") {
      for (const char* k : {"modules_to_not_convert", "ignored_layers"})
        if (auto it = q->find(k); it != q->end() && !it->is_null()) excluded.emplace_back(Dialect::transformers, &*it, key(k), r);
    } else if (auto it = q->find("ignore"); it != q->end() && !it->is_null()) {
      excluded.emplace_back(Dialect::compressed_tensors, &*it, key("ignore"), r);
    }
    bool dequantize = false;
    if (auto it = q->find("dequantize"); it != q->end() && it->is_boolean()) dequantize = it->get<bool>();
    // compressed-tensors: the groups, each with its targets.
    std::vector<std::pair<std::string, NameList>> groups;
    std::map<std::string, Resolved> schemes;
    if (method != "fp8") {
      const auto cg = q->find("config_groups");
      if (cg == q->end() || !cg->is_object() || cg->empty())
        r.fail(fmt::format("config key {} not found or empty (compressed-tensors: the quantized groups)", key("config_groups")));
      for (const auto& [name, g] : cg->items()) {
        const std::string gkey = key("config_groups." + name);
        if (!g.is_object()) r.fail(fmt::format("config key {} must be an object", gkey));
        const auto t = g.find("targets");
        groups.emplace_back(name, NameList(Dialect::compressed_tensors, t == g.end() ? nullptr : &*t, gkey + ".targets", r));
        schemes[name] = ct_scheme(g, gkey);
      }
    } else if (!dequantize) {
      schemes["fp8"] = fp8_scheme(r, *q, qkey, p);
    }
    auto verdict = [&](const Projection& proj, std::int64_t layer, bool linear) -> Verdict {
      const auto names = names_of(proj, layer, experts, preferred);
      for (const auto& list : excluded)
        for (const auto& n : names)
          if (auto hit = list.match(n, linear); !hit.empty())
            return {"", fmt::format("{} entry \"{}\" names {}", list.key(), hit, n)};
      if (method == "fp8") {
        if (!linear) return {"", router_rule(fam)};
        if (dequantize) return {"", key("dequantize") + " true: weights dequantized to BF16 when loaded"};
        return {"fp8", "quantized (quant_method fp8)"};
      }
      for (const auto& [gname, targets] : groups)
        for (const auto& n : names)
          if (auto hit = targets.match(n, linear); !hit.empty()) return {gname, fmt::format("{} \"{}\"", targets.key(), hit)};
      if (!linear) return {"", router_rule(fam)};
      return {"", fmt::format("no {} group targets it", key("config_groups"))};
    };
    auto resolve_part = [&](const char* part_name, const Part& part, bool linear) {
      const Verdict v = agree(r, qkey, part_name, part,
                              [&](const Projection& proj, std::int64_t layer) { return verdict(proj, layer, linear); });
      Resolved res;
      if (v.scheme.empty()) {
        res.from_rule = v.why.starts_with("the ");  // the modelling code's router rule, not a key
        res.source = res.from_rule ? fmt::format("{} by {} (quant_method {}): bf16", v.why, qkey, p.method)
                                   : fmt::format("{}: bf16", v.why);
        return res;
      }
      res = schemes.at(v.scheme);
      if (method != "fp8" && res.no_kernel.empty()) res.source += fmt::format(", targets: {}", v.why);
      return res;
    };
    router = resolve_part("router", kRouter, linear_router);
    routed = resolve_part("routed experts", kExperts, true);
    shared = resolve_part("shared experts", kShared, true);
  } else {
    // A method with no kernel here: refused, or replaced by --precision.
    std::string what = method.empty() ? fmt::format("config key {} has no quant_method (keys: {}): a format the reader "
                                                    "does not know", qkey, [&] {
                                                      std::string keys;
                                                      for (const auto& [k, v] : q->items()) keys += (keys.empty() ? "" : ", ") + k;
                                                      return keys;
                                                    }())
                                      : fmt::format("config key {} = \"{}\"", key("quant_method"), method);
    if (auto it = q->find("quant_algo"); it != q->end() && it->is_string())
      what += fmt::format(" (quant_algo {})", it->get<std::string>());
    const std::string why = method == "mxfp4" ? "MXFP4 (4-bit e2m1 weights, e8m0 scales per 32) has no kernel here"
                            : method == "modelopt" ? "ModelOpt's formats (NVFP4, per-tensor FP8) have no kernel here"
                            : method.empty() ? "no kernel here"
                            : fmt::format("{} weights have no kernel here", method);
    const std::string msg = fmt::format("{}: {}", what, why);
    if (!flag) r.fail(fmt::format("{}; {}", msg, kBf16Hint));
    p.method = fmt::format("{} (replaced by --precision {})", method.empty() ? "unknown" : method, *flag);
    const std::string src = fmt::format("not read: {} (replaced by --precision {})", msg, *flag);
    router = {Format::bf16, fmt::format("{}; the router taken as bf16", src), "", true};
    routed = shared = {Format::bf16, src, "", true};
  }
  // A format with no kernel: refused, naming its key, unless --precision replaces it (the experts
  // always; the router only where the config quantizes it).
  for (const auto* res : {&routed, &shared, &router})
    if (!res->no_kernel.empty() && !flag) r.fail(fmt::format("{}; {}", res->no_kernel, kBf16Hint));
  auto settle = [&](Resolved& res) {
    if (res.no_kernel.empty()) return;
    res = {parse_precision(*flag, "--precision"),
           fmt::format("flag --precision {} (the config's format: {})", *flag, res.no_kernel), "", true};
  };
  settle(router);
  settle(routed);
  settle(shared);
  set_part(m, p.router, "precision.router", router);
  set_part(m, p.experts, "precision.experts", routed);
  set_part(m, p.shared, "precision.shared", shared);
  if (p.pow2_scales && p.experts.format != Format::fp8_block && p.router.format != Format::fp8_block &&
      p.shared.format != Format::fp8_block)
    p.pow2_scales = false;  // the scale format of parts that are not block-scaled FP8
}

}  // namespace layerbench::moe::hf
