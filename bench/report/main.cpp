// layerbench-report FILES... -o DIR: report.md (PR-ready tables), one CSV per table, report.html (inline SVG).
// Exit codes: 0 written, 2 bad input or unwritable output.
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
  app.add_option("--confidence", options.confidence, "confidence level of the intervals")->check(CLI::Range(0.5, 0.999));
  app.add_option("--resamples", options.resamples, "bootstrap resamples for paired studies")->check(CLI::Range(1000, 10000000));
  app.add_option("--seed", options.seed, "bootstrap seed (recorded in the report)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    auto report = layerbench::reports::build_report(files, options);
    report.title = title;
    for (const auto& path : layerbench::reports::write_report(report, out_dir)) fmt::print("wrote {}\n", path);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "layerbench-report: error: {}\n", e.what());
    return 2;
  }
}
