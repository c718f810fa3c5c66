// Output tests: the markdown, CSV and HTML/SVG the report writes for real outputs of the
// binaries (host backend), made by the CTest fixture lb.fixture.outputs into $LB_TEST_OUTPUTS: a
// layerbench-moe component profile with its in-process A/B, a layerbench-coll sweep, a
// layerbench-attn run and a layerbench-ab study JSONL; plus a hand-written CSV study (data/).
#include "reports/report.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <map>
#include <set>
#include <string>

namespace lr = layerbench::reports;

namespace {

std::string data(const std::string& name) { return std::string(LB_REPORTS_TEST_DATA) + "/" + name; }
std::string output(const std::string& name) {
  const char* dir = std::getenv("LB_TEST_OUTPUTS");
  return std::string(dir ? dir : "") + "/" + name;
}

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

std::size_t results_in(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in)["results"].size();
}

const lr::Report& full_report() {
  static const lr::Report r = lr::build_report(
      {output("moe.json"), output("coll.json"), output("attn.json"), output("study.jsonl"), data("study.csv")}, quick());
  return r;
}

}  // namespace

TEST(ReportMarkdown, ComponentProfileIsNestedByDeclaredParents) {
  const auto md = lr::render_markdown(full_report());
  EXPECT_NE(md.find("## Component profile — layerbench-moe"), std::string::npos);
  EXPECT_NE(md.find("| component | role | median | min | max | share of parent | rate |"), std::string::npos);
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| whole_layer \| total \| [\d.]+ (µ|m)?s \|)")));
  // Parts under the layer, parts of the routed branch one level deeper (indented with non-breaking
  // spaces, which markdown keeps), each parent closed by its remainder.
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| └ routed_branch \| part \| [\d.]+ (µ|m)?s \|.*\| [\d.]+% \|)")));
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| &nbsp;&nbsp;└ local_expert_compute \| part \|.*FLOP/s)")));
  EXPECT_TRUE(
      std::regex_search(md, std::regex(R"(\| &nbsp;&nbsp;└ ep_dispatch \| communication \|.*B/s alg / .*B/s bus)")));
  // (in the MoE profile's section; the attention cases that follow have compositions of their own)
  const auto moe_at = md.find("## Component profile — layerbench-moe");
  const auto moe_md = md.substr(moe_at, md.find("\n## ", moe_at + 1) - moe_at);
  EXPECT_EQ(count(moe_md, "└ other / unaccounted"), 2u);
  // Probes, stacks and references get no share.
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| seq_size_exchange \| probe \|[^\n]*\| — \|)")));
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| stack_reused_split_sizes \(per instance, x3\) \| stack \|)")));
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| dense_gemm_reference \| reference \|[^\n]*FLOP/s \|)")));
}

TEST(ReportMarkdown, EmbeddedAbStudyBecomesAPairedStudySection) {
  const auto md = lr::render_markdown(full_report());
  const auto at = md.find("## Paired study — metadata A/B, 3-layer stack time");
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(md.find("Base: per-layer sequence-size exchange; candidate: reused split sizes.", at), std::string::npos);
  EXPECT_TRUE(std::regex_search(md.substr(at), std::regex(R"(\| sign test \| \d+/\d+ pairs positive)")));
}

TEST(ReportMarkdown, CollectiveSweepRowsFromDeclaredWork) {
  const auto md = lr::render_markdown(full_report());
  EXPECT_NE(md.find("| op | size | bytes | dtype | placement | time | algbw | busbw | #wrong |"), std::string::npos);
  // No link bandwidth given: no share-of-link column and no ceiling line.
  EXPECT_EQ(md.find("share of link"), std::string::npos);
  EXPECT_NE(md.find("(no link bandwidth given: --link-gbps)"), std::string::npos);
  // Rates come from the declared work: B/s where the sweep declares its bytes, "—" where it does not.
  std::ifstream in(output("coll.json"));
  const bool declared = nlohmann::json::parse(in)["results"][0].contains("work");
  const std::string rate = declared ? R"([\d.]+ (k|M|G|T)?B/s)" : "—";
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| all_gather \| 32K \| 32768 \| [a-z0-9]+ \| out-of-place \| [\d.]+ (µ|m)?s \| )" +
                                               rate + R"( \| )" + rate + R"( \| 0 \|)")));
}

