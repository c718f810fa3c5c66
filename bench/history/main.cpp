// layerbench-history: a CI performance history in one SQLite file: add results per commit, find
// change points, confirm them with interleaved pairs, report them.
// Exit codes: 0 nothing confirmed; 1 a confirmed regression (or a runtime failure); 2 bad input
// or usage; 3 a suspected change awaiting confirmation.
#include "common/cli/app.hpp"
#include "common/json_text.hpp"
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
  if (!json.empty()) cli::write_output(json, layerbench::json_text(lh::findings_json(a), 2) + "\n");
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
  if (!json.empty()) cli::write_output(json, layerbench::json_text(lh::findings_json(a), 2) + "\n");
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

// Every flag of every subcommand, and the subcommands themselves.
struct Flags {
  std::string db, commit, time, branch, machine, json, markdown, out_dir, report_md, report_json;
  std::vector<std::string> files;
  DetectorFlags detect_flags, confirm_flags, report_flags;
  lh::ConfirmOptions co;
  double confirm_confidence = 1 - lh::ConfirmOptions{}.alpha;
  MarkFlags mf;
  CLI::App *add = nullptr, *detect = nullptr, *confirm = nullptr, *report = nullptr, *mark = nullptr;
};

void define_commands(CLI::App& app, Flags& f) {
  f.add = app.add_subcommand("add", "record the results of one commit (idempotent)");
  f.add->add_option("--db", f.db, "the history database (created if missing)")->required();
  f.add->add_option("--commit", f.commit, "git commit sha of the results")->required();
  f.add->add_option("--time", f.time, "commit time, ISO-8601 (default: now, for a new commit); orders the history");
  f.add->add_option("--branch", f.branch, "branch name");
  f.add->add_option("--machine", f.machine, "machine name (default: from the result file's context)");
  f.add->add_option("RESULT", f.files, "result files: layerbench JSON/CSV, layerbench-ab study/runs/analysis, Google "
                                   "Benchmark JSON, hyperfine JSON")->required();

  auto* detect = f.detect = app.add_subcommand("detect", "list suspected and confirmed changes (exit 3: one awaits confirmation)");
  detect->add_option("--db", f.db, "the history database")->required();
  cli::add_output_option(*detect, "--json", f.json, "the changes as JSON (schema layerbench-history-detect/1)");
  cli::add_output_option(*detect, "--markdown", f.markdown, "the summary as markdown");
  add_detector_flags(*detect, f.detect_flags);

  auto* confirm = f.confirm = app.add_subcommand("confirm", "re-measure suspected changes with an interleaved sequential A/B");
  confirm->add_option("--db", f.db, "the history database")->required();
  confirm->add_option("--run", f.co.run, "command template run for each commit; {commit} becomes the sha")->required();
  confirm->add_option("--metric", f.co.metric, "what a run measures, as in `layerbench-ab run --metric`");
  confirm->add_option("--before", f.co.before, "confirm this bracket instead of the suspicions: the commit before");
  confirm->add_option("--after", f.co.after, "... and the commit after");
  confirm->add_option("--benchmark", f.co.benchmark, "the benchmark the command measures (default: every one)");
  confirm->add_flag("--bisect", f.co.bisect, "narrow a confirmed range of several commits to one (log2 studies)");
  cli::add_int(*confirm, "--max-pairs", f.co.max_pairs, "cap of pairs per A/B", std::size_t{4}, std::size_t{100000});
  cli::add_confidence_options(*confirm, f.confirm_confidence, f.co.alpha);  // the always-valid interval's level
  cli::add_fraction(*confirm, "--equivalence", f.co.equivalence, "no-change margin (1% or 0.01)",
                    num::RealRange::open(0, 1));
  cli::add_real(*confirm, "--timeout", f.co.timeout, "seconds per run (0 = none)", num::RealRange::closed(0, 1e7));
  cli::add_int(*confirm, "--warmup", f.co.warmup, "unrecorded runs of each commit first", std::size_t{0}, std::size_t{1000});
  confirm->add_option("--journal-dir", f.co.journal_dir, "where the A/B journals go (default: beside the database)");
  add_detector_flags(*confirm, f.confirm_flags, false);

  auto* report = f.report = app.add_subcommand("report", "HTML page with trend plots and a markdown summary");
  report->add_option("--db", f.db, "the history database")->required();
  report->add_option("-o,--out", f.out_dir, "directory for report.html, report.md and CSVs");
  cli::add_output_option(*report, "--markdown", f.report_md, "the summary as markdown (a PR comment)");
  cli::add_output_option(*report, "--json", f.report_json, "the changes as JSON (schema layerbench-history-detect/1)");
  add_detector_flags(*report, f.report_flags);

  auto* mark = f.mark = app.add_subcommand("mark", "mark an expected change or exclude a commit's runs");
  mark->add_option("--db", f.db, "the history database")->required();
  mark->add_flag("--expected", f.mf.expected, "a change at --commit was intended: never an alert");
  mark->add_flag("--exclude", f.mf.exclude, "leave --commit's runs out of the analysis");
  mark->add_flag("--list", f.mf.list, "list the marks");
  cli::add_int(*mark, "--remove", f.mf.remove, "remove mark ID", std::int64_t{1}, std::numeric_limits<std::int64_t>::max());
  mark->add_option("--commit", f.mf.commit, "the commit");
  mark->add_option("--benchmark", f.mf.benchmark, "only this benchmark (default: all)");
  mark->add_option("--note", f.mf.note, "why");
}

int dispatch(Flags& f) {
  if (*f.add) return do_add(f.db, f.commit, f.time, f.branch, f.machine, f.files);
  if (*f.detect) {
    layerbench::check_output_paths({{"--json", &f.json}, {"--markdown", &f.markdown}});
    if (f.json == "-" && f.markdown == "-") throw UsageError("--json - and --markdown -: only one may go to standard output");
    return do_detect(f.db, f.detect_flags, f.json, f.markdown);
  }
  if (*f.confirm) {
    if (!(f.co.alpha > 0 && f.co.alpha <= 0.5))
      throw UsageError(fmt::format("--alpha {:g}: the A/B's error rate must be in (0, 0.5]", f.co.alpha));
    f.confirm_flags.o.validate();
    lh::Store store(f.db, lh::Store::Mode::write);
    return lh::confirm(store, f.co, f.confirm_flags.o);
  }
  if (*f.report) {
    layerbench::check_output_paths({{"--json", &f.report_json}, {"--markdown", &f.report_md}});
    if (f.report_json == "-" && f.report_md == "-") throw UsageError("--json - and --markdown -: only one may go to standard output");
    if (f.out_dir.empty() && f.report_md.empty() && f.report_json.empty())
      throw UsageError("report: give -o DIR, --markdown FILE or --json FILE");
    return do_report(f.db, f.report_flags, f.out_dir, f.report_md, f.report_json);
  }
  return do_mark(f.db, f.mf);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"layerbench-history: a CI performance history: change points found, confirmed by interleaved pairs"};
  cli::init_app(app, "layerbench-history");
  app.footer(kExamples);
  app.require_subcommand(1);
  Flags f;
  define_commands(app, f);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "layerbench-history: error: %s\n", e.what());
    return layerbench::kExitUsage;
  }
  try {
    return dispatch(f);
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
