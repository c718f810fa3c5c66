#include "attention/topology.hpp"

#include "collectives/error.hpp"

#include <fmt/format.h>

#include <charconv>
#include <set>

namespace layerbench::attention {
namespace {

// No job has more ranks than this; a larger degree is a typo (and would overflow U*R*A).
constexpr int kMaxDegree = 1 << 20;

// "usp4" -> 4 after the prefix; UsageError for anything but an integer in [1, kMaxDegree].
int parse_degree(std::string_view text, std::string_view prefix, std::string_view whole) {
  const std::string_view digits = text.substr(prefix.size());
  int v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || v < 1 || v > kMaxDegree)
    throw UsageError(fmt::format("topology '{}': '{}' needs a degree in [1, {}]", whole, text, kMaxDegree));
  return v;
}

}  // namespace

int Topology::padded_heads(int heads) const {
  if (!uaa) return heads;
  return (heads + ulysses - 1) / ulysses * ulysses;
}

std::string topology_label(int ulysses, int ring, int allgather, bool uaa) {
  std::string label;
  auto add = [&](const char* name, int degree) {
    if (degree > 1) label += fmt::format("{}{}{}", label.empty() ? "" : "+", name, degree);
  };
  add("usp", ulysses);
  add("ring", ring);
  add("cp", allgather);
  if (label.empty() || (uaa && ulysses == 1)) label = label.empty() ? "usp1" : "usp1+" + label;
  if (uaa) label += "+uaa";
  return label;
}

Topology parse_topology(std::string_view text) {
  Topology t;
  bool seen_usp = false, seen_ring = false, seen_cp = false;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t plus = text.find('+', pos);
    const std::string_view part =
        text.substr(pos, plus == std::string_view::npos ? std::string_view::npos : plus - pos);
    if (part.starts_with("usp") && !seen_usp) {
      t.ulysses = parse_degree(part, "usp", text);
      seen_usp = true;
    } else if (part.starts_with("ring") && !seen_ring) {
      t.ring = parse_degree(part, "ring", text);
      seen_ring = true;
    } else if (part.starts_with("cp") && !seen_cp) {
      t.allgather = parse_degree(part, "cp", text);
      seen_cp = true;
    } else if (part == "uaa" && !t.uaa) {
      t.uaa = true;
    } else {
      throw UsageError(fmt::format(
          "topology '{}': unknown or repeated part '{}' (expected uspU, ringR, cpA joined by '+', "
          "optionally +uaa: usp2+ring2, usp2+cp2, ring4, usp4+uaa)",
          text, part));
    }
    if (plus == std::string_view::npos) break;
    pos = plus + 1;
  }
  if (!seen_usp && !seen_cp && !seen_ring)
    throw UsageError(fmt::format("topology '{}' names none of uspU, ringR, cpA", text));
  if (t.uaa && !seen_usp)
    throw UsageError(fmt::format("topology '{}': +uaa needs a Ulysses degree (uspU+uaa)", text));
  t.label = topology_label(t.ulysses, t.ring, t.allgather, t.uaa);
  return t;
}

std::vector<Topology> parse_topologies(std::string_view list) {
  std::vector<Topology> out;
  std::set<std::string> labels;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    const std::size_t comma = list.find(',', pos);
    const auto part =
        list.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    if (!part.empty()) {
      Topology t = parse_topology(part);
      if (!labels.insert(t.label).second)
        throw UsageError(fmt::format("topology '{}' given twice", t.label));
      out.push_back(std::move(t));
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (out.empty()) throw UsageError("--topologies is empty");
  return out;
}

std::vector<Topology> all_topologies(int world, int heads) {
  std::vector<Topology> out;
  for (int u = 1; u <= world; ++u) {
    if (world % u) continue;
    for (int r = 1; r <= world / u; ++r) {
      if ((world / u) % r) continue;
      const int a = world / u / r;
      for (const bool uaa : {false, true}) {
        if (uaa && (u == 1 || heads % u == 0)) continue;  // +uaa only where it pads
        Topology t;
        t.ulysses = u;
        t.ring = r;
        t.allgather = a;
        t.uaa = uaa;
        t.label = topology_label(u, r, a, uaa);
        out.push_back(std::move(t));
      }
    }
  }
  return out;
}

void check_topology(const Topology& t, int world, int heads, long long seq) {
  if (t.world() != world)
    throw UsageError(fmt::format("topology {} needs U*R*A = {}*{}*{} = {} ranks, the world has {}", t.label,
                                 t.ulysses, t.ring, t.allgather, t.world(), world));
  if (!t.uaa && heads % t.ulysses != 0)
    throw UsageError(fmt::format(
        "topology {}: {} heads do not divide by the Ulysses degree {} (use {}+uaa to pad)",
        t.label, heads, t.ulysses, t.label));
  if (seq % t.regions() != 0)
    throw UsageError(fmt::format(
        "topology {}: sequence {} does not split into R*A = {} equal regions (uneven per-rank regions "
        "are not served)",
        t.label, seq, t.regions()));
  const long long region = seq / t.regions();
  if (!t.uaa && region % t.ulysses != 0)
    throw UsageError(fmt::format(
        "topology {}: region {} does not split into {} equal shards (strict mode; use +uaa)",
        t.label, region, t.ulysses));
  if (region < t.ulysses)
    throw UsageError(fmt::format("topology {}: sequence {} is shorter than the world", t.label, seq));
}

std::vector<long long> shard_lengths(const Topology& t, long long seq) {
  const long long region = seq / t.regions();
  std::vector<long long> out;
  for (long long g = 0; g < t.regions(); ++g)
    for (int u = 0; u < t.ulysses; ++u)
      out.push_back(region / t.ulysses + (u < region % t.ulysses ? 1 : 0));
  return out;
}

}  // namespace layerbench::attention
