#include "study/input.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <fstream>
#include <memory>
#include <sys/stat.h>

#include "study/errors.hpp"
#include "common/text.hpp"
#include "reports/inputs.hpp"

namespace layerbench::ab {
namespace {

void require_readable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw InputError(fmt::format("{}: no such file", path));
  if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: is a directory", path));
}

}  // namespace

namespace {

// A CSV study from its text (the one CSV-study reader, reports::study_csv_pairs).
PairedStudy csv_of_text(const std::string& text, const std::string& path) {
  PairedStudy out;
  try {
    out = reports::study_csv_pairs(text, path);
  } catch (const std::runtime_error& e) {
    throw InputError(e.what());
  }
  if (out.base.size() < 2) {  // named at the file's last line
    const auto end = text.find_last_not_of(" \t\r\n");
    const auto lines = end == std::string::npos ? 1 : 1 + std::count(text.begin(), text.begin() + end, '\n');
    throw InputError(fmt::format("{}:{}: {} pair{}; need at least 2", path, lines, out.base.size(),
                                 out.base.size() == 1 ? "" : "s"));
  }
  return out;
}

// A layerbench-ab journal from its text: its pairs, with the journal kept for the analysis.
PairedStudy journal_of_text(std::string_view text, const std::string& path) {
  auto journal = std::make_shared<const Study>(parse_study(text, path));
  PairedStudy out = paired_values(*journal, path);
  out.journal = std::move(journal);
  if (out.base.size() < 2) {
    throw InputError(fmt::format("{}: {} completed pair{}; need at least 2", path, out.base.size(),
                                 out.base.size() == 1 ? "" : "s"));
  }
  return out;
}

}  // namespace

PairedStudy load_csv(const std::string& path) {
  require_readable(path);
  const auto text = text::read_file(path);
  if (!text) throw InputError(fmt::format("{}: cannot open file", path));
  return csv_of_text(*text, path);
}

PairedStudy load_study(const std::string& path) {
  require_readable(path);
  const auto text = text::read_file(path);
  if (!text) throw InputError(fmt::format("{}: cannot open file", path));
  return journal_of_text(*text, path);
}

PairedStudy load_pairs(const std::string& path) {
  require_readable(path);
  using K = reports::InputKind;
  K kind = K::unknown;
  bool empty = false;
  std::string text;  // read once: a study of 10^6 pairs is ~300 MB
  try {
    text = reports::read_text_file(path);
    kind = reports::sniff_text(text, path);
  } catch (const std::runtime_error& e) {
    // An empty file gets the CSV reader's message (it names what the header must hold); anything
    // else that is not text or JSON is named as such.
    empty = std::string_view(e.what()).find("file is empty") != std::string_view::npos;
    if (!empty) throw InputError(e.what());
  }
  const bool ab_study = kind == K::study_jsonl && reports::is_ab_study(text);
  PairedStudy input;
  if (ab_study) {
    input = journal_of_text(text, path);
  } else if (kind == K::study_csv || empty) {
    input = csv_of_text(text, path);  // its messages name the missing column or the bad cell
  } else if (kind == K::study_jsonl || kind == K::runs_csv || kind == K::analysis_json) {
    try {
      input = reports::load_study(path);
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
