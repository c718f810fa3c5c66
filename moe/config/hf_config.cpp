// The Hugging Face config.json reader of the MoE model description. A known model_type is read
// by its family's key table (moe_models.md §2); any other config by its fields: the alias lists
// and rules of the field reader below (expert count, top-k, sizes, router scoring and bias,
// groups, normalisation, scale, shared experts, activation, the MoE-layer pattern). A nested
// text_config / language_config / llm_config, per-layer lists and the MoE-layer count apply to
// both. Every field records the key it came from, "default" (the family's documented default),
// "fixed by model_type X" (semantics the family fixes in code) or the rule that decided it.
#include "moe/config/hf_reader.hpp"

#include "common/input_file.hpp"

#include <filesystem>

namespace layerbench::moe {

using nlohmann::json;
using namespace hf;

std::vector<std::string> known_hf_families() {
  std::vector<std::string> out;
  for (const auto& f : kFamilies) out.emplace_back(f.model_type);
  return out;
}

std::vector<std::string> hf_family_names() {
  std::vector<std::string> out;
  for (auto f : {Family::deepseek, Family::qwen, Family::olmoe, Family::mixtral, Family::gpt_oss, Family::llama4})
    out.emplace_back(family_name(f));
  out.emplace_back("fields");
  return out;
}

namespace {

// The first word of a source ("text_config.n_group", "num_hidden_layers 61 - ...") when it is a
// key the config holds: the field was read from the config; anything else (a class default, a
// rule, "default", a flag) was not.
bool read_from_config(const Reader& r, const std::string& source) {
  std::string key = source.substr(0, source.find_first_of(" [("));
  if (!r.prefix().empty() && key.starts_with(r.prefix())) key = key.substr(r.prefix().size());
  return !key.empty() && r.find(key) != nullptr;
}

}  // namespace

Model model_from_hf_json(const json& doc, const std::string& origin, std::string_view forced) {
  return model_from_hf_json(doc, origin, forced, ModelOverrides{});
}

Model model_from_hf_json(const json& doc, const std::string& origin, std::string_view forced,
                         const ModelOverrides& flags) {
  if (!doc.is_object()) throw UsageError(fmt::format("--hf-config {}: not a JSON object", origin));
  const json* cfg = &doc;
  std::string prefix;
  for (const char* nested : {"text_config", "language_config", "llm_config"})
    if (auto it = doc.find(nested); it != doc.end() && it->is_object()) {
      cfg = &*it;
      prefix = std::string(nested) + ".";
      break;
    }
  std::string type;
  if (auto it = cfg->find("model_type"); it != cfg->end() && it->is_string() && !it->get<std::string>().empty())
    type = it->get<std::string>();
  else if (auto top = doc.find("model_type"); top != doc.end() && top->is_string()) type = top->get<std::string>();
  std::optional<Family> fam;
  for (const auto& f : kFamilies)
    if (!type.empty() && f.model_type == type) fam = f.family;
  // An unknown model_type whose (nested, else top-level) architectures name a known class: that
  // class's family (DeepSeek-VL2/OCR keep a DeepseekV2ForCausalLM under language_config).
  std::string arch_note;
  for (const json* where : {cfg, &doc}) {
    if (fam) break;
    if (auto a = where->find("architectures"); a != where->end() && a->is_array() && !a->empty() && (*a)[0].is_string())
      for (const auto& f : kFamilies)
        if (!f.architecture.empty() && f.architecture == (*a)[0].get<std::string>()) {
          fam = f.family;
          arch_note = fmt::format("; family from {}architectures {} (model_type {})", where == cfg ? prefix : "",
                                  f.architecture, type.empty() ? "(none)" : type);
          type = f.model_type;
          break;
        }
  }
  bool by_fields = !fam;
  std::string forced_note;
  if (!forced.empty()) {
    if (forced == "fields") {
      by_fields = true;
    } else if (auto f = family_by_name(forced)) {
      fam = f;
      by_fields = false;
    } else {
      std::string known;
      for (const auto& n : hf_family_names()) known += (known.empty() ? "" : ", ") + n;
      throw UsageError(fmt::format("--family {}: unknown family (known: {}; or a known model_type)", forced, known));
    }
    forced_note = fmt::format("; family forced by --family {}", forced);
  }
  Model m;
  m.name = type.empty() ? "unnamed" : type;
  m.origin = "config " + origin + (forced.empty() ? arch_note : "") + forced_note;
  m.block = Block::standard;
  Reader r(*cfg, prefix, origin, m);
  if (by_fields) {
    read_by_fields(r, m, type);
  } else {
    m.family = std::string(family_name(*fam));
    read_moe_layers(r, *fam, forced.empty() ? std::string_view(type) : forced);
    read_family(r, m, *fam, forced.empty() ? std::string_view(type) : forced);
  }
  m.layers = r.layers();
  m.sources["moe_heads"] = "standard block: one head";
  check_bounds(r, m);
  refuse_unrepresentable(doc, r, m, flags.text_router_only);
  for (const auto& [field, source] : m.sources)
    if (field != "moe_heads" && !read_from_config(r, source))
      m.not_from_config[field] = forced.empty() ? source : fmt::format("{} (--family {})", source, forced);
  read_precision(doc, r, m, by_fields ? std::nullopt : fam, flags.precision);
  // The fields the flags settle count as given; the caller applies the flags.
  Model settled = m;
  apply_overrides(settled, flags);
  require_resolved(settled);
  if (m.unresolved.empty()) check_model(m);
  return m;
}

// Python's json module writes NaN, Infinity and -Infinity (Nemotron-H's time_step_limit); JSON
// has no such literals. Outside strings they become null: the reader needs none of those keys.
static std::string python_literals_to_null(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  bool str = false;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (str) {
      out += c;
      if (c == '\\' && i + 1 < in.size()) out += in[++i];
      else if (c == '"') str = false;
      continue;
    }
    if (c == '"') str = true;
    bool replaced = false;
    for (std::string_view lit : {"-Infinity", "Infinity", "NaN"})
      if (in.substr(i, lit.size()) == lit) {
        out += "null";
        i += lit.size() - 1;
        replaced = true;
        break;
      }
    if (!replaced) out += c;
  }
  return out;
}

Model read_hf_config(const std::string& path, std::string_view family) {
  return read_hf_config(path, family, ModelOverrides{});
}

Model read_hf_config(const std::string& path, std::string_view family, const ModelOverrides& flags) {
  std::string file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) file = (std::filesystem::path(path) / "config.json").string();
  const input::Origin origin{"--hf-config", file};
  if (input::kind_of(file) == input::Kind::missing) throw UsageError(fmt::format("--hf-config {}: cannot read the file", file));
  const std::string content = input::read_text(origin, input::kMaxConfigBytes);  // the input layer
  json doc;
  try {
    doc = json::parse(python_literals_to_null(content));
  } catch (const json::exception& e) {
    throw UsageError(fmt::format("--hf-config {}: not valid JSON ({})", file, e.what()));
  }
  // The layer count is bounded where it is read, before any layer is walked (hf_patterns.cpp).
  return model_from_hf_json(doc, file, family, flags);
}

}  // namespace layerbench::moe
