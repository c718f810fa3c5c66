#pragma once
// A report: sections from any number of inputs, rendered as markdown (PR comment), CSV (one file per
// table) and one self-contained HTML page (inline CSS and SVG; nothing fetched).
#include "reports/sections.hpp"

#include <string>
#include <vector>

namespace layerbench::reports {

struct Report {
  std::string title = "layerbench report";
  std::vector<Section> sections;
  std::vector<std::string> skipped;  // one sentence per input that was not reported, and why
};

// Builds a report from files of any supported kind (layerbench JSON, study JSONL or CSV).
// Throws std::runtime_error naming the file on unreadable, truncated or unsupported input.
Report build_report(const std::vector<std::string>& paths, const stats::PairedOptions& options = {});

std::string render_markdown(const Report& report);
std::string render_html(const Report& report);

struct CsvFile {
  std::string name;  // file name, unique within the report
  std::string text;
};
std::vector<CsvFile> render_csvs(const Report& report);

// Writes report.md, report.html and the CSVs into dir (created if needed); returns the paths written.
std::vector<std::string> write_report(const Report& report, const std::string& dir);

}  // namespace layerbench::reports
