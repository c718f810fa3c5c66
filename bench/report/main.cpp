// layerbench-report FILES... --output-dir DIR: report.md (PR-ready tables), one CSV per table, report.html (inline SVG).
// Exit codes: 0 written, 2 bad input or unwritable output.
#include "common/cli/app.hpp"
#include "common/cli/suggest.hpp"
#include "common/cli.hpp"
#include "common/output_file.hpp"
#include "common/usage.hpp"
#include "reports/report.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  CLI::App app{"layerbench-report: PR tables (markdown), CSV and an HTML page with SVG plots"};
  layerbench::cli::init_app(app, "layerbench-report");
  std::vector<std::string> files;
  std::string out_dir;
  layerbench::stats::PairedOptions options;
  std::string title = "layerbench report";
  app.add_option("files", files, "layerbench JSON result files and paired studies (JSONL or CSV)")->required();
  app.add_option("--output-dir,-o,--output", out_dir,
                 "directory for report.md, report.html and the CSVs (-o and --output are older spellings)")
      ->type_name("DIR")
      ->required();
  app.add_option("--title", title, "page and markdown title");
  double alpha = 1 - options.confidence;
  layerbench::cli::add_confidence_options(app, options.confidence, alpha);
  layerbench::cli::add_int(app, "--resamples", options.resamples, "bootstrap resamples for paired studies",
                           std::size_t{1000}, std::size_t{10000000});
  layerbench::cli::add_int(app, "--seed", options.seed, "bootstrap seed (recorded in the report)");
  app.footer(
      "EXAMPLES:\n"
      "  layerbench-report moe.json attn.json -o report\n"
      "      report/report.md (PR tables), report/report.html (SVG plots), one CSV per table\n"
      "  layerbench-report study.jsonl --title 'old vs new' -o report\n"
      "  layerbench-report gbench.json hyperfine.json results.csv -o report\n");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    fmt::print(stderr, "layerbench-report: error: {}\n", layerbench::cli::parse_error_text(app, e));
    return layerbench::kExitUsage;
  }
  try {
    if (!(options.confidence >= 0.5 && options.confidence <= 0.999))
      throw std::invalid_argument(fmt::format("--confidence {:g}: must be in [0.5, 0.999]", options.confidence));
    layerbench::check_output_dir(out_dir, "--output");  // before reading anything
    auto report = layerbench::reports::build_report(files, options);
    report.title = title;
    for (const auto& why : report.skipped) fmt::print(stderr, "layerbench-report: {}\n", why);
    for (const auto& path : layerbench::reports::write_report(report, out_dir)) fmt::print("wrote {}\n", path);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "layerbench-report: error: {}\n", e.what());
    return layerbench::kExitUsage;
  }
}
