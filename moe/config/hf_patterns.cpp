// The MoE-layer patterns of the Hugging Face config reader: which layers are MoE, by the keys
// of each family (first_k_dense_replace, decoder_sparse_step, moe_layers, ...).
#include "moe/config/hf_reader.hpp"
#include "common/json_text.hpp"

namespace layerbench::moe::hf {

std::string Reader::join_families() {
  std::string out;
  for (auto f : {Family::deepseek, Family::qwen, Family::olmoe, Family::mixtral, Family::gpt_oss, Family::llama4})
    out += (out.empty() ? "" : ", ") + std::string(family_name(f));
  return out;
}

// The MoE-layer patterns, shared by the family readers and the field reader.
void deepseek_pattern(Reader& r, std::int64_t L) {
  const std::int64_t first = r.integer("first_k_dense_replace", {"first_k_dense_replace"}, 0);
  if (first < 0 || first > L)
    r.fail(fmt::format("config key {} = {}: must be in [0, {}] (num_hidden_layers)", r.key_name("first_k_dense_replace"),
                       first, L));
  if (const json* freq = r.find("moe_layer_freq"); freq && freq->is_array()) {
    const json& list = r.per_layer_list("moe_layer_freq", *freq);
    r.set_moe_layers(L, [&](std::int64_t i) { return list[static_cast<std::size_t>(i)] != 0; },
                     r.key_name("moe_layer_freq") + " (per-layer list)");
    return;
  }
  const std::int64_t f = r.integer("moe_layer_freq", {"moe_layer_freq"}, 1);
  if (f < 1) r.fail(fmt::format("config key {} must be at least 1", r.key_name("moe_layer_freq")));
  r.set_moe_layers(L, [&](std::int64_t i) { return i >= first && i % f == 0; },
                   fmt::format("{} {} - {} {} (every {} from there)", r.key_name("num_hidden_layers"), L,
                               r.key_name("first_k_dense_replace"), first, f));
}

void qwen_pattern(Reader& r, std::int64_t L) {
  const std::int64_t step = r.integer("decoder_sparse_step", {"decoder_sparse_step"}, 1);
  if (step < 1) r.fail(fmt::format("config key {} must be at least 1", r.key_name("decoder_sparse_step")));
  std::set<std::int64_t> dense;
  if (const json* v = r.find("mlp_only_layers")) {
    if (!v->is_array()) r.fail(fmt::format("config key {} must be a list of layer indices", r.key_name("mlp_only_layers")));
    for (const auto& e : *v) {
      if (!e.is_number_integer() || e.get<std::int64_t>() < 0 || e.get<std::int64_t>() >= L)
        r.fail(fmt::format("config key {}: entry {} is not a layer index in [0, {})", r.key_name("mlp_only_layers"), json_text(e), L));
      dense.insert(e.get<std::int64_t>());
    }
  }
  r.set_moe_layers(L, [&](std::int64_t i) { return !dense.count(i) && (i + 1) % step == 0; },
                   fmt::format("{} {}, {} {}, {} {} entries", r.key_name("num_hidden_layers"), L,
                               r.key_name("decoder_sparse_step"), step, r.key_name("mlp_only_layers"), dense.size()));
}

void llama4_pattern(Reader& r, std::int64_t L) {
  if (const json* v = r.find("moe_layers"); v && v->is_array()) {
    std::set<std::int64_t> moe;
    for (const auto& e : *v) {
      if (!e.is_number_integer()) r.fail(fmt::format("config key {}: entry {} is not a layer index", r.key_name("moe_layers"), json_text(e)));
      if (e.get<std::int64_t>() < 0 || e.get<std::int64_t>() >= L)
        r.fail(fmt::format("config key {}: entry {} is not a layer index in [0, {})", r.key_name("moe_layers"), json_text(e), L));
      moe.insert(e.get<std::int64_t>());
    }
    r.set_moe_layers(L, [&](std::int64_t i) { return moe.count(i) > 0; }, r.key_name("moe_layers"));
    return;
  }
  const std::int64_t step = r.integer("interleave_moe_layer_step", {"interleave_moe_layer_step"}, 1);
  if (step < 1) r.fail(fmt::format("config key {} must be at least 1", r.key_name("interleave_moe_layer_step")));
  r.set_moe_layers(L, [&](std::int64_t i) { return (i + 1) % step == 0; },
                   fmt::format("{} {} / {} {}", r.key_name("num_hidden_layers"), L,
                               r.key_name("interleave_moe_layer_step"), step));
}

std::int64_t layer_count(Reader& r) {
  const std::int64_t L = r.integer("layers", {"num_hidden_layers", "n_layers", "num_layers"});
  if (L < 1 || L > kMaxLayers)
    r.fail(fmt::format("config key {} = {}: must be in [1, {}]", r.key_name("num_hidden_layers"), L, kMaxLayers));
  r.set_layer_count(L);
  return L;
}

void read_moe_layers(Reader& r, Family fam, std::string_view type) {
  const std::int64_t L = layer_count(r);
  if (fam == Family::deepseek) deepseek_pattern(r, L);
  else if (fam == Family::qwen) qwen_pattern(r, L);
  else if (fam == Family::llama4) llama4_pattern(r, L);
  else
    r.set_moe_layers(L, [](std::int64_t) { return true; },
                     fmt::format("{} (every layer is MoE in model_type {})", r.key_name("num_hidden_layers"), type));
}


// Which layers are MoE, from whichever pattern key the config carries (the first that applies).
void field_pattern(Reader& r, std::vector<std::string>& decided) {
  auto kind_is_moe = [](const json& e) {
    return e.is_string() && (e.get<std::string>() == "moe" || e.get<std::string>() == "sparse");
  };
  for (std::string_view key : {"mlp_layer_types", "layers_block_type", "layer_types"}) {
    const json* v = r.find(key);
    if (!v || !v->is_array() || std::none_of(v->begin(), v->end(), kind_is_moe)) continue;  // attention kinds only
    const std::int64_t L = r.find("num_hidden_layers") ? layer_count(r) : static_cast<std::int64_t>(v->size());
    if (!r.find("num_hidden_layers")) r.set_layer_count(L);
    const json& list = r.per_layer_list(key, *v);
    r.set_moe_layers(L, [&](std::int64_t i) { return kind_is_moe(list[static_cast<std::size_t>(i)]); },
                     r.key_name(key) + " (per-layer list: moe/sparse entries)");
    decided.push_back(r.key_name(key));
    return;
  }
  if (auto pat = r.text("hybrid_override_pattern")) {
    const auto L = static_cast<std::int64_t>(pat->size());
    r.set_layer_count(L);
    if (r.find("num_hidden_layers") && layer_count(r) != L)
      r.fail(fmt::format("config key {} has {} entries, but num_hidden_layers is {}", r.key_name("hybrid_override_pattern"),
                         L, r.layers()));
    r.set_moe_layers(L, [&](std::int64_t i) { return (*pat)[static_cast<std::size_t>(i)] == 'E'; },
                     r.key_name("hybrid_override_pattern") + " ('E' layers)");
    decided.push_back(r.key_name("hybrid_override_pattern"));
    return;
  }
  const std::int64_t L = layer_count(r);
  auto has = [&](std::string_view k) { return r.find(k) != nullptr; };
  if (has("moe_layer_freq") || has("first_k_dense_replace")) {
    deepseek_pattern(r, L);
    decided.push_back(r.key_name(has("moe_layer_freq") ? "moe_layer_freq" : "first_k_dense_replace"));
  } else if (has("decoder_sparse_step") || has("mlp_only_layers")) {
    qwen_pattern(r, L);
    decided.push_back(r.key_name("decoder_sparse_step"));
  } else if (has("interleave_moe_layer_step") || has("moe_layers")) {
    llama4_pattern(r, L);
    decided.push_back(r.key_name(has("moe_layers") ? "moe_layers" : "interleave_moe_layer_step"));
  } else if (auto list = r.text("moe_layers_enum")) {  // Step-3: "4,5,6,..."
    std::set<std::int64_t> moe;
    std::string_view rest = *list;
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      std::string_view f = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      while (!f.empty() && f.front() == ' ') f.remove_prefix(1);
      while (!f.empty() && f.back() == ' ') f.remove_suffix(1);
      moe.insert(num::parse_int<std::int64_t>(f, r.what("moe_layers_enum") + " entry", 0, L - 1));
    }
    r.set_moe_layers(L, [&](std::int64_t i) { return moe.count(i) > 0; }, r.key_name("moe_layers_enum"));
    decided.push_back(r.key_name("moe_layers_enum"));
  } else if (has("moe_layer_start_index") || has("moe_layer_interval")) {  // ERNIE-4.5
    const std::int64_t start = r.integer("moe_layer_start_index", {"moe_layer_start_index"}, 0);
    std::int64_t end = r.integer("moe_layer_end_index", {"moe_layer_end_index"}, L - 1);
    if (end < 0) end = L - 1;
    const std::int64_t every = r.integer("moe_layer_interval", {"moe_layer_interval"}, 1);
    if (every < 1) r.fail(fmt::format("config key {} must be at least 1", r.key_name("moe_layer_interval")));
    r.set_moe_layers(L, [&](std::int64_t i) { return (i + 1) % every == 0 && i >= start && i <= end; },
                     fmt::format("{} {}..{}, every {} ({})", r.key_name("moe_layer_start_index"), start, end, every,
                                 r.key_name("moe_layer_interval")));
    decided.push_back(r.key_name("moe_layer_start_index"));
  } else if (has("expert_layer_period")) {  // Jamba
    const std::int64_t period = r.integer("expert_layer_period", {"expert_layer_period"});
    const std::int64_t offset = r.integer("expert_layer_offset", {"expert_layer_offset"}, 0);
    if (period < 1) r.fail(fmt::format("config key {} must be at least 1", r.key_name("expert_layer_period")));
    r.set_moe_layers(L, [&](std::int64_t i) { return i % period == offset; },
                     fmt::format("{} {}, {} {}", r.key_name("expert_layer_period"), period,
                                 r.key_name("expert_layer_offset"), offset));
    decided.push_back(r.key_name("expert_layer_period"));
  } else if (has("num_dense_layers")) {
    const std::int64_t dense = r.integer("num_dense_layers", {"num_dense_layers"});
    r.set_moe_layers(L, [&](std::int64_t i) { return i >= dense; },
                     fmt::format("{} {} - {} {}", r.key_name("num_hidden_layers"), L, r.key_name("num_dense_layers"), dense));
    decided.push_back(r.key_name("num_dense_layers"));
  } else {
    r.set_moe_layers(L, [](std::int64_t) { return true; },
                     fmt::format("{} (no MoE-layer pattern key: every layer is MoE)", r.key_name("num_hidden_layers")));
  }
}

}  // namespace layerbench::moe::hf
