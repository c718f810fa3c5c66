// layerbench-report FILES... -o DIR: report.md (PR-ready tables), one CSV per table, report.html (inline SVG).
// Exit codes: 0 written, 2 bad input or unwritable output.
#include "common/cli.hpp"
#include "common/output_file.hpp"
#include "common/usage.hpp"
#include "reports/report.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  CLI::App app{"layerbench-report: PR tables (markdown), CSV and an HTML page with SVG plots"};
  std::vector<std::string> files;
  std::string out_dir;
  layerbench::stats::PairedOptions options;
  std::string title = "layerbench report";
  app.add_option("files", files, "layerbench JSON result files and paired studies (JSONL or CSV)")->required();
  app.add_option("-o,--output", out_dir, "directory for report.md, report.html and the CSVs")->required();
  app.add_option("--title", title, "page and markdown title");
  namespace cli = layerbench::cli;
  cli::add_real(app, "--confidence", options.confidence, "confidence level of the intervals",
                layerbench::num::RealRange::closed(0.5, 0.999));
  cli::add_int(app, "--resamples", options.resamples, "bootstrap resamples for paired studies", std::size_t{1000},
               std::size_t{10000000});
  cli::add_int(app, "--seed", options.seed, "bootstrap seed (recorded in the report)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : layerbench::kExitUsage;
  }
  try {
    layerbench::check_output_dir(out_dir, "--output");  // before reading anything
    auto report = layerbench::reports::build_report(files, options);
    report.title = title;
    for (const auto& path : layerbench::reports::write_report(report, out_dir)) fmt::print("wrote {}\n", path);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "layerbench-report: error: {}\n", e.what());
    return layerbench::kExitUsage;
  }
}
