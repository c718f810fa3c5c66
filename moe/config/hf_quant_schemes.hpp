#pragma once
// The quantization schemes of the two methods the standard block has kernels for, read from a
// config's quantization_config (fp8_moe.md §2; hf_quant_schemes.cpp): what one scheme resolves to.
// read_precision (hf_precision.cpp) decides which parts a scheme applies to.
#include "moe/config/hf_reader.hpp"

#include <string>

namespace layerbench::moe::hf {

// The precision a part resolves to, or why it has no kernel here (`no_kernel`).
struct Resolved {
  Precision::Format format = Precision::Format::bf16;
  std::string source, no_kernel;
  bool from_rule = false;  // decided by a rule of the modelling code, not by a key
};

// quant_method "fp8" (transformers' FineGrainedFP8Config) at key `qkey`: activation_scheme, fmt,
// scale_fmt (ue8m0 sets p.pow2_scales) and weight_block_size.
Resolved fp8_scheme(const Reader& r, const json& q, const std::string& qkey, Precision& p);
// One compressed-tensors config group at key `gkey`: its weights and input_activations.
Resolved ct_scheme(const json& group, const std::string& gkey);

}  // namespace layerbench::moe::hf