TEST(ReportMarkdown, PairedStudyTables) {
  const auto md = lr::render_markdown(full_report());
  EXPECT_NE(md.find("| Arm | n | median | mean | sd | min | max |"), std::string::npos);
  EXPECT_NE(md.find("(candidate minus base), n=24**"), std::string::npos);
  for (const char* row : {"| mean |", "| median |", "| Wilcoxon signed-rank |", "| sign test |", "| verdict |"})
    EXPECT_NE(md.find(row), std::string::npos) << row;
  EXPECT_NE(md.find("## Paired study — value"), std::string::npos);
  EXPECT_NE(md.find("n=12"), std::string::npos);
}

TEST(ReportMarkdown, NoFigurePrintsAsZeroWithDecimals) {
  const auto md = lr::render_markdown(full_report());
  std::smatch m;
  EXPECT_FALSE(std::regex_search(md, m, std::regex(R"((^|[^\w.])[-+]?0\.0+([^\d]|$))"))) << m.str();
}

TEST(ReportStudy, JsonlPairingFollowsLayerbenchAb) {
  const auto s = lr::load_study(output("study.jsonl"));
  ASSERT_EQ(s.base.size(), 24u);
  ASSERT_EQ(s.candidate.size(), 24u);
  // Pairs by position: pair i's base and candidate are the records with "pair": i.
  std::ifstream in(output("study.jsonl"));
  std::string line;
  std::map<long long, double> base;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j.value("type", "") == "run" && j.value("arm", "") == "base" && j["metric"].is_number())
      base[j["pair"].get<long long>()] = j["metric"].get<double>();
  }
  for (std::size_t i = 0; i < s.base.size(); ++i) EXPECT_DOUBLE_EQ(s.base[i], base.at(s.pair_ids[i]));
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

TEST(ReportCsv, NumericDataFilesNamedAfterTheirInputs) {
  const auto csvs = lr::render_csvs(full_report());
  std::set<std::string> names;
  for (const auto& c : csvs) {
    names.insert(c.name);
    EXPECT_TRUE(std::regex_match(c.name, std::regex(R"([a-z0-9-]+\.csv)"))) << c.name;
  }
  EXPECT_EQ(names.size(), csvs.size());
  for (const char* n : {"moe-results.csv", "coll-results.csv", "attn-results.csv", "moe-pairs.csv", "study-pairs.csv"})
    EXPECT_EQ(names.count(n), 1u) << n;
  const auto& coll = *std::find_if(csvs.begin(), csvs.end(), [](const auto& c) { return c.name == "coll-results.csv"; });
  const std::string header = coll.text.substr(0, coll.text.find('\n'));
  EXPECT_EQ(header.rfind("name,group,role,parent,instances,params,n,median_ms,", 0), 0u) << header;
  EXPECT_NE(header.find(",algbw_bytes_per_s,busbw_bytes_per_s"), std::string::npos) << header;
  EXPECT_EQ(count(coll.text, "\n"), results_in(output("coll.json")) + 1);
  // Numeric columns hold plain numbers (no units, no brackets).
  const std::string row = coll.text.substr(coll.text.find('\n') + 1, coll.text.find('\n', coll.text.find('\n') + 1));
  EXPECT_TRUE(std::regex_search(row, std::regex(R"(,\d+,[\d.e+-]+,[\d.e+-]+,)"))) << row;
  const auto& pairs = *std::find_if(csvs.begin(), csvs.end(), [](const auto& c) { return c.name == "study-pairs.csv"; });
  EXPECT_EQ(count(pairs.text, "\n"), 25u);
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
  EXPECT_GE(plots, 8u);  // composition, busbw, 3 x (per-pair series, delta distribution)
  EXPECT_NE(html.find(">message size (bytes)</text>"), std::string::npos);
  EXPECT_NE(html.find(">busbw (GB/s)</text>"), std::string::npos);
  EXPECT_TRUE(std::regex_search(html, std::regex(R"(>median time \((ms|µs|s)\)</text>)")));
  EXPECT_NE(html.find(">Composition of sp</text>"), std::string::npos);
  EXPECT_NE(html.find(">Per-pair series of both arms</text>"), std::string::npos);
  EXPECT_NE(html.find(">95% CI of mean (t)</text>"), std::string::npos);
}

TEST(ReportFiles, WritesMarkdownHtmlAndCsvs) {
  const auto dir = std::filesystem::temp_directory_path() / "lb_report_test_out";
  std::filesystem::remove_all(dir);
  const auto written = lr::write_report(full_report(), dir.string());
  EXPECT_EQ(written.size(), 2u + lr::render_csvs(full_report()).size());
  EXPECT_TRUE(std::filesystem::exists(dir / "report.md"));
  EXPECT_TRUE(std::filesystem::exists(dir / "report.html"));
  std::filesystem::remove_all(dir);
}
