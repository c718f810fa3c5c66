#include "common/cli/app.hpp"

#include "common/cli/version.hpp"
#include "common/numeric.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace layerbench::cli {

void init_app(CLI::App& app, std::string_view program) {
  app.name(std::string(program));
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", version_text(program), "print the version, the commit and the library versions");
}

CLI::Option* add_output_option(CLI::App& app, const std::string& flag, std::string& path, const std::string& what) {
  // An empty name given on the command line (--trace '') is refused, never taken as "no output".
  const CLI::Validator non_empty(
      [](std::string& s) { return s.empty() ? std::string("empty file name (give a file, or leave the flag out)") : std::string(); },
      "");  // no description: the help keeps "FILE" alone
  return app.add_option(flag, path, fmt::format("write {} to FILE ('-': standard output)", what))
      ->type_name("FILE")
      ->check(non_empty);
}

double parse_fraction(const std::string& flag, const std::string& text) {
  try {
    return num::parse_fraction(text, flag, num::RealRange::open(0, 1));  // the one numeric parser
  } catch (const UsageError& e) {
    throw CLI::ValidationError(e.what());
  }
}

void add_confidence_options(CLI::App& app, double& confidence, double& alpha) {
  auto parse = [](const std::string& flag, const std::string& text) { return parse_fraction(flag, text); };
  auto* c = app.add_option_function<std::string>(
                   "--confidence",
                   [&confidence, &alpha, parse](const std::string& s) {
                     confidence = parse("--confidence", s);
                     alpha = 1 - confidence;
                   },
                   fmt::format("confidence level of the intervals (0.95 or 95%); default {:g}", confidence))
                ->type_name("C");
  auto* a = app.add_option_function<std::string>(
                   "--alpha",
                   [&confidence, &alpha, parse](const std::string& s) {
                     alpha = parse("--alpha", s);
                     confidence = 1 - alpha;
                   },
                   fmt::format("significance level = 1 - confidence (0.05 or 5%); default {:g}", alpha))
                ->type_name("A");
  c->excludes(a);
}

}  // namespace layerbench::cli
