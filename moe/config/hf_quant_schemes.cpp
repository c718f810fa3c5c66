// The quantization schemes of quant_method "fp8" and of compressed-tensors' config groups
// (moe/config/hf_quant_schemes.hpp): which FP8 format a scheme runs as, or why it has no kernel
// here. The module lists that say which parts a scheme covers are read in hf_precision.cpp.
#include "moe/config/hf_quant_schemes.hpp"

namespace layerbench::moe::hf {

using Format = Precision::Format;

// ---- quant_method fp8 ---------------------------------------------------------------------
Resolved fp8_scheme(const Reader& r, const json& q, const std::string& qkey, Precision& p) {
  Resolved out;
  auto key = [&](std::string_view k) { return fmt::format("{}.{}", qkey, k); };
  std::string acts = "dynamic";
  bool acts_default = true;
  if (auto it = q.find("activation_scheme"); it != q.end() && !it->is_null()) {
    if (!it->is_string()) r.fail(fmt::format("config key {} must be a string, got {}", key("activation_scheme"), it->dump()));
    acts = it->get<std::string>();
    acts_default = false;
    if (acts == "static") {
      out.no_kernel = fmt::format("config key {} = \"static\": activations with static (calibrated) scales have no "
                                  "kernel here (none exists; the FP8 paths quantize activations on the fly)",
                                  key("activation_scheme"));
      return out;
    }
    if (acts != "dynamic")
      r.fail(fmt::format("config key {}: unknown activation scheme \"{}\" (known: dynamic, static)",
                         key("activation_scheme"), acts));
  }
  if (auto it = q.find("fmt"); it != q.end() && !it->is_null()) {
    if (!it->is_string()) r.fail(fmt::format("config key {} must be a string, got {}", key("fmt"), it->dump()));
    const std::string f = it->get<std::string>();
    if (f != "e4m3" && f != "float8_e4m3fn") {
      out.no_kernel = fmt::format("config key {} = \"{}\": only e4m3 (float8_e4m3fn) has a kernel here", key("fmt"), f);
      return out;
    }
  }
  if (auto it = q.find("scale_fmt"); it != q.end() && !it->is_null()) {
    if (!it->is_string()) r.fail(fmt::format("config key {} must be a string, got {}", key("scale_fmt"), it->dump()));
    const std::string f = it->get<std::string>();
    if (f == "ue8m0") p.pow2_scales = true;
    else if (f != "float")
      r.fail(fmt::format("config key {}: unknown scale format \"{}\" (known: float, ue8m0)", key("scale_fmt"), f));
  }
  std::string block = "[128, 128]";
  if (auto it = q.find("weight_block_size"); it == q.end()) {
    block = "absent: FineGrainedFP8Config's default [128, 128]";
    out.from_rule = true;
  } else if (it->is_null()) {
    out.no_kernel = fmt::format("config key {} = null: per-tensor weight scales have no kernel here (fp8-block needs "
                                "[128, 128])", key("weight_block_size"));
    return out;
  } else {
    const json& b = *it;
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer())
      r.fail(fmt::format("config key {} must be two whole numbers, got {}", key("weight_block_size"), b.dump()));
    if (b[0].get<std::int64_t>() != 128 || b[1].get<std::int64_t>() != 128) {
      out.no_kernel = fmt::format("config key {} = {}: fp8-block takes 128x128 weight blocks (with 1x128 activation "
                                  "groups) only", key("weight_block_size"), b.dump());
      return out;
    }
  }
  out.format = Format::fp8_block;
  out.source = fmt::format("{} {} (quant_method fp8, e4m3, activation_scheme {}{}: 1x128 per-token activation "
                           "scales{})", key("weight_block_size"), block, acts, acts_default ? " (default)" : "",
                           p.pow2_scales ? fmt::format("; {} ue8m0: power-of-two scales", key("scale_fmt")) : "");
  if (acts_default) out.from_rule = true;
  return out;
}

