#pragma once
// Model presets: the attention geometry of DiT families and their sequence length from a
// resolution and frame count through the model's VAE and patch strides.
//   latent frames  T = (F - 1) / vae_t + 1         (video; images: F = 1, T = 1)
//   tokens         S = (T / patch_t) * (H / (vae_h * patch_h)) * (W / (vae_w * patch_w))
#include <string>
#include <string_view>
#include <vector>

namespace layerbench::attention {

struct ModelPreset {
  std::string name;         // lower case, as the model is named
  int heads = 0, kv_heads = 0, head_dim = 0;
  int vae_t = 1, vae_h = 8, vae_w = 8;        // VAE strides (time, height, width)
  int patch_t = 1, patch_h = 2, patch_w = 2;  // patch embedding strides
  bool video = true;
  long long text_tokens = 0;  // joint tokens by default (0: text enters by cross-attention)
  bool ulysses_only = false;  // the model's own attention serves Ulysses only
  std::string note;           // where the figures come from, and what is assumed
};

const std::vector<ModelPreset>& model_presets();
// Case-insensitive; UsageError listing the known names.
const ModelPreset& find_model(std::string_view name);

struct SequenceLength {
  long long tokens = 0;
  std::string formula;  // "T=(81-1)/4+1=21; S=21/1 x 720/(8*2) x 1280/(8*2) = 21 x 45 x 80 = 75600"
};
// UsageError when the resolution or frames do not fit the strides.
SequenceLength sequence_length(const ModelPreset& m, int width, int height, int frames);
// "1280x720" -> {1280, 720}; UsageError otherwise.
std::pair<int, int> parse_resolution(std::string_view text);
// The --list-models table (markdown).
std::string list_models();

}  // namespace layerbench::attention
