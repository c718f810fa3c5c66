#include "study/history/confirm.hpp"

#include "common/usage.hpp"
#include "study/history/ab_adapter.hpp"
#include "study/history/findings.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

namespace layerbench::history {
namespace {

struct Verdict {
  stats::SequentialResult seq;
  Confirmation record;
};

Verdict ab_of(Store& store, const ConfirmOptions& o, const std::string& before, const std::string& after,
              double equivalence) {
  PairStudy s;
  s.base_command = expand_template(o.run, before);
  s.candidate_command = expand_template(o.run, after);
  s.metric = o.metric;
  s.timeout = o.timeout;
  s.warmup = o.warmup;
  s.design.alpha = o.alpha;
  s.design.tune_pairs = 10;
  s.design.max_pairs = o.max_pairs;
  s.design.equivalence = equivalence;
  s.design.equivalence_relative = true;
  const std::filesystem::path dir =
      o.journal_dir.empty() ? std::filesystem::path(store.path()).parent_path() : std::filesystem::path(o.journal_dir);
  s.journal = (dir / fmt::format("confirm-{}-{}.jsonl", before, after)).string();
  Verdict v;
  v.seq = run_pair_study(s);
  auto& c = v.record;
  c.before_sha = before;
  c.after_sha = after;
  c.benchmark = o.benchmark;
  c.metric = o.metric;
  c.verdict = v.seq.stop == stats::SequentialStop::effect        ? "confirmed"
              : v.seq.stop == stats::SequentialStop::equivalence ? "refuted"
                                                                 : "undecided";
  c.pairs = static_cast<std::int64_t>(v.seq.pairs);
  // Deltas are candidate - base (the one sign): the relative change of the later commit is delta / base.
  const double base = v.seq.base_mean;
  c.relative = v.seq.mean / base;
  c.low = v.seq.interval.low / base;
  c.high = v.seq.interval.high / base;
  c.command = o.run;
  c.journal = s.journal;
  store.add_confirmation(c);
  fmt::print("{}..{}: {} after {} pairs, {:+.2f}% [{:+.2f}%, {:+.2f}%] ({:.3g}% always-valid interval)\n",
             before.substr(0, 12), after.substr(0, 12), c.verdict, c.pairs, 100 * c.relative, 100 * c.low,
             100 * c.high, 100 * (1 - o.alpha));
  return v;
}

}  // namespace

std::string expand_template(const std::string& templ, const std::string& sha) {
  if (templ.find("{commit}") == std::string::npos)
    throw UsageError(fmt::format("--run '{}': the command must contain {{commit}}", templ));
  std::string out = templ;
  for (auto at = out.find("{commit}"); at != std::string::npos; at = out.find("{commit}", at + sha.size()))
    out.replace(at, 8, sha);
  return out;
}

int confirm(Store& store, const ConfirmOptions& o, const stats::ChangePointOptions& detector) {
  expand_template(o.run, "x");  // the template is checked before anything runs
  const auto commits = store.commits();
  std::map<std::string, std::size_t> pos;
  for (std::size_t i = 0; i < commits.size(); ++i) pos[commits[i].sha] = i;
  std::vector<std::pair<std::string, std::string>> brackets;
  if (!o.before.empty() || !o.after.empty()) {
    if (o.before.empty() || o.after.empty()) throw UsageError("--before and --after go together");
    const auto b = store.find_commit(o.before), a = store.find_commit(o.after);
    if (!b) throw UsageError(fmt::format("--before {}: not in {}", o.before, store.path()));
    if (!a) throw UsageError(fmt::format("--after {}: not in {}", o.after, store.path()));
    if (pos.at(b->sha) >= pos.at(a->sha)) throw UsageError("--before must come before --after in the history");
    brackets.emplace_back(b->sha, a->sha);
  } else {
    std::set<std::pair<std::string, std::string>> seen;
    const auto analysis = analyze(store, detector);
    for (const auto& f : analysis.findings) {
      if (f.status != "suspected") continue;
      if (!o.benchmark.empty() && analysis.series[f.series].series.key.benchmark != o.benchmark) continue;
      if (seen.insert({f.before_sha, f.range_shas.back()}).second) brackets.emplace_back(f.before_sha, f.range_shas.back());
    }
    if (brackets.empty()) fmt::print("nothing to confirm: no suspected change\n");
  }
  int rc = 0;
  for (const auto& [before, after] : brackets) {
    const auto v = ab_of(store, o, before, after, o.equivalence);
    if (v.record.verdict == "undecided" && rc == 0) rc = 3;
    if (v.record.verdict != "confirmed") continue;
    if (v.record.relative > 0) rc = 1;
    if (!o.bisect || pos.at(after) - pos.at(before) <= 1) continue;
    // Bisection: each study decides which side of the step the middle commit lies on, so its
    // no-change margin is half the confirmed step.
    const double half = std::max(std::abs(v.record.relative) / 2, 1e-3);
    std::size_t good = pos.at(before), bad = pos.at(after), steps = 0;
    std::int64_t pairs = v.record.pairs;
    while (bad - good > 1) {
      const std::size_t mid = good + (bad - good) / 2;
      const auto m = ab_of(store, o, commits[good].sha, commits[mid].sha, half);
      pairs += m.record.pairs;
      ++steps;
      if (m.record.verdict == "undecided") break;  // the range left is reported, not a culprit
      (m.record.verdict == "confirmed" ? bad : good) = mid;
    }
    if (bad - good > 1) {
      fmt::print("bisection stopped undecided: the change lies in {}..{}\n", commits[good + 1].sha, commits[bad].sha);
      continue;
    }
    fmt::print("culprit: {} (the first commit after {}; {} bisection studies, {} pairs in all)\n", commits[bad].sha,
               commits[good].sha, steps, pairs);
    Confirmation culprit = v.record;
    culprit.before_sha = commits[good].sha;
    culprit.after_sha = commits[bad].sha;
    culprit.pairs = pairs;
    culprit.journal = "bisection of " + v.record.journal;
    store.add_confirmation(culprit);
  }
  return rc;
}

}  // namespace layerbench::history
