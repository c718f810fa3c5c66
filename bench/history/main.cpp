// layerbench-history: a CI performance history in one SQLite file: add results per commit, find
// change points, confirm them with interleaved pairs, report them.
// Exit codes: 0 nothing confirmed; 1 a confirmed regression (or a runtime failure); 2 bad input
// or usage; 3 a suspected change awaiting confirmation.
#include "common/cli/app.hpp"
#include "common/cli/output_file.hpp"
#include "common/cli.hpp"
#include "common/output_file.hpp"
#include "common/text.hpp"
#include "common/usage.hpp"
#include "study/history/confirm.hpp"
#include "study/history/findings.hpp"
#include "study/history/ingest.hpp"
#include "study/history/report.hpp"
#include "study/history/store.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

namespace lh = layerbench::history;
namespace cli = layerbench::cli;
namespace num = layerbench::num;
using layerbench::UsageError;

namespace {

constexpr const char* kExamples = R"(
Examples:
  # CI, after the benchmarks of a commit ran:
  layerbench-history add --db perf.sqlite --commit $(git rev-parse HEAD) \
      --time $(git show -s --format=%cI HEAD) --branch main coll.json gb.json
  layerbench-history detect --db perf.sqlite --json changes.json    # exit 3: a suspicion
  # re-measure each suspected step with interleaved pairs of the commits either side:
  layerbench-history confirm --db perf.sqlite --run 'scripts/bench.sh {commit}' \
      --metric 'time_ms=regex:time_ms=([0-9.]+)' --bisect
  layerbench-history report --db perf.sqlite -o history-report --markdown comment.md
  # a change that was intended, a run that should not count:
  layerbench-history mark --db perf.sqlite --expected --commit 1a2b3c4 --note "new algorithm"
  layerbench-history mark --db perf.sqlite --exclude --commit 5d6e7f8 --benchmark all_reduce

Exit codes: 0 nothing confirmed, 1 a confirmed regression, 2 bad input, 3 a suspected change
awaiting confirmation (detect, report, confirm).
)";

struct DetectorFlags {
  layerbench::stats::ChangePointOptions o;
  double alpha = 0.05;  // 1 - the step interval's level (--confidence / --alpha)
};

void add_detector_flags(CLI::App& cmd, DetectorFlags& f, bool with_confidence = true) {
  if (with_confidence) cli::add_confidence_options(cmd, f.o.confidence, f.alpha);
  cli::add_real(cmd, "--threshold", f.o.threshold, "suspicion threshold on the shift's |z|", num::RealRange::closed(1, 100));
  cli::add_fraction(cmd, "--min-change", f.o.min_magnitude, "smallest relative step reported (1% or 0.01)",
                    num::RealRange{0, 1, false, true});
  cli::add_int(cmd, "--min-after", f.o.min_post, "commits after a change before it can be suspected", std::size_t{2},
               std::size_t{1000});
  cli::add_int(cmd, "--window", f.o.window, "commits each side a step is estimated from", std::size_t{5},
               std::size_t{100000});
}

