#include "reports/document.hpp"

namespace layerbench::reports {

std::string to_text(const Section& s) {
  std::vector<std::string> parts;
  if (!s.intro.empty()) parts.push_back(s.intro + "\n");
  for (const auto& t : s.tables) parts.push_back(to_text(t));
  if (!s.notes.empty()) {
    std::string notes;
    for (const auto& n : s.notes) notes += "  - " + n + "\n";
    parts.push_back(std::move(notes));
  }
  std::string body;
  for (const auto& p : parts) body += (body.empty() ? "" : "\n") + p;
  return (s.title.empty() ? "" : s.title + "\n") + body;
}

std::string to_text(const std::vector<Section>& sections) {
  std::string out;
  for (const auto& s : sections) {
    const auto text = to_text(s);
    if (!text.empty()) out += (out.empty() ? "" : "\n") + text;
  }
  return out;
}

std::string to_markdown(const Section& s, int heading) {
  std::string out;
  if (!s.title.empty())
    out += (heading > 0 ? std::string(static_cast<std::size_t>(heading), '#') + " " + s.title : "**" + s.title + "**") + "\n\n";
  if (!s.intro.empty()) out += s.intro + "\n\n";
  for (const auto& t : s.tables) out += to_markdown(t) + "\n";
  for (const auto& n : s.notes) out += "- " + n + "\n";
  if (!s.notes.empty()) out += "\n";
  return out;
}

std::string to_markdown(const std::vector<Section>& sections, int heading) {
  std::string out;
  for (const auto& s : sections) out += to_markdown(s, heading);
  if (out.size() >= 2 && out.compare(out.size() - 2, 2, "\n\n") == 0) out.pop_back();
  return out;
}

}  // namespace layerbench::reports
