#include "study/input.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <fstream>
#include <sys/stat.h>

#include "study/errors.hpp"
#include "common/text.hpp"
#include "reports/inputs.hpp"

namespace layerbench::ab {
namespace {

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  std::string out(s.substr(b, e - b + 1));
  if (out.size() >= 2 && out.front() == '"' && out.back() == '"') out = out.substr(1, out.size() - 2);
  return out;
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    const auto comma = line.find(',', start);
    fields.push_back(trim(std::string_view(line).substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return fields;
}

double parse_cell(const std::string& cell, const std::string& where, const std::string& column) {
  double v = 0;
  const char* first = cell.data();
  const char* last = cell.data() + cell.size();
  if (!cell.empty() && *first == '+') ++first;
  const auto [ptr, ec] = std::from_chars(first, last, v);
  if (cell.empty() || ec != std::errc() || ptr != last) {
    throw InputError(fmt::format("{}: column '{}': '{}' is not a number", where, column, cell));
  }
  if (!std::isfinite(v)) throw InputError(fmt::format("{}: column '{}': '{}' is not finite", where, column, cell));
  return v;
}

void require_readable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError(fmt::format("{}: no such file", path));
  if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: is a directory", path));
}

}  // namespace

PairedInput load_csv(const std::string& path) {
  require_readable(path);
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot open file", path));
  std::string line;
  std::size_t line_no = 0;
  std::vector<std::string> header;
  while (header.empty() && std::getline(in, line)) {
    ++line_no;
    if (line_no == 1) text::strip_bom_in_place(line);  // spreadsheet exports start with one
    if (!trim(line).empty()) header = split_csv(line);
  }
  if (header.empty()) throw InputError(fmt::format("{}:1: empty file (expected a header naming base and candidate)", path));
  const std::size_t header_line = line_no;
  auto column = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) {
      throw InputError(fmt::format("{}:{}: missing column '{}' (the header must name base and candidate)", path,
                                   header_line, name));
    }
    return static_cast<std::size_t>(it - header.begin());
  };
  const std::size_t base_col = column("base");
  const std::size_t cand_col = column("candidate");
  PairedInput out;
  while (std::getline(in, line)) {
    ++line_no;
    if (trim(line).empty()) continue;
    const auto where = fmt::format("{}:{}", path, line_no);
    const auto fields = split_csv(line);
    if (fields.size() != header.size()) {
      throw InputError(fmt::format("{}: ragged row: {} fields, the header has {}", where, fields.size(), header.size()));
    }
    out.base.push_back(parse_cell(fields[base_col], where, "base"));
    out.candidate.push_back(parse_cell(fields[cand_col], where, "candidate"));
  }
  if (out.base.size() < 2) {
    throw InputError(fmt::format("{}:{}: {} pair{}; need at least 2", path, line_no, out.base.size(),
                                 out.base.size() == 1 ? "" : "s"));
  }
  return out;
}

PairedInput load_study(const std::string& path) {
  require_readable(path);
  PairedInput out;
  out.study = read_study(path);
  for (const auto& p : completed_pairs(*out.study)) {
    out.pair_ids.push_back(static_cast<long long>(p.pair));
    out.base.push_back(p.base);
    out.candidate.push_back(p.candidate);
  }
  if (out.base.size() < 2) {
    throw InputError(fmt::format("{}: {} completed pair{}; need at least 2", path, out.base.size(),
                                 out.base.size() == 1 ? "" : "s"));
  }
  return out;
}

PairedInput load_pairs(const std::string& path) {
  require_readable(path);
  using K = reports::InputKind;
  K kind = K::unknown;
  bool empty = false;
  try {
    kind = reports::sniff_input(path);
  } catch (const std::runtime_error& e) {
    // An empty file gets the CSV reader's message (it names what the header must hold); anything
    // else that is not text or JSON is named as such.
    empty = std::string_view(e.what()).find("file is empty") != std::string_view::npos;
    if (!empty) throw InputError(e.what());
  }
  const bool ab_study = kind == K::study_jsonl && reports::is_ab_study(path);
  PairedInput input;
  if (ab_study) {
    input = load_study(path);
  } else if (kind == K::study_csv || empty) {
    input = load_csv(path);  // its messages name the missing column or the bad cell
  } else if (kind == K::study_jsonl || kind == K::runs_csv || kind == K::analysis_json) {
    try {
      auto s = reports::load_study(path);
      input.base = std::move(s.base);
      input.candidate = std::move(s.candidate);
      input.pair_ids = std::move(s.pair_ids);
      input.metric = std::move(s.metric);
      input.unit = std::move(s.unit);
    } catch (const std::runtime_error& e) {
      throw InputError(e.what());
    }
    if (input.base.size() < 2)
      throw InputError(fmt::format("{}: {} pair{}; need at least 2", path, input.base.size(),
                                   input.base.size() == 1 ? "" : "s"));
  } else {
    throw InputError(reports::not_paired_reason(path, kind));
  }
  if (input.pair_ids.empty())
    for (std::size_t i = 0; i < input.base.size(); ++i) input.pair_ids.push_back(static_cast<long long>(i));
  // Paired statistics hold for any values (e.g. differences), but "% of the base mean" does not.
  const auto negative = [](const std::vector<double>& v) {
    return std::any_of(v.begin(), v.end(), [](double x) { return x < 0; });
  };
  if (negative(input.base) || negative(input.candidate)) {
    std::fprintf(stderr, "layerbench-ab: warning: %s has negative values: the percentages (of the base mean) are not "
                         "relative changes of a measurement\n", path.c_str());
  }
  return input;
}

}  // namespace layerbench::ab
