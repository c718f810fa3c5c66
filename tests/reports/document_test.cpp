// The document model's printers: a Table as console text (aligned by display width), a Section and a
// list of Sections as text and as markdown.
#include "reports/document.hpp"
#include "reports/report.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lr = layerbench::reports;

namespace {

lr::Table sample() {
  lr::Table t;
  t.headers = {"arm", "change", "CI"};
  t.align = {lr::Align::left};
  t.add_row({"base", "—", "—"});
  t.add_row({"candidate", "+1.5 ± 0.2%", "[×1.01, ×1.02]"});
  return t;
}

}  // namespace

TEST(TableText, ColumnsAlignByDisplayWidth) {
  EXPECT_EQ(lr::to_text(sample()),
            "  arm             change              CI\n"
            "  base                 —               —\n"
            "  candidate  +1.5 ± 0.2%  [×1.01, ×1.02]\n");
}

TEST(TableText, TitleLeftColumnsAndNoTrailingSpaces) {
  lr::Table t;
  t.title = "Verdicts";
  t.headers = {"name", "verdict"};
  t.align = {lr::Align::left, lr::Align::left};
  t.add_row({"a", "regressed"});
  t.add_row({"longer", ""});  // an empty last cell: the line ends at the previous cell
  t.add_row({"x"});          // a short row: missing cells are empty
  EXPECT_EQ(lr::to_text(t), "Verdicts\n  name    verdict\n  a       regressed\n  longer\n  x\n");
}

TEST(SectionText, TitleIntroTablesNotes) {
  lr::Section s;
  s.title = "Gate";
  s.intro = "Two arms.";
  s.tables = {sample()};
  s.notes = {"first", "second"};
  EXPECT_EQ(lr::to_text(s), "Gate\nTwo arms.\n\n" + lr::to_text(sample()) + "\n  - first\n  - second\n");
  lr::Section only_notes;
  only_notes.title = "Reading guidance";
  only_notes.notes = {"n"};
  EXPECT_EQ(lr::to_text(only_notes), "Reading guidance\n  - n\n");
  EXPECT_EQ(lr::to_text(std::vector<lr::Section>{s, only_notes}), lr::to_text(s) + "\n" + lr::to_text(only_notes));
  EXPECT_EQ(lr::to_text(std::vector<lr::Section>{lr::Section{}, only_notes}), lr::to_text(only_notes));  // empty: skipped
}

TEST(SectionMarkdown, HeadingLevelsAndOneTrailingLineBreak) {
  lr::Section s;
  s.title = "Gate";
  s.intro = "Two arms.";
  s.tables = {sample()};
  s.notes = {"n"};
  const std::string body = "Two arms.\n\n" + lr::to_markdown(sample()) + "\n- n\n\n";
  EXPECT_EQ(lr::to_markdown(s, 3), "### Gate\n\n" + body);
  EXPECT_EQ(lr::to_markdown(s, 0), "**Gate**\n\n" + body);
  lr::Section untitled;
  untitled.intro = "Just prose.";
  EXPECT_EQ(lr::to_markdown(std::vector<lr::Section>{untitled, s}, 0), "Just prose.\n\n**Gate**\n\n" + body.substr(0, body.size() - 1));
}

// The report page's markdown is the same printer at level 2 under the report's title.
TEST(SectionMarkdown, ReportUsesTheSamePrinter) {
  lr::Report r;
  lr::Section a;
  a.title = "A";
  a.notes = {"x"};
  lr::Section b;
  b.title = "B";
  b.tables = {sample()};
  r.sections = {a, b};
  EXPECT_EQ(lr::render_markdown(r), "# layerbench report\n\n" + lr::to_markdown(a, 2) + "\n" + lr::to_markdown(b, 2));
}
