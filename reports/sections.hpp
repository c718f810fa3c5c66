#pragma once
// Report sections built from inputs: each is prose, tables (markdown/CSV/HTML) and SVG figures (HTML).
#include "reports/inputs.hpp"
#include "stats/paired.hpp"
#include "reports/table.hpp"

#include <string>
#include <vector>

namespace layerbench::reports {

struct Section {
  std::string title;
  std::string intro;                 // markdown-safe prose, one paragraph
  std::vector<Table> tables;
  std::vector<std::string> figures;  // complete <svg> documents
  std::vector<std::string> notes;    // bullet points (reading guidance, warnings)
};

// The sections a layerbench result file yields, chosen by its content:
//   "components"                          -> component profile with share of layer (layerbench-moe)
//   results with params.op and bytes      -> collective sweep (layerbench-coll)
//   groups "topology/sequence" with total -> topology comparison (layerbench-attn)
//   anything else                         -> a plain results table
std::vector<Section> result_sections(const ResultFile& file);

Section component_profile(const ResultFile& file);
Section collective_sweep(const ResultFile& file);
Section topology_comparison(const ResultFile& file);
Section results_table(const ResultFile& file);
// Google Benchmark JSON (layerbench's --benchmark_format=json, or any GB binary): one row per
// benchmark run and aggregate, times in the file's own unit.
Section gbench_section(const nlohmann::json& doc, const std::string& path);
Section paired_study(const PairedStudy& study, const stats::PairedOptions& options = {});

// Attention components that are communication (collectives) vs the attention kernel itself.
bool is_comm_component(const std::string& name);

}  // namespace layerbench::reports
