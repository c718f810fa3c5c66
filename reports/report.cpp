#include "reports/report.hpp"

#include "common/output_file.hpp"
#include "reports/trace.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <set>
#include <stdexcept>

namespace layerbench::reports {
namespace {

constexpr const char* kStyle = R"(
body { font-family: sans-serif; margin: 24px auto; max-width: 1100px; color: #111; background: #fff; }
h1 { font-size: 24px; } h2 { font-size: 19px; border-bottom: 1px solid #ccc; padding-bottom: 4px; margin-top: 36px; }
table { border-collapse: collapse; margin: 12px 0 20px; font-size: 13px; }
caption { text-align: left; font-weight: bold; padding: 4px 0; }
th, td { border: 1px solid #bbb; padding: 3px 8px; }
th { background: #eef2f7; } td.r { text-align: right; font-variant-numeric: tabular-nums; } td.l { text-align: left; }
figure { margin: 12px 0 24px; } svg.plot { border: 1px solid #ddd; max-width: 100%; height: auto; }
p.intro { max-width: 900px; line-height: 1.4; }
div.beside { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
body:has(div.beside) { max-width: 1900px; }
)";

void write_file(const std::filesystem::path& p, const std::string& text) { write_file_atomic(p.string(), text); }

// Markdown intro text uses `code` spans; the HTML page shows them as <code>.
std::string intro_html(const std::string& md) {
  std::string out;
  bool code = false;
  for (char c : md) {
    if (c == '`') {
      out += code ? "</code>" : "<code>";
      code = !code;
    } else {
      out += html_escape(std::string(1, c));
    }
  }
  if (code) out += "</code>";
  return out;
}

}  // namespace

Report build_report(const std::vector<std::string>& paths, const stats::PairedOptions& options) {
  if (paths.empty()) throw std::runtime_error("no input files");
  Report r;
  for (const auto& path : paths) {
    switch (sniff_input(path)) {
      case InputKind::layerbench_json: {
        const ResultFile file = load_result_file(path);
        auto secs = result_sections(file, options.confidence);
        if (secs.empty()) throw std::runtime_error(path + ": no results to report");
        for (auto& s : secs) r.sections.push_back(std::move(s));
        if (file.study) r.sections.push_back(paired_study(*file.study, options));
        break;
      }
      case InputKind::study_jsonl:
      case InputKind::study_csv:
        for (const auto& study : load_studies(path)) r.sections.push_back(paired_study(study, options));
        break;
      case InputKind::gbench_json: r.sections.push_back(gbench_section(read_json_file(path), path)); break;
      case InputKind::trace_json: r.sections.push_back(trace_section(parse_trace(read_json_file(path), path), path)); break;
      case InputKind::hyperfine_json: r.sections.push_back(hyperfine_section(read_json_file(path), path)); break;
      case InputKind::runs_csv:
      case InputKind::analysis_json: r.sections.push_back(paired_study(load_study(path), options)); break;
      case InputKind::results_csv: r.sections.push_back(results_csv_section(read_text_file(path), path)); break;
      case InputKind::other_json: {
        // A JSON document of another tool (e.g. torch's side-by-side figures beside a run): said,
        // not guessed at.
        const std::string why = path + ": skipped: a JSON document of another tool (for example torch's side-by-side "
                                       "figures), neither layerbench JSON (schema layerbench/N), Google Benchmark JSON "
                                       "nor a paired study";
        r.skipped.push_back(why);
        break;
      }
      case InputKind::unknown: throw std::runtime_error(path + ": not a layerbench result file or paired study");
    }
  }
  if (r.sections.empty()) {
    // One input: its own reason on one line; several: each below the summary.
    std::string why = r.skipped.size() == 1 ? "nothing to report: " + r.skipped.front() : "no input could be reported";
    if (r.skipped.size() > 1)
      for (const auto& s : r.skipped) why += "\n  " + s;
    throw std::runtime_error(why);
  }
  if (!r.skipped.empty()) {
    Section s;
    s.title = "Skipped inputs";
    s.notes = r.skipped;
    r.sections.push_back(std::move(s));
  }
  return r;
}

std::string render_markdown(const Report& report) {
  std::string out = "# " + report.title + "\n";
  for (const auto& s : report.sections) {
    out += "\n" + to_markdown(s, 2);
  }
  return out;
}

std::string render_html(const Report& report) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
                    html_escape(report.title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  out += "<h1>" + html_escape(report.title) + "</h1>\n";
  for (const auto& s : report.sections) {
    out += "<section>\n<h2>" + html_escape(s.title) + "</h2>\n";
    if (!s.intro.empty()) out += "<p class=\"intro\">" + intro_html(s.intro) + "</p>\n";
    std::string tables, figures, notes;
    for (const auto& t : s.tables) tables += to_html(t);
    for (const auto& f : s.figures) figures += "<figure>\n" + f + "</figure>\n";
    if (!s.notes.empty()) {
      notes += "<ul class=\"notes\">\n";
      for (const auto& n : s.notes) notes += "<li>" + intro_html(n) + "</li>\n";
      notes += "</ul>\n";
    }
    if (s.figures_beside_tables)
      out += "<div class=\"beside\">\n<div class=\"tables\">\n" + tables + "</div>\n<div class=\"figures\">\n" +
             figures + "</div>\n</div>\n" + notes;
    else
      out += tables + notes + figures;
    out += "</section>\n";
  }
  return out + "</body>\n</html>\n";
}

std::vector<CsvFile> render_csvs(const Report& report) {
  std::vector<CsvFile> out;
  std::set<std::string> used;
  for (const auto& s : report.sections) {
    // Named after the input and the section, so several inputs give distinguishable files.
    auto add = [&](const std::string& title, std::string text) {
      const std::string stem = slug((s.source.empty() ? std::string() : s.source + " ") + title);
      std::string name = stem + ".csv";
      for (int k = 2; used.count(name); ++k) name = fmt::format("{}-{}.csv", stem, k);
      used.insert(name);
      out.push_back({name, std::move(text)});
    };
    if (!s.csvs.empty()) {
      for (const auto& c : s.csvs) add(c.title, c.text);
    } else {
      for (const auto& t : s.tables) add(s.title + " " + t.title, to_csv(t));
    }
  }
  return out;
}

std::vector<std::string> write_report(const Report& report, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create directory (" + ec.message() + ")");
  std::vector<std::string> written;
  const auto put = [&](const std::string& name, const std::string& text) {
    const auto p = fs::path(dir) / name;
    write_file(p, text);
    written.push_back(p.string());
  };
  put("report.md", render_markdown(report));
  put("report.html", render_html(report));
  for (const auto& c : render_csvs(report)) put(c.name, c.text);
  return written;
}

}  // namespace layerbench::reports
