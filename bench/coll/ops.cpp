// Op names and bus factors (from the op table), size parsing and stepping.
#include "bench/coll/cases.hpp"

#include "collectives/error.hpp"
#include "common/numeric.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>

namespace layerbench::coll {

std::string_view to_string(Op op) { return spec(op).name; }

Op parse_op(std::string_view s) {
  std::string known;
  for (const auto& o : op_table()) {
    if (o.name == s) return o.op;
    known += (known.empty() ? "" : ", ") + std::string(o.name);
  }
  throw UsageError(fmt::format("--ops: unknown op '{}' (known: {})", s, known));
}

std::uint64_t parse_size(const std::string& s, std::string_view what) { return num::parse_bytes(s, what); }

std::vector<std::uint64_t> size_steps(std::uint64_t begin, std::uint64_t end, double factor,
                                      std::uint64_t increment) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t s = begin; s <= end;) {
    out.push_back(s);
    const std::uint64_t next = increment ? s + increment : static_cast<std::uint64_t>(std::ceil(s * factor));
    if (next <= s) break;
    s = next;
  }
  return out;
}

double busbw_factor(Op op, int n) { return spec(op).bus_factor(n); }

}  // namespace layerbench::coll
