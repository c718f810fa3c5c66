// layerbench-report FILES... --output-dir DIR: report.md (PR-ready tables), one CSV per table, report.html (inline SVG).
// Exit codes: 0 written, 2 bad input or unwritable output.
#include "bench/cli/app.hpp"
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
  app.add_option("--resamples", options.resamples, "bootstrap resamples for paired studies")->check(CLI::Range(1000, 10000000));
  app.add_option("--seed", options.seed, "bootstrap seed (recorded in the report)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    if (!(options.confidence >= 0.5 && options.confidence <= 0.999))
      throw std::invalid_argument(fmt::format("--confidence {:g}: must be in [0.5, 0.999]", options.confidence));
    auto report = layerbench::reports::build_report(files, options);
    report.title = title;
    for (const auto& path : layerbench::reports::write_report(report, out_dir)) fmt::print("wrote {}\n", path);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "layerbench-report: error: {}\n", e.what());
    return 2;
  }
}
