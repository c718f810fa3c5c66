// What the standard block cannot represent, refused naming the key (per-modality routers,
// zero-computation or identity experts), and the bounds of the values a config gives: a config
// is data, so an absurd count is an error naming its key, never a loop over it.
#include "moe/config/hf_reader.hpp"

#include <cctype>

namespace layerbench::moe::hf {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The key (with its prefix) of a per-modality router setting, or "" when the config has one router.
std::string per_modality_router(const json& doc, const json& cfg, const std::string& prefix) {
  for (const auto& [where, pre] : {std::pair{&cfg, prefix}, std::pair{&doc, std::string()}}) {
    if (auto it = where->find("multi_gate"); it != where->end() && it->is_boolean() && it->get<bool>())
      return fmt::format("{}multi_gate = true", pre);
    if (auto it = where->find("router_type"); it != where->end()) {
      const bool several = it->is_array() || it->is_object() ||
                           (it->is_string() && lower(it->get<std::string>()).find("multi") != std::string::npos);
      if (several) return fmt::format("{}router_type = {}", pre, it->dump());
    }
  }
  return {};
}

// Experts that compute nothing (zero) or pass the input through (identity): a count key, nonzero.
constexpr std::string_view kZeroExpertKeys[] = {"zero_expert_num", "num_zero_experts", "n_zero_experts",
                                                "num_identity_experts", "n_identity_experts", "identity_expert_num"};

}  // namespace

void refuse_unrepresentable(const json& doc, Reader& r, Model& m, bool text_router_only) {
  const std::string multi = per_modality_router(doc, r.config(), r.prefix());
  if (!multi.empty() && !text_router_only)
    r.fail(fmt::format("config key {}: per-modality routers (each token routed by its modality's router), which "
                       "the standard block, with one router, cannot represent; give --text-router-only to profile "
                       "the text path alone", multi));
  if (multi.empty() && text_router_only)
    r.fail("--text-router-only applies to a config with per-modality routers (multi_gate, router_type); this one "
           "has one router");
  if (!multi.empty()) {
    m.notes.push_back(fmt::format("per-modality routers ({}): only the text path is profiled (--text-router-only)",
                                  multi));
    m.not_from_config["router (modality)"] = "flag --text-router-only: the text path's router alone";
  }
  for (auto key : kZeroExpertKeys)
    if (const json* z = r.find(key); z && *z != json(0) && *z != json(false))
      r.fail(fmt::format("config key {} = {}: zero-computation or identity experts, which the standard block "
                         "(every expert a gated MLP) cannot represent", r.key_name(key), z->dump()));
}

void check_bounds(Reader& r, const Model& m) {
  auto bound = [&](const char* field, std::int64_t v, std::int64_t hi) {
    if (v < 1 || v > hi)
      r.fail(fmt::format("{} = {} (config key {}): must be in [1, {}]", field, v,
                         m.sources.count(field) ? m.sources.at(field) : field, hi));
  };
  bound("hidden", m.hidden, std::int64_t{1} << 20);
  bound("experts", m.experts, std::int64_t{1} << 16);
  bound("topk", m.topk, std::int64_t{1} << 16);
  bound("moe_intermediate", m.moe_intermediate, std::int64_t{1} << 22);
  if (m.shared.count < 0 || m.shared.count > 1024 || m.shared.size < 0 || m.shared.size > (std::int64_t{1} << 22))
    r.fail(fmt::format("shared experts {} x {} (config keys {}, {}): out of range", m.shared.count, m.shared.size,
                       m.sources.count("shared_experts") ? m.sources.at("shared_experts") : "-",
                       m.sources.count("shared_intermediate") ? m.sources.at("shared_intermediate") : "-"));
  if (m.topk > m.experts)
    r.fail(fmt::format("topk {} (config key {}) exceeds experts {} (config key {})", m.topk, m.sources.at("topk"),
                       m.experts, m.sources.at("experts")));
}

}  // namespace layerbench::moe::hf
