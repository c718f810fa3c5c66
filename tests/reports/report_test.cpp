// Output tests: the markdown, CSV and HTML/SVG the report writes for the fixtures in data/
// (a layerbench-moe component profile, a layerbench-coll sweep, a layerbench-attn topology
// comparison, a layerbench-ab study JSONL and a CSV study).
#include "reports/report.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace lr = layerbench::reports;

namespace {

std::string data(const std::string& name) { return std::string(LB_REPORTS_TEST_DATA) + "/" + name; }

layerbench::stats::PairedOptions quick() {
  layerbench::stats::PairedOptions o;
  o.resamples = 5000;  // enough for interval structure; values are checked against the t interval
  return o;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

const lr::Report& full_report() {
  static const lr::Report r = lr::build_report(
      {data("moe_profile.json"), data("coll_sweep.json"), data("attn_topology.json"), data("study.jsonl"),
       data("study.csv")},
      quick());
  return r;
}

}  // namespace

TEST(ReportMarkdown, ComponentProfileHasShareOfLayer) {
  const auto md = lr::render_markdown(full_report());
  EXPECT_NE(md.find("## Component profile — layerbench-moe"), std::string::npos);
  EXPECT_NE(md.find("| Component | median ms/layer | min ms | max ms | share of layer |"), std::string::npos);
  EXPECT_NE(md.find("|---|---:|---:|---:|---:|"), std::string::npos);
  // The whole layer comes first at 100%, then components by median, each with its share.
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| whole layer \| 22\.\d{3} \| [\d.]+ \| [\d.]+ \| 100\.0% \|)")));
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| expert_compute \| 16\.\d{3} \| [\d.]+ \| [\d.]+ \| 70\.\d% \|)")));
  EXPECT_LT(md.find("| expert_compute"), md.find("| shared_expert"));
  EXPECT_LT(md.find("| shared_expert"), md.find("| sequence_size_exchange"));
  // Components the file marks "in_layer": false get no share.
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| branches_serialized \| 19\.\d{3} \| [\d.]+ \| [\d.]+ \| — \|)")));
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| sequence_size_exchange \| 0\.\d{3} \| [\d.]+ \| [\d.]+ \| — \|)")));
}

TEST(ReportMarkdown, EmbeddedAbStudyBecomesAPairedStudySection) {
  const auto md = lr::render_markdown(full_report());
  const auto at = md.find("## Paired study — metadata A/B, 36-layer stack time");
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(md.find("Base: per-layer sequence-size exchange; candidate: reused split sizes.", at), std::string::npos);
  // Every candidate sample is below its base: 8 of 8 pairs faster.
  EXPECT_NE(md.find("| sign test | 8/8 pairs faster", at), std::string::npos);
}

TEST(ReportMarkdown, CollectiveSweepRowsAndLinkShare) {
  const auto md = lr::render_markdown(full_report());
  EXPECT_NE(md.find("| op | size | bytes | dtype | placement | time us | algbw GB/s | busbw GB/s | busbw % of link | #wrong |"),
            std::string::npos);
  // 2 ops x 2 placements x 9 sizes.
  EXPECT_EQ(count(md, "\n| all_gather |") + count(md, "\n| all_reduce |"), 36u);
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| all_reduce \| 64M \| 67108864 \| bf16 \| out-of-place \| [\d.]+ \| [\d.]+ \| 434\.\d\d \| 96\.\d% \| 0 \|)")));
}

TEST(ReportMarkdown, TopologyComparisonMarksFastest) {
  const auto md = lr::render_markdown(full_report());
  EXPECT_NE(md.find("| topology | sequence | qkv_all_to_all | kv_all_gather |"), std::string::npos);
  EXPECT_EQ(count(md, "| fastest |"), 2u);  // one per sequence length
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| usp2\+cp2 \| S=16384 \|.*\| \+\d+\.\d% \|)")));
}

