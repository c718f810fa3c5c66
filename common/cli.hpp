#pragma once
// CLI11 options parsed by the numeric layer (common/numeric.hpp): every binary declares its
// numeric flags through these, so "-1" for a count, "nan" for a time, "1e999" or "16X" give the
// same kind of message and exit 2 everywhere. A bad value raises CLI::ValidationError, which
// every binary's parse handler already reports as a usage error.
#include "common/numeric.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

namespace layerbench::cli {

namespace detail {
// "--minbytes" from "-b,--minbytes": the name messages use.
inline std::string display_name(const std::string& names) {
  std::string best;
  std::size_t start = 0;
  while (start <= names.size()) {
    const auto comma = names.find(',', start);
    const std::string n = names.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (best.empty() || n.rfind("--", 0) == 0) best = n;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return best;
}

template <class F>
CLI::Option* add_parsed(CLI::App& app, const std::string& names, const std::string& desc, const std::string& type,
                        std::string default_text, F assign) {
  const std::string shown = display_name(names);
  auto* opt = app.add_option_function<std::string>(
      names,
      [shown, assign](const std::string& text) {
        try {
          assign(shown, text);
        } catch (const UsageError& e) {
          throw CLI::ValidationError(e.what());
        }
      },
      desc);
  opt->type_name(type);
  if (!default_text.empty()) opt->default_str(std::move(default_text));
  return opt;
}

template <class T>
std::string default_of(const T& v) {
  return fmt::format("{}", v);
}
}  // namespace detail

// A whole number in [lo, hi].
template <std::integral T>
CLI::Option* add_int(CLI::App& app, const std::string& names, T& var, const std::string& desc,
                     T lo = std::numeric_limits<T>::min(), T hi = std::numeric_limits<T>::max()) {
  return detail::add_parsed(app, names, desc, std::is_signed_v<T> ? "INT" : "UINT", detail::default_of(var),
                            [&var, lo, hi](const std::string& what, const std::string& text) {
                              var = num::parse_int<T>(text, what, lo, hi);
                            });
}

// A comma-separated list of whole numbers, each in [lo, hi]; at most max_items of them.
template <std::integral T>
CLI::Option* add_int_list(CLI::App& app, const std::string& names, std::vector<T>& var, const std::string& desc,
                          T lo, T hi, std::size_t max_items = 1u << 16) {
  return detail::add_parsed(app, names, desc, "LIST", "",
                            [&var, lo, hi, max_items](const std::string& what, const std::string& text) {
                              var.clear();
                              std::size_t start = 0;
                              while (true) {
                                const auto comma = text.find(',', start);
                                var.push_back(num::parse_int<T>(
                                    std::string_view(text).substr(start, comma == std::string::npos ? std::string::npos : comma - start),
                                    what, lo, hi));
                                if (var.size() > max_items)
                                  throw UsageError(fmt::format("{}: more than {} values", what, max_items));
                                if (comma == std::string::npos) break;
                                start = comma + 1;
                              }
                            });
}

// A finite real inside `range`.
inline CLI::Option* add_real(CLI::App& app, const std::string& names, double& var, const std::string& desc,
                             const num::RealRange& range) {
  return detail::add_parsed(app, names, desc, "FLOAT", detail::default_of(var),
                            [&var, range](const std::string& what, const std::string& text) {
                              var = num::parse_real(text, what, range);
                            });
}
inline CLI::Option* add_real(CLI::App& app, const std::string& names, std::optional<double>& var,
                             const std::string& desc, const num::RealRange& range) {
  return detail::add_parsed(app, names, desc, "FLOAT", "",
                            [&var, range](const std::string& what, const std::string& text) {
                              var = num::parse_real(text, what, range);
                            });
}

// A percentage or fraction (common/numeric.hpp parse_fraction).
inline CLI::Option* add_fraction(CLI::App& app, const std::string& names, double& var, const std::string& desc,
                                 const num::RealRange& range) {
  return detail::add_parsed(app, names, desc, "PERCENT", detail::default_of(var),
                            [&var, range](const std::string& what, const std::string& text) {
                              var = num::parse_fraction(text, what, range);
                            });
}

// Bytes with an optional K/M/G/T unit.
inline CLI::Option* add_bytes(CLI::App& app, const std::string& names, std::uint64_t& var, const std::string& desc,
                              std::uint64_t lo = 0, std::uint64_t hi = std::numeric_limits<std::uint64_t>::max()) {
  return detail::add_parsed(app, names, desc, "BYTES", detail::default_of(var),
                            [&var, lo, hi](const std::string& what, const std::string& text) {
                              var = num::parse_bytes(text, what, lo, hi);
                            });
}

}  // namespace layerbench::cli
