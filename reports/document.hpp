#pragma once
// The document model of every report a layerbench tool prints: sections of prose, tables, notes
// and figures, and one printer per format (console text, markdown; HTML and CSV in
// reports/report.hpp; JSON is each record's own serializer). Builders compute; printers only print.
#include "reports/table.hpp"

#include <string>
#include <vector>

namespace layerbench::reports {

// A data file of a section: numbers in numeric columns, units in the header.
struct CsvData {
  std::string title;  // becomes part of the file name
  std::string text;
};

struct Section {
  std::string title;
  std::string source;                // the input file the section comes from (file names of its CSVs)
  std::string intro;                 // markdown-safe prose, one paragraph
  std::vector<Table> tables;
  std::vector<std::string> figures;  // complete <svg> documents (HTML only)
  std::vector<std::string> notes;    // bullet points (reading guidance, warnings)
  std::vector<CsvData> csvs;         // when set, the section's CSVs (else each table's cells)
  bool figures_beside_tables = false;  // HTML: the figures to the right of the tables (a timeline)
};

// Console text: the title on its first line, then the intro, each table (reports::to_text) and the
// notes as "  - " bullets, separated by one blank line; sections separated by one blank line.
std::string to_text(const Section& section);
std::string to_text(const std::vector<Section>& sections);

// Markdown: the title as a level-`heading` heading ("## " for 2; 0: a bold line), the intro, each
// table (reports::to_markdown), the notes as "- " bullets. A section ends with a blank line; the
// list of sections ends with one line break.
std::string to_markdown(const Section& section, int heading);
std::string to_markdown(const std::vector<Section>& sections, int heading);

}  // namespace layerbench::reports
