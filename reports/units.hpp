#pragma once
// Units and number formatting for every figure a user reads. One rule everywhere: a value is
// scaled to a unit in which it reads between 1 and 1000 (ns/µs/ms/s, FLOP/s .. PFLOP/s,
// B/s .. TB/s, B .. TB) and printed with enough significant digits that a non-zero value never
// reads as 0. CSV files carry the raw number in the base unit named in the column header.
#include <string>

namespace layerbench::reports {

enum class Unit {
  none,        // a plain number
  ms,          // time, milliseconds (the base unit of every sample)
  flop,        // floating-point operations
  bytes,       // bytes (decimal multiples: 1 kB = 1000 B)
  flop_per_s,  // FLOP/s
  bytes_per_s, // B/s
  fraction,    // 0.25 -> "25.0%"
  count,       // integers
};

// "ms", "FLOP/s", ...: the base unit's symbol (for CSV headers: "median_ms", "rate_flop_per_s").
std::string unit_symbol(Unit u);
std::string unit_csv_suffix(Unit u);  // "ms", "flop_per_s", "bytes_per_s", "" for none
Unit unit_from_symbol(const std::string& s);  // inverse of unit_symbol; none when unknown

// `sig` significant digits (at least one non-zero digit is always shown); "0" for zero,
// "—" for NaN or infinity.
std::string fmt_sig(double v, int sig = 3);
// The same with an explicit sign: "+0.0123", "−" for negatives stays ASCII '-'.
std::string fmt_sig_signed(double v, int sig = 3);
// Scaled to a readable unit: 0.0154 ms -> "15.4 µs", 2.4e13 FLOP/s -> "24.0 TFLOP/s".
std::string fmt_quantity(double v, Unit u, int sig = 3);
std::string fmt_quantity_signed(double v, Unit u, int sig = 3);
// A time in ms, scaled (shorthand for fmt_quantity(ms, Unit::ms)).
std::string fmt_time(double ms, int sig = 3);
// A fraction as a percentage with adaptive decimals: 0.709 -> "70.9%", 0.00042 -> "0.042%".
std::string fmt_share(double fraction, int sig = 3);
std::string fmt_share_signed(double fraction, int sig = 3);
// "[+1.2 µs, +3.4 µs]" in one unit chosen for the larger end.
std::string fmt_interval(double low, double high, Unit u, int sig = 3);

}  // namespace layerbench::reports