std::string check_sha(const std::string& sha, const char* flag) {
  static const std::regex hex("[0-9a-fA-F]{4,64}");
  if (!std::regex_match(sha, hex))
    throw UsageError(fmt::format("{} '{}': expected a git commit sha (4 to 64 hex digits)", flag, sha));
  std::string lower = sha;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

int do_add(const std::string& db, const std::string& commit, const std::string& time, const std::string& branch,
           const std::string& machine, const std::vector<std::string>& files) {
  lh::Commit c;
  c.sha = check_sha(commit, "--commit");
  if (!time.empty()) c.time = lh::normalize_time(time);
  c.branch = branch;
  // Every file is read and checked before the database is opened: bad input changes nothing.
  std::vector<std::pair<lh::ResultSamples, std::string>> inputs;
  for (const auto& f : files) {
    auto samples = lh::read_results(f);
    const auto bytes = layerbench::text::read_file(f);
    inputs.emplace_back(std::move(samples), lh::digest_of(*bytes));
  }
  lh::Store store(db, lh::Store::Mode::create);
  const auto out = store.add(c, inputs, machine);
  fmt::print("{}: commit {}: {} file(s) added ({} samples), {} already recorded\n", db, c.sha, out.files_added,
             out.samples, out.files_known);
  return 0;
}

int do_detect(const std::string& db, const DetectorFlags& f, const std::string& json, const std::string& markdown) {
  lh::Store store(db, lh::Store::Mode::read);
  const auto a = lh::analyze(store, f.o);
  if (json != "-" && markdown != "-") fmt::print("{}", lh::findings_text(a));
  if (!json.empty()) cli::write_output(json, lh::findings_json(a).dump(2) + "\n");
  if (!markdown.empty()) cli::write_output(markdown, lh::summary_markdown(a));
  return lh::exit_code(a);
}

int do_report(const std::string& db, const DetectorFlags& f, const std::string& dir, const std::string& markdown,
              const std::string& json) {
  lh::Store store(db, lh::Store::Mode::read);
  const auto a = lh::analyze(store, f.o);
  if (!dir.empty()) {
    for (const auto& p : layerbench::reports::write_report(lh::history_report(a), dir)) fmt::print(stderr, "wrote {}\n", p);
  }
  if (!markdown.empty()) cli::write_output(markdown, lh::summary_markdown(a));
  if (!json.empty()) cli::write_output(json, lh::findings_json(a).dump(2) + "\n");
  if (markdown != "-" && json != "-") fmt::print("{}", lh::findings_text(a));
  return lh::exit_code(a);
}

struct MarkFlags {
  bool expected = false, exclude = false, list = false;
  std::int64_t remove = 0;
  std::string commit, benchmark, note;
};

int do_mark(const std::string& db, const MarkFlags& m) {
  const int actions = int(m.expected) + int(m.exclude) + int(m.list) + int(m.remove != 0);
  if (actions != 1) throw UsageError("mark: give one of --expected, --exclude, --list or --remove ID");
  lh::Store store(db, m.list ? lh::Store::Mode::read : lh::Store::Mode::write);
  if (m.list) {
    for (const auto& k : store.marks())
      fmt::print("{} {} {} {}{}\n", k.id, k.kind, k.sha, k.benchmark.empty() ? "(all)" : k.benchmark,
                 k.note.empty() ? "" : " - " + k.note);
    return 0;
  }
  if (m.remove != 0) {
    store.remove_mark(m.remove);
    return 0;
  }
  if (m.commit.empty()) throw UsageError("mark: --commit SHA is required");
  const auto c = store.find_commit(check_sha(m.commit, "--commit"));
  if (!c) throw UsageError(fmt::format("--commit {}: not in {}", m.commit, db));
  const auto id = store.add_mark(m.expected ? "expected" : "exclude", c->sha, m.benchmark, m.note);
  fmt::print("mark {}: {} at {}\n", id, m.expected ? "expected change" : "excluded runs", c->sha);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"layerbench-history: a CI performance history: change points found, confirmed by interleaved pairs"};
  cli::init_app(app, "layerbench-history");
  app.footer(kExamples);
  app.require_subcommand(1);
  std::string db;

  std::string commit, time, branch, machine;
  std::vector<std::string> files;
  auto* add = app.add_subcommand("add", "record the results of one commit (idempotent)");
  add->add_option("--db", db, "the history database (created if missing)")->required();
  add->add_option("--commit", commit, "git commit sha of the results")->required();
  add->add_option("--time", time, "commit time, ISO-8601 (default: now, for a new commit); orders the history");
  add->add_option("--branch", branch, "branch name");
  add->add_option("--machine", machine, "machine name (default: from the result file's context)");
  add->add_option("RESULT", files, "result files: layerbench JSON/CSV, layerbench-ab study/runs/analysis, Google "
                                   "Benchmark JSON, hyperfine JSON")->required();

  DetectorFlags detect_flags;
  std::string json, markdown, out_dir;
  auto* detect = app.add_subcommand("detect", "list suspected and confirmed changes (exit 3: one awaits confirmation)");
  detect->add_option("--db", db, "the history database")->required();
  cli::add_output_option(*detect, "--json", json, "the changes as JSON (schema layerbench-history-detect/1)");
  cli::add_output_option(*detect, "--markdown", markdown, "the summary as markdown");
  add_detector_flags(*detect, detect_flags);

  lh::ConfirmOptions co;
  auto* confirm = app.add_subcommand("confirm", "re-measure suspected changes with an interleaved sequential A/B");
  confirm->add_option("--db", db, "the history database")->required();
  confirm->add_option("--run", co.run, "command template run for each commit; {commit} becomes the sha")->required();
  confirm->add_option("--metric", co.metric, "what a run measures, as in `layerbench-ab run --metric`");
  confirm->add_option("--before", co.before, "confirm this bracket instead of the suspicions: the commit before");
  confirm->add_option("--after", co.after, "... and the commit after");
  confirm->add_option("--benchmark", co.benchmark, "the benchmark the command measures (default: every one)");
  confirm->add_flag("--bisect", co.bisect, "narrow a confirmed range of several commits to one (log2 studies)");
  cli::add_int(*confirm, "--max-pairs", co.max_pairs, "cap of pairs per A/B", std::size_t{4}, std::size_t{100000});
  double confirm_confidence = 1 - co.alpha;
  cli::add_confidence_options(*confirm, confirm_confidence, co.alpha);  // the always-valid interval's level
  cli::add_fraction(*confirm, "--equivalence", co.equivalence, "no-change margin (1% or 0.01)",
                    num::RealRange::open(0, 1));
  cli::add_real(*confirm, "--timeout", co.timeout, "seconds per run (0 = none)", num::RealRange::closed(0, 1e7));
  cli::add_int(*confirm, "--warmup", co.warmup, "unrecorded runs of each commit first", std::size_t{0}, std::size_t{1000});
  confirm->add_option("--journal-dir", co.journal_dir, "where the A/B journals go (default: beside the database)");
  DetectorFlags confirm_flags;
  add_detector_flags(*confirm, confirm_flags, false);

  DetectorFlags report_flags;
  std::string report_md, report_json;
  auto* report = app.add_subcommand("report", "HTML page with trend plots and a markdown summary");
  report->add_option("--db", db, "the history database")->required();
  report->add_option("-o,--out", out_dir, "directory for report.html, report.md and CSVs");
  cli::add_output_option(*report, "--markdown", report_md, "the summary as markdown (a PR comment)");
  cli::add_output_option(*report, "--json", report_json, "the changes as JSON (schema layerbench-history-detect/1)");
  add_detector_flags(*report, report_flags);

  MarkFlags mf;
  auto* mark = app.add_subcommand("mark", "mark an expected change or exclude a commit's runs");
  mark->add_option("--db", db, "the history database")->required();
  mark->add_flag("--expected", mf.expected, "a change at --commit was intended: never an alert");
  mark->add_flag("--exclude", mf.exclude, "leave --commit's runs out of the analysis");
  mark->add_flag("--list", mf.list, "list the marks");
  cli::add_int(*mark, "--remove", mf.remove, "remove mark ID", std::int64_t{1}, std::numeric_limits<std::int64_t>::max());
  mark->add_option("--commit", mf.commit, "the commit");
  mark->add_option("--benchmark", mf.benchmark, "only this benchmark (default: all)");
  mark->add_option("--note", mf.note, "why");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "layerbench-history: error: %s\n", e.what());
    return layerbench::kExitUsage;
  }
  try {
    if (*add) return do_add(db, commit, time, branch, machine, files);
    if (*detect) {
      layerbench::check_output_paths({{"--json", &json}, {"--markdown", &markdown}});
      if (json == "-" && markdown == "-") throw UsageError("--json - and --markdown -: only one may go to standard output");
      return do_detect(db, detect_flags, json, markdown);
    }
    if (*confirm) {
      if (!(co.alpha > 0 && co.alpha <= 0.5))
        throw UsageError(fmt::format("--alpha {:g}: the A/B's error rate must be in (0, 0.5]", co.alpha));
      confirm_flags.o.validate();
      lh::Store store(db, lh::Store::Mode::write);
      return lh::confirm(store, co, confirm_flags.o);
    }
    if (*report) {
      layerbench::check_output_paths({{"--json", &report_json}, {"--markdown", &report_md}});
      if (report_json == "-" && report_md == "-") throw UsageError("--json - and --markdown -: only one may go to standard output");
      if (out_dir.empty() && report_md.empty() && report_json.empty())
        throw UsageError("report: give -o DIR, --markdown FILE or --json FILE");
      return do_report(db, report_flags, out_dir, report_md, report_json);
    }
    return do_mark(db, mf);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "layerbench-history: error: %s\n", e.what());
    return layerbench::kExitUsage;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "layerbench-history: error: %s\n", e.what());
    return layerbench::kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "layerbench-history: failed: %s\n", e.what());
    return layerbench::kExitFailure;
  }
}
