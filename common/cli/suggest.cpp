#include "common/cli/suggest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace layerbench::cli {
namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// hyperfine's flags and what layerbench-ab run calls them (where it has them).
const std::map<std::string, std::string>& hyperfine_flags() {
  static const std::map<std::string, std::string> m = {
      {"-r", "--pairs"},          {"--runs", "--pairs"},       {"-m", "--pairs"},
      {"--min-runs", "--pairs"},  {"-M", "--max-pairs"},       {"--max-runs", "--max-pairs"},
      {"-w", "--warmup"},         {"-p", "--prepare"},         {"-n", "--name"},
      {"--command-name", "--name"}, {"--export-json", "--json"}, {"--export-csv", "--csv"},
      {"--export-markdown", "--markdown"}, {"-i", "--ignore-failure"}, {"--ignore-failure", "--ignore-failure"},
      {"-S", "--shell"},          {"-N", "--shell none"},      {"-u", "--metric"}};
  return m;
}

void collect(const CLI::App& app, std::vector<std::string>& out) {
  for (const auto* o : app.get_options()) {
    for (const auto& n : o->get_lnames()) out.push_back("--" + n);
    for (const auto& n : o->get_snames()) out.push_back("-" + n);
  }
  for (const auto* sub : app.get_subcommands()) collect(*sub, out);  // the parsed ones
}

}  // namespace

std::vector<std::string> flag_names(const CLI::App& app) {
  std::vector<std::string> out;
  collect(app, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string did_you_mean(const std::string& unknown, const std::vector<std::string>& flags) {
  if (unknown.empty() || unknown[0] != '-') return {};
  const auto name = unknown.substr(0, unknown.find('='));
  if (const auto it = hyperfine_flags().find(name); it != hyperfine_flags().end()) {
    const auto flag = it->second.substr(0, it->second.find(' '));
    if (std::find(flags.begin(), flags.end(), flag) != flags.end())
      return fmt::format(" (did you mean {}? {} is hyperfine's spelling)", it->second, name);
  }
  std::string best;
  std::size_t best_d = SIZE_MAX;
  for (const auto& f : flags) {
    const auto d = edit_distance(name, f);
    if (d < best_d) best_d = d, best = f;
  }
  // Close: a typo (at most 2 edits, fewer than half the name), or a prefix of one flag.
  if (!best.empty() && best_d <= 2 && 2 * best_d < name.size()) return fmt::format(" (did you mean {}?)", best);
  std::vector<std::string> prefixed;
  for (const auto& f : flags)
    if (name.size() > 2 && f.rfind(name, 0) == 0) prefixed.push_back(f);
  if (prefixed.size() == 1) return fmt::format(" (did you mean {}?)", prefixed[0]);
  return {};
}

std::string parse_error_text(const CLI::App& app, const CLI::ParseError& error) {
  std::string text = error.what();
  const auto flags = flag_names(app);
  std::vector<std::string> unknown;
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) unknown = app.remaining(true);
  std::string hints;
  for (const auto& u : unknown) {
    const auto h = did_you_mean(u, flags);
    if (!h.empty()) hints += fmt::format("\n  {}{}", u, h);
  }
  return hints.empty() ? text : text + hints;
}

}  // namespace layerbench::cli