TEST(ReportMarkdown, PairedStudyTables) {
  const auto md = lr::render_markdown(full_report());
  EXPECT_NE(md.find("## Paired study — wall"), std::string::npos);
  EXPECT_NE(md.find("| Arm | n | median | mean | sd | min | max |"), std::string::npos);
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| base \| 23 \| [\d.]+ s \| [\d.]+ s \|)")));
  EXPECT_NE(md.find("**Paired delta (base − candidate), n=23**"), std::string::npos);
  for (const char* row : {"| mean |", "| median |", "| 10% trimmed mean |", "| sd / se |", "| 95% CI of the mean (t) |",
                          "| 95% CI of the mean (bootstrap BCa, 5000) |", "| Wilcoxon signed-rank |", "| sign test |",
                          "| drift (Spearman ρ vs pair index) |", "| Tukey outliers (labelled, kept) |"})
    EXPECT_NE(md.find(row), std::string::npos) << row;
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| sign test \| \d+/23 pairs faster, two-sided p=)")));
  EXPECT_NE(md.find("## Paired study — value"), std::string::npos);
  EXPECT_NE(md.find("n=12"), std::string::npos);
}

TEST(ReportStudy, JsonlPairingFollowsLayerbenchAb) {
  const auto s = lr::load_study(data("study.jsonl"));
  EXPECT_EQ(s.metric, "wall");
  EXPECT_EQ(s.unit, "s");
  ASSERT_EQ(s.base.size(), 23u);  // 24 pairs, pair 9 excluded (its base run failed)
  EXPECT_EQ(std::count(s.pair_ids.begin(), s.pair_ids.end(), 9), 0);
  // Pair 5's first attempt timed out on the candidate: its retry (attempt 1) is the pair.
  const auto it = std::find(s.pair_ids.begin(), s.pair_ids.end(), 5);
  ASSERT_NE(it, s.pair_ids.end());
  const auto i = static_cast<std::size_t>(it - s.pair_ids.begin());
  std::ifstream in(data("study.jsonl"));
  std::string line;
  double base5 = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j.value("pair", -1) == 5 && j.value("attempt", -1) == 1 && j.value("arm", "") == "base") base5 = j["metric"];
  }
  EXPECT_DOUBLE_EQ(s.base[i], base5);
}