// ---- compressed-tensors --------------------------------------------------------------------
Resolved ct_scheme(const json& group, const std::string& gkey) {
  Resolved out;
  auto arg = [](const json& a, const char* k) -> const json* {
    auto it = a.find(k);
    return it == a.end() || it->is_null() ? nullptr : &*it;
  };
  auto text = [&](const json& a, const char* k) {
    const json* v = arg(a, k);
    return v && v->is_string() ? v->get<std::string>() : std::string();
  };
  auto bits = [&](const json& a) {
    const json* v = arg(a, "num_bits");
    return v && v->is_number_integer() ? v->get<std::int64_t>() : 0;
  };
  const auto w = group.find("weights");
  if (w == group.end() || !w->is_object()) {
    out.no_kernel = fmt::format("config key {}: no weights scheme (activations-only quantization has no kernel here)", gkey);
    return out;
  }
  const std::string wkey = gkey + ".weights";
  const std::string wstrat = text(*w, "strategy");
  if (text(*w, "type") != "float" || bits(*w) != 8) {
    out.no_kernel = fmt::format("config key {}: {}-bit {} weights (strategy {}{}) have no kernel here", wkey, bits(*w),
                                text(*w, "type").empty() ? "?" : text(*w, "type"), wstrat.empty() ? "?" : wstrat,
                                arg(*w, "group_size") ? ", group_size " + arg(*w, "group_size")->dump() : "");
    return out;
  }
  bool block_w = false;
  if (wstrat == "block") {
    const json* bs = arg(*w, "block_structure");
    if (!bs || *bs != json::array({128, 128})) {
      out.no_kernel = fmt::format("config key {}.block_structure = {}: fp8-block takes 128x128 weight blocks only", wkey,
                                  bs ? bs->dump() : "null");
      return out;
    }
    block_w = true;
  } else if (wstrat != "channel") {
    out.no_kernel = fmt::format("config key {}.strategy = \"{}\": {} weight scales have no kernel here (fp8-block: "
                                "block [128, 128]; fp8-rowwise: channel)", wkey, wstrat,
                                wstrat == "tensor" ? "per-tensor" : "these");
    return out;
  }
  const auto a = group.find("input_activations");
  const std::string akey = gkey + ".input_activations";
  if (a == group.end() || !a->is_object()) {
    out.no_kernel = fmt::format("config key {} is null: FP8 weights with BF16 activations (weight-only) have no kernel "
                                "here", akey);
    return out;
  }
  if (text(*a, "type") != "float" || bits(*a) != 8) {
    out.no_kernel = fmt::format("config key {}: {}-bit {} activations have no kernel here", akey, bits(*a),
                                text(*a, "type").empty() ? "?" : text(*a, "type"));
    return out;
  }
  const json* dyn = arg(*a, "dynamic");
  if (!dyn || *dyn != json(true)) {
    out.no_kernel = fmt::format("config key {}.dynamic = {}: activations with static (calibrated) scales have no kernel "
                                "here (the FP8 paths quantize activations on the fly)", akey, dyn ? dyn->dump() : "null");
    return out;
  }
  const std::string astrat = text(*a, "strategy");
  const json* gs = arg(*a, "group_size");
  if (block_w && astrat == "group" && gs && *gs == json(128)) {
    out.format = Format::fp8_block;
    out.source = fmt::format("{}.block_structure [128, 128] with {}.group_size 128, dynamic (compressed-tensors "
                             "float 8-bit)", wkey, akey);
  } else if (!block_w && astrat == "token") {
    out.format = Format::fp8_rowwise;
    out.source = fmt::format("{}.strategy channel with {}.strategy token, dynamic (compressed-tensors float 8-bit)",
                             wkey, akey);
  } else {
    out.no_kernel = fmt::format("config key {}: {} weights with {} activations (strategy {}{}) have no kernel here "
                                "(fp8-block: block [128, 128] weights with group_size 128 activations; fp8-rowwise: "
                                "channel weights with token activations)", gkey, wstrat, astrat.empty() ? "?" : astrat,
                                astrat.empty() ? "?" : astrat, gs ? ", group_size " + gs->dump() : "");
  }
  return out;
}

}  // namespace layerbench::moe::hf
