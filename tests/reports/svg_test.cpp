#include "reports/svg.hpp"
#include "reports/table.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace lr = layerbench::reports;
namespace svg = layerbench::reports::svg;

TEST(Svg, NiceTicks) {
  EXPECT_EQ(svg::nice_ticks(0, 9.7, 6), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(svg::nice_ticks(232.1, 239.9, 6), (std::vector<double>{232, 234, 236, 238, 240}));
  const auto t = svg::nice_ticks(-0.33, 0.08, 6);
  EXPECT_DOUBLE_EQ(t.front(), -0.4);
  EXPECT_NEAR(t.back(), 0.1, 1e-12);
  const auto flat = svg::nice_ticks(5, 5, 6);  // a flat series still gets an axis around its value
  EXPECT_GE(flat.size(), 2u);
  EXPECT_LT(flat.front(), 5.0);
  EXPECT_GT(flat.back(), 5.0);
}

TEST(Svg, LogTicksAndByteLabels) {
  const auto t = svg::log_ticks(1024, 64.0 * 1024 * 1024, svg::Scale::log2, 9);
  ASSERT_EQ(t.size(), 9u);  // 2^10 .. 2^26 every other power
  EXPECT_DOUBLE_EQ(t.front(), 1024);
  EXPECT_DOUBLE_EQ(t.back(), 64.0 * 1024 * 1024);
  EXPECT_EQ(svg::tick_label(1024, svg::TickFormat::bytes), "1K");
  EXPECT_EQ(svg::tick_label(64.0 * 1024 * 1024, svg::TickFormat::bytes), "64M");
  EXPECT_EQ(svg::tick_label(1536, svg::TickFormat::bytes), "1.5K");
  EXPECT_EQ(svg::tick_label(0.25, svg::TickFormat::number), "0.25");
  EXPECT_EQ(svg::log_ticks(0.5, 200, svg::Scale::log10, 9), (std::vector<double>{0.1, 1, 10, 100, 1000}));
}

TEST(Svg, XYPlotStructure) {
  svg::XYPlot p;
  p.title = "busbw <vs> size";
  p.x = {"message size", "bytes", svg::Scale::log2, svg::TickFormat::bytes};
  p.y = {"busbw", "GB/s"};
  p.series = {{"all_gather", {1024, 4096, 16384}, {1, 5, 20}, svg::Mark::line_points, 0, ""}};
  p.ref_lines = {{450, "link ceiling", false}};
  p.x_spans = {{2000, 3000, "CI"}};
  const auto s = svg::render(p);
  EXPECT_EQ(s.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(s.find("<title>busbw &lt;vs&gt; size</title>"), std::string::npos);  // escaped
  EXPECT_NE(s.find(">message size (bytes)</text>"), std::string::npos);
  EXPECT_NE(s.find(">busbw (GB/s)</text>"), std::string::npos);
  EXPECT_NE(s.find(">1K</text>"), std::string::npos);
  EXPECT_NE(s.find(">16K</text>"), std::string::npos);
  EXPECT_NE(s.find(">all_gather</text>"), std::string::npos);
  EXPECT_NE(s.find(">link ceiling</text>"), std::string::npos);
  EXPECT_NE(s.find(">CI</text>"), std::string::npos);
  EXPECT_NE(s.find("<polyline"), std::string::npos);
  EXPECT_NE(s.find("stroke-dasharray"), std::string::npos);
  EXPECT_EQ(s.find("nan"), std::string::npos);
  EXPECT_EQ(s.substr(s.size() - 7), "</svg>\n");
}

TEST(Svg, BarChartStructure) {
  svg::BarChart c;
  c.title = "comm vs kernel";
  c.value = {"median time", "ms"};
  c.category_label = "topology";
  c.categories = {"usp4", "cp4"};
  c.segments = {"communication", "attention kernel"};
  c.values = {{1.0, 10.0}, {0.5, 11.0}};
  const auto s = svg::render(c);
  EXPECT_NE(s.find(">median time (ms)</text>"), std::string::npos);
  EXPECT_NE(s.find(">topology</text>"), std::string::npos);
  EXPECT_NE(s.find(">communication</text>"), std::string::npos);
  EXPECT_NE(s.find(">usp4</text>"), std::string::npos);
  std::size_t rects = 0;
  for (auto pos = s.find("<rect"); pos != std::string::npos; pos = s.find("<rect", pos + 1)) ++rects;
  EXPECT_EQ(rects, 1u + 2u + 4u);  // background, 2 legend swatches, 2 x 2 stacked segments
}

TEST(Table, MarkdownCsvHtml) {
  lr::Table t;
  t.title = "T";
  t.headers = {"name", "value"};
  t.align = {lr::Align::left};
  t.add_row({"a|b", "1,5"});
  t.add_row({"say \"hi\"", "<2>"});
  EXPECT_EQ(lr::to_markdown(t), "**T**\n\n| name | value |\n|---|---:|\n| a\\|b | 1,5 |\n| say \"hi\" | <2> |\n");
  EXPECT_EQ(lr::to_csv(t), "name,value\na|b,\"1,5\"\n\"say \"\"hi\"\"\",<2>\n");
  const auto h = lr::to_html(t);
  EXPECT_NE(h.find("<td class=\"r\">&lt;2&gt;</td>"), std::string::npos);
  EXPECT_NE(h.find("<caption>T</caption>"), std::string::npos);
  EXPECT_EQ(lr::slug("Paired delta (base − candidate), n=23"), "paired-delta-base-candidate-n-23");
  EXPECT_EQ(lr::fmt_percent(0.709), "70.9%");
  EXPECT_EQ(lr::fmt_signed(0.3471, 3, "%"), "+0.347%");
  EXPECT_EQ(lr::fmt_fixed(std::nan(""), 2), "—");
  EXPECT_EQ(lr::fmt_p(0.0001234), "0.0001234");
  EXPECT_EQ(lr::fmt_p(1.99e-5), "1.99e-05");
}