TEST(ReportStudy, BadInputNamesFileAndLine) {
  const auto dir = std::filesystem::temp_directory_path() / "lb_report_test_inputs";
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  // A JSONL whose last record was cut off mid-write (a killed layerbench-ab run): the torn line is
  // skipped, as layerbench-ab analyze does; a broken line before the end is an error naming it.
  const auto truncated = write("cut.jsonl", R"({"type":"study","metric":"wall"}
{"type":"run","pair":0,"attempt":0,"arm":"base","metric":1.0,"status":"ok"}
{"type":"run","pair":0,"attempt":0,"arm":"candidate","metric":1.5,"status":"ok"}
{"type":"run","pair":1,"attempt":0,"arm":"candid)");
  EXPECT_EQ(lr::load_study(truncated).base.size(), 1u);
  const auto broken = write("broken.jsonl", R"({"type":"study","metric":"wall"}
{"type":"run","pair":0,"attempt":0,"arm":"base","metric":1.0,"status":"ok"}
{"type":"run","pair":0,"attempt":0,"arm":"candid
{"type":"run","pair":1,"attempt":0,"arm":"base","metric":1.0,"status":"ok"})");
  try {
    lr::load_study(broken);
    FAIL() << "a broken line before the end accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("broken.jsonl:3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(lr::load_study(write("short.csv", "base,candidate\n1.0,2.0\n3.0\n")), std::runtime_error);
  EXPECT_THROW(lr::load_study(write("nan.csv", "base,candidate\n1.0,abc\n")), std::runtime_error);
  EXPECT_THROW(lr::load_study(write("nocol.csv", "a,b\n1,2\n")), std::runtime_error);
  EXPECT_THROW(lr::build_report({write("cut.json", "{\"schema\": \"layerbench/1\", \"results\": [")}), std::runtime_error);
  EXPECT_THROW(lr::build_report({(dir / "missing.json").string()}), std::runtime_error);
  std::filesystem::remove_all(dir);
}

TEST(ReportCsv, OneFilePerTableWithHeaders) {
  const auto csvs = lr::render_csvs(full_report());
  ASSERT_EQ(csvs.size(), 9u);  // profile, sweep, topology, 3 x (arms, delta): the MoE A/B and 2 studies
  std::set<std::string> names;
  for (const auto& c : csvs) {
    names.insert(c.name);
    EXPECT_TRUE(std::regex_match(c.name, std::regex(R"([a-z0-9-]+\.csv)"))) << c.name;
  }
  EXPECT_EQ(names.size(), csvs.size());
  const auto& sweep = *std::find_if(csvs.begin(), csvs.end(), [](const auto& c) { return c.name.find("collective") != std::string::npos; });
  EXPECT_EQ(sweep.text.substr(0, sweep.text.find('\n')),
            "op,size,bytes,dtype,placement,time us,algbw GB/s,busbw GB/s,busbw % of link,#wrong");
  EXPECT_EQ(count(sweep.text, "\n"), 37u);
  // Cells with commas are quoted (the CI cells "[lo, hi]").
  const auto& delta = *std::find_if(csvs.begin(), csvs.end(), [](const auto& c) {
    return c.name.rfind("paired-study-wall-paired-delta", 0) == 0;
  });
  EXPECT_TRUE(std::regex_search(delta.text, std::regex(R"(95% CI of the mean \(t\),"\[[-+][\d.]+, [-+][\d.]+\] s")")));
}

TEST(ReportHtml, SelfContainedAndEveryPlotLabelled) {
  const auto html = lr::render_html(full_report());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  // Only the SVG namespace URI may mention http.
  EXPECT_EQ(count(html, "http://"), count(html, "http://www.w3.org/2000/svg"));
  const std::regex svg_re(R"(<svg[\s\S]*?</svg>)");
  std::size_t plots = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), svg_re); it != std::sregex_iterator(); ++it) {
    const std::string svg = it->str();
    ++plots;
    EXPECT_NE(svg.find("<title>"), std::string::npos);
    EXPECT_NE(svg.find("class=\"title\""), std::string::npos);
    EXPECT_NE(svg.find("<g class=\"axis x\">"), std::string::npos);
    EXPECT_NE(svg.find("<g class=\"axis y\">"), std::string::npos);
    EXPECT_NE(svg.find("<g class=\"legend\">"), std::string::npos);
    EXPECT_GE(count(svg, "class=\"tick\""), 3u);
    EXPECT_GE(count(svg, "class=\"tick-label\""), 3u);
    // At least one axis title carries a unit in parentheses.
    EXPECT_TRUE(std::regex_search(svg, std::regex(R"(class="axis-label"[^>]*>[^<]+\([^)<]+\)</text>)"))) << svg.substr(0, 300);
    EXPECT_GE(count(svg, "class=\"legend-label\""), 1u);
  }
  EXPECT_EQ(plots, 9u);  // share bars, busbw, comm vs kernel, 3 x (per-pair series, delta distribution)
  EXPECT_NE(html.find(">message size (bytes)</text>"), std::string::npos);
  EXPECT_NE(html.find(">busbw (GB/s)</text>"), std::string::npos);
  EXPECT_NE(html.find(">link ceiling 450 GB/s</text>"), std::string::npos);
  EXPECT_NE(html.find(">share of layer (%)</text>"), std::string::npos);
  EXPECT_NE(html.find(">median time (ms)</text>"), std::string::npos);
  EXPECT_NE(html.find(">Per-pair series of both arms</text>"), std::string::npos);
  EXPECT_NE(html.find(">95% CI of mean (t)</text>"), std::string::npos);
}

TEST(ReportFiles, WritesMarkdownHtmlAndCsvs) {
  const auto dir = std::filesystem::temp_directory_path() / "lb_report_test_out";
  std::filesystem::remove_all(dir);
  const auto written = lr::write_report(full_report(), dir.string());
  EXPECT_EQ(written.size(), 11u);
  EXPECT_TRUE(std::filesystem::exists(dir / "report.md"));
  EXPECT_TRUE(std::filesystem::exists(dir / "report.html"));
  std::filesystem::remove_all(dir);
}
