#include "attention/presets.hpp"

#include "collectives/error.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>

namespace layerbench::attention {

const std::vector<ModelPreset>& model_presets() {
  // Geometry: Wan2.1 `wan/configs`, HunyuanVideo README, black-forest-labs/flux, MAGI-2-preview
  // `configs/` (heads / KV heads / head dim). Strides: Wan2.1 VAE 4x8x8 with patch 1x2x2;
  // HunyuanVideo VAE 4x8x8 (its "4x8") with patch 1x2x2; FLUX VAE 8x8 with 2x2 packing.
  static const std::vector<ModelPreset> presets = {
      {"wan2.1-14b", 40, 40, 128, 4, 8, 8, 1, 2, 2, true, 0, false,
       "Wan2.1 T2V-14B: text enters by cross-attention (no joint tokens in self-attention)"},
      {"wan2.1-1.3b", 12, 12, 128, 4, 8, 8, 1, 2, 2, true, 0, false,
       "Wan2.1 T2V-1.3B: text enters by cross-attention (no joint tokens in self-attention)"},
      {"hunyuanvideo", 24, 24, 128, 4, 8, 8, 1, 2, 2, true, 256, false,
       "HunyuanVideo: joint text tokens (default 256 = its text length; set --text-tokens), mask per prompt"},
      {"flux.1-dev", 24, 24, 128, 1, 8, 8, 1, 2, 2, false, 512, false,
       "FLUX.1-dev: image model (--frames 1); joint T5 tokens in front (default 512; set --text-tokens)"},
      {"magi-2", 24, 24, 128, 4, 8, 8, 1, 2, 2, true, 0, true,
       "MAGI-2 preview: 24/24 heads; its engine serves Ulysses only (cp_ulysses: Ring and AllGather-KV rejected); "
       "strides assumed as MAGI-1's VAE (4x temporal, 8x spatial) with a 1x2x2 patch"},
  };
  return presets;
}

const ModelPreset& find_model(std::string_view name) {
  std::string lower;
  for (const char ch : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  std::string known;
  for (const auto& m : model_presets()) {
    if (m.name == lower) return m;
    known += (known.empty() ? "" : ", ") + m.name;
  }
  throw UsageError(fmt::format("--model '{}': unknown (known: {}; see --list-models)", name, known));
}

SequenceLength sequence_length(const ModelPreset& m, int width, int height, int frames) {
  if (width < 1 || height < 1 || frames < 1)
    throw UsageError(fmt::format("{}: resolution {}x{} and frames {} must be positive", m.name, width, height, frames));
  if (!m.video && frames != 1)
    throw UsageError(fmt::format("{} is an image model: --frames must be 1 (got {})", m.name, frames));
  if ((frames - 1) % m.vae_t != 0)
    throw UsageError(fmt::format("{}: frames {} must be {}k+1 (the VAE's temporal stride {})", m.name, frames, m.vae_t,
                                 m.vae_t));
  const int sh = m.vae_h * m.patch_h, sw = m.vae_w * m.patch_w;
  if (height % sh != 0 || width % sw != 0)
    throw UsageError(fmt::format("{}: resolution {}x{} must divide by the strides {}x{} (VAE x patch)", m.name, width,
                                 height, sw, sh));
  const long long t = (frames - 1) / m.vae_t + 1;
  if (t % m.patch_t != 0)
    throw UsageError(fmt::format("{}: {} latent frames do not divide by the temporal patch {}", m.name, t, m.patch_t));
  const long long nt = t / m.patch_t, nh = height / sh, nw = width / sw;
  SequenceLength s;
  s.tokens = nt * nh * nw;
  s.formula = fmt::format("T = ({}-1)/{}+1 = {}; S = T/{} x {}/({}*{}) x {}/({}*{}) = {} x {} x {} = {}", frames, m.vae_t,
                          t, m.patch_t, height, m.vae_h, m.patch_h, width, m.vae_w, m.patch_w, nt, nh, nw, s.tokens);
  return s;
}

std::pair<int, int> parse_resolution(std::string_view text) {
  const auto x = text.find('x');
  auto num = [&](std::string_view part) {
    int v = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() || v < 1)
      throw UsageError(fmt::format("--resolution '{}': expected WxH, e.g. 1280x720", text));
    return v;
  };
  if (x == std::string_view::npos) throw UsageError(fmt::format("--resolution '{}': expected WxH, e.g. 1280x720", text));
  return {num(text.substr(0, x)), num(text.substr(x + 1))};
}

std::string list_models() {
  std::string md =
      "| model | heads | KV heads | head dim | VAE stride (t,h,w) | patch (t,h,w) | joint tokens | topologies | note |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& m : model_presets())
    md += fmt::format("| {} | {} | {} | {} | {}x{}x{} | {}x{}x{} | {} | {} | {} |\n", m.name, m.heads, m.kv_heads,
                      m.head_dim, m.vae_t, m.vae_h, m.vae_w, m.patch_t, m.patch_h, m.patch_w, m.text_tokens,
                      m.ulysses_only ? "Ulysses only" : "all", m.note);
  md += "\nSequence length: T = (F-1)/vae_t + 1 latent frames; S = T/patch_t x H/(vae_h*patch_h) x W/(vae_w*patch_w).\n";
  return md;
}

}  // namespace layerbench::attention
