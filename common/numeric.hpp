#pragma once
// The one validation layer for numeric input (flags and numbers read from files): whole numbers
// that never wrap (a "-1" for an unsigned option is an error, not 2^64 - 1), finite reals in a
// stated range, byte sizes with binary units (K/M/G/T), percentages, and work / memory estimates
// that are checked before anything is allocated. Every error is a UsageError whose message
// names what was given and what is accepted: "--pairs -3: must be a whole number in [1, 10000000]".
#include "common/usage.hpp"

#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace layerbench::num {

// A real interval; open ends exclude the bound. Printed as "[0, 1)", "(0, inf)".
struct RealRange {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;
  bool hi_open = false;
  static RealRange closed(double lo, double hi) { return {lo, hi, false, false}; }
  static RealRange open(double lo, double hi) { return {lo, hi, true, true}; }
  static RealRange positive(double hi = std::numeric_limits<double>::infinity()) { return {0, hi, true, false}; }
  static RealRange non_negative(double hi = std::numeric_limits<double>::infinity()) { return {0, hi, false, false}; }
  bool contains(double v) const;
  std::string text() const;
};

namespace detail {
// Digits with an optional sign; no fraction, exponent, hex or spaces. Throws UsageError.
std::int64_t parse_signed(std::string_view text, std::string_view what, std::int64_t lo, std::int64_t hi);
std::uint64_t parse_unsigned(std::string_view text, std::string_view what, std::uint64_t lo, std::uint64_t hi);
}  // namespace detail

// A whole number of type T in [lo, hi] (the type's limits by default).
template <std::integral T>
T parse_int(std::string_view text, std::string_view what, T lo = std::numeric_limits<T>::min(),
            T hi = std::numeric_limits<T>::max()) {
  if constexpr (std::is_signed_v<T>)
    return static_cast<T>(detail::parse_signed(text, what, lo, hi));
  else
    return static_cast<T>(detail::parse_unsigned(text, what, lo, hi));
}

// A finite real (unless the range is unbounded and allow_infinite) inside `range`.
double parse_real(std::string_view text, std::string_view what, const RealRange& range = {});

// Checks an already-parsed value (e.g. read from a file): finite and inside the range.
void check_real(double v, std::string_view what, const RealRange& range = {});

// Bytes: a whole number with an optional binary unit K, M, G or T (also KB/KiB...), as nccl-tests
// reads -b/-e. "1.5K" is rejected (not a whole number of bytes only when the unit does not make it one).
std::uint64_t parse_bytes(std::string_view text, std::string_view what, std::uint64_t lo = 0,
                          std::uint64_t hi = std::numeric_limits<std::uint64_t>::max());

// "2%" -> 0.02 or a bare fraction "0.02"; the result must lie in `range` (as a fraction). A bare
// number >= 1 is rejected with a hint ("2" reads as 200%: write 2%).
double parse_fraction(std::string_view text, std::string_view what, const RealRange& range = RealRange::closed(0, 1));

// "137.4 GB", "512 B": for messages.
std::string format_bytes(double bytes);

// a * b and a + b, or nothing when the result does not fit in 64 bits.
std::optional<std::uint64_t> mul(std::uint64_t a, std::uint64_t b);
std::optional<std::uint64_t> add(std::uint64_t a, std::uint64_t b);

// Physical memory of this machine (bytes), from sysconf.
std::uint64_t physical_memory();

// Processes of this job on this machine (Open MPI / MPICH / Slurm environment), else 1.
int ranks_on_this_machine();

// Throws UsageError when `bytes_per_rank` (or its computation overflowed: nullopt) times the
// ranks that share this machine exceeds its physical memory: "the run needs about 137.4 GB per
// rank (549.6 GB for 4 ranks on this machine), which has 31.3 GB; <hint>".
void check_memory(std::optional<std::uint64_t> bytes_per_rank, int ranks_on_machine, std::string_view what,
                  std::string_view hint);

}  // namespace layerbench::num
