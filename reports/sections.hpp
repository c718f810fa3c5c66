#pragma once
// Report sections built from inputs: each is prose, tables (markdown/CSV/HTML) and SVG figures (HTML).
#include "reports/inputs.hpp"
#include "stats/paired.hpp"
#include "reports/document.hpp"
#include "reports/table.hpp"

#include <string>
#include <vector>

namespace layerbench::reports {

// The sections a layerbench result file yields, chosen by the declared roles:
//   a group with a total                  -> its composition (parts nested under their parents)
//   several groups with totals            -> a comparison of the totals, with intervals
//   results with params.op and bytes      -> collective sweep (layerbench-coll)
//   anything else                         -> a plain results table
// Every result-file section carries the file's numeric CSV (reports::results_to_csv).
// "dir/moe.json" -> "moe": names the CSVs a section writes.
std::string file_stem(const std::string& path);

std::vector<Section> result_sections(const ResultFile& file, double confidence = 0.95);

Section component_profile(const ResultFile& file);
Section collective_sweep(const ResultFile& file);
Section totals_comparison(const ResultFile& file, double confidence = 0.95);
Section results_table(const ResultFile& file);
// A binary's --csv (reports::results_to_csv): one row per measurement, rates from its numeric columns.
Section results_csv_section(const std::string& text, const std::string& path);
// Google Benchmark JSON (layerbench's --benchmark_format=json, or any GB binary): one row per
// benchmark run and aggregate, times in the file's own unit.
Section gbench_section(const nlohmann::json& doc, const std::string& path);
// hyperfine --export-json: a row per command; two commands: their ratio of medians (unpaired).
Section hyperfine_section(const nlohmann::json& doc, const std::string& path);
Section paired_study(const PairedStudy& study, const stats::PairedOptions& options = {});

}  // namespace layerbench::reports
