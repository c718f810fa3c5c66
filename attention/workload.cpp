#include "attention/workload.hpp"

#include "collectives/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace layerbench::attention {

JointPosition parse_joint_position(const std::string& s) {
  if (s == "front") return JointPosition::front;
  if (s == "rear") return JointPosition::rear;
  throw UsageError(fmt::format("--joint '{}': expected front or rear", s));
}

const char* to_string(JointPosition p) { return p == JointPosition::front ? "front" : "rear"; }

int Problem::document_of(long long i) const {
  if (!packed()) return 0;
  const auto it = std::upper_bound(cu_seqlens.begin(), cu_seqlens.end(), i);
  return static_cast<int>(it - cu_seqlens.begin()) - 1;
}

std::string Problem::describe() const {
  std::string s = kv() < heads ? fmt::format("GQA {}/{}", heads, kv()) : fmt::format("MHA {}", heads);
  if (text_tokens > 0) {
    s += fmt::format(", joint {} Lt={}", to_string(joint), text_tokens);
    if (!joint_valid.empty()) s += fmt::format(" (valid {})", fmt::join(joint_valid, ","));
  }
  if (!image_valid.empty()) s += fmt::format(", image valid {}", fmt::join(image_valid, ","));
  if (packed()) s += fmt::format(", packed {} requests cu_seqlens {}", cu_seqlens.size() - 1, fmt::join(cu_seqlens, ","));
  if (cached_kv > 0) s += fmt::format(", cached K/V prefix {}", cached_kv);
  return s;
}

namespace {

void check_lengths(const std::vector<long long>& v, const Problem& p, long long lo, long long hi, const char* what) {
  if (v.empty()) return;
  if (static_cast<long long>(v.size()) != p.batch)
    throw UsageError(fmt::format("{}: {} lengths for batch {} (one per request)", what, v.size(), p.batch));
  for (long long x : v)
    if (x < lo || x > hi)
      throw UsageError(fmt::format("{}: length {} outside [{}, {}]", what, x, lo, hi));
}

void check_heads(const Topology& t, const Problem& p) {
  const int kv = p.kv();
  if (kv < 1 || kv > p.heads || p.heads % kv != 0)
    throw UsageError(fmt::format("--kv-heads {}: must divide the {} query heads (GQA groups of equal size)", kv,
                                 p.heads));
  if (kv % t.ulysses != 0 && !(t.uaa && kv == p.heads))
    throw UsageError(fmt::format(
        "topology {}: {} K/V heads do not divide by the Ulysses degree {}: all-to-all context parallelism needs "
        "U <= KV heads, dividing them",
        t.label, kv, t.ulysses));
  if (t.uaa && kv < p.heads && p.heads % t.ulysses != 0)
    throw UsageError(fmt::format(
        "topology {}: UAA head padding with GQA ({}/{}) would split query groups from their K/V head; not served",
        t.label, p.heads, kv));
  if (t.uaa && t.ring > 1)
    throw UsageError(fmt::format("topology {}: K/V head padding (+uaa) combined with Ring is not served", t.label));
}

}  // namespace

void check_workload(const Topology& t, const Problem& p, int world) {
  check_topology(t, world, p.heads, p.seq);
  check_heads(t, p);
  if (p.causal)
    throw UsageError("causal attention: every layout here is non-causal; causal fails closed (no dense fallback)");
  if (!p.joint_valid.empty() && p.text_tokens == 0)
    throw UsageError("--joint-lengths without joint tokens: a joint key mask needs joint K/V (--text-tokens)");
  check_lengths(p.joint_valid, p, 0, p.text_tokens, "--joint-lengths");
  check_lengths(p.image_valid, p, 1, p.seq, "--image-lengths");
  if (p.cached_kv < 0) throw UsageError("--cached-kv must be >= 0");
  if (!p.cu_seqlens.empty()) {
    const auto& cu = p.cu_seqlens;
    if (cu.size() < 2 || cu.front() != 0 || cu.back() != p.seq)
      throw UsageError(fmt::format("cu_seqlens {} must run from 0 to the sequence length {}", fmt::join(cu, ","), p.seq));
    for (std::size_t i = 1; i < cu.size(); ++i)
      if (cu[i] <= cu[i - 1])
        throw UsageError(fmt::format("cu_seqlens {}: requests must be non-empty and in order", fmt::join(cu, ",")));
  }
  if (p.packed()) {
    if (p.text_tokens > 0)
      throw UsageError("packed requests (cu_seqlens) combined with joint tokens: no producer defines it; not served");
    if (p.batch != 1)
      throw UsageError(fmt::format("packed requests need batch 1 (the requests are the batch), got {}", p.batch));
    if (p.cached_kv > 0)
      throw UsageError("packed requests with a cached K/V prefix: which request owns the prefix is undefined; not served");
    if (p.masked())
      throw UsageError("packed requests with a key-padding mask: not served (the packing already bounds each request)");
  }
}

std::vector<long long> remap_cu_seqlens(const std::vector<long long>& cu, long long lo, long long hi) {
  std::vector<long long> out{0};
  for (std::size_t i = 0; i + 1 < cu.size(); ++i)
    out.push_back(out.back() + std::max(0LL, std::min(cu[i + 1], hi) - std::max(cu[i], lo)));
  return out;
}

std::vector<long long> packed_requests(long long seq, int n) {
  if (n < 1 || seq < n) throw UsageError(fmt::format("--requests {}: needs 1 <= n <= sequence {}", n, seq));
  const long long parts = static_cast<long long>(n) * (n + 1) / 2;
  std::vector<long long> cu{0};
  for (int i = 1; i < n; ++i) cu.push_back(std::max(cu.back() + 1, cu.back() + seq * i / parts));
  cu.push_back(seq);
  if (cu[cu.size() - 2] >= seq) throw UsageError(fmt::format("--requests {}: sequence {} too short", n, seq));
  return cu;
}

}  // namespace layerbench::attention
