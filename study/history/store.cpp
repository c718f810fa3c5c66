#include "study/history/store.hpp"

#include "common/usage.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <thread>
#include <unistd.h>

namespace layerbench::history {
namespace {

constexpr int kBusyMs = 60000;  // a CI job waits up to a minute for another job's write

// Switching a new file to the WAL journal needs the file to itself, and SQLite answers
// SQLITE_BUSY at once there instead of calling the busy handler: two jobs creating the same new
// history at the same moment would see one of them refused. The switch is retried until the
// busy timeout, as a write waits for another writer.
void use_wal(sql::Connection& db) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyMs);
  for (;;) {
    try {
      db.exec("PRAGMA journal_mode=WAL");
      return;
    } catch (const sql::SqliteError& e) {
      if ((e.code() != SQLITE_BUSY && e.code() != SQLITE_LOCKED) || std::chrono::steady_clock::now() >= until) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Migration i takes a file from user_version i to i + 1.
const char* const kMigrations[] = {
    R"sql(
CREATE TABLE commits(
  id INTEGER PRIMARY KEY,
  sha TEXT NOT NULL UNIQUE,
  time TEXT NOT NULL,
  branch TEXT NOT NULL DEFAULT '',
  seq INTEGER NOT NULL);
CREATE INDEX commits_order ON commits(time, seq);
CREATE TABLE series(
  id INTEGER PRIMARY KEY,
  benchmark TEXT NOT NULL,
  metric TEXT NOT NULL,
  unit TEXT NOT NULL,
  machine TEXT NOT NULL,
  UNIQUE(benchmark, metric, machine));
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  commit_id INTEGER NOT NULL REFERENCES commits(id),
  source TEXT NOT NULL,
  digest TEXT NOT NULL,
  machine TEXT NOT NULL,
  added TEXT NOT NULL,
  UNIQUE(commit_id, digest, machine));
CREATE TABLE samples(
  run_id INTEGER NOT NULL REFERENCES runs(id),
  series_id INTEGER NOT NULL REFERENCES series(id),
  idx INTEGER NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY(run_id, series_id, idx)) WITHOUT ROWID;
CREATE TABLE marks(
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL CHECK(kind IN ('expected', 'exclude')),
  commit_id INTEGER NOT NULL REFERENCES commits(id),
  benchmark TEXT NOT NULL DEFAULT '',
  note TEXT NOT NULL DEFAULT '',
  added TEXT NOT NULL);
CREATE TABLE confirmations(
  id INTEGER PRIMARY KEY,
  before_id INTEGER NOT NULL REFERENCES commits(id),
  after_id INTEGER NOT NULL REFERENCES commits(id),
  benchmark TEXT NOT NULL,
  metric TEXT NOT NULL,
  verdict TEXT NOT NULL CHECK(verdict IN ('confirmed', 'refuted', 'undecided')),
  pairs INTEGER NOT NULL,
  relative REAL, low REAL, high REAL,
  command TEXT NOT NULL,
  journal TEXT NOT NULL,
  added TEXT NOT NULL);
)sql",
};
static_assert(std::size(kMigrations) == kSchemaVersion);

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw UsageError(fmt::format("{}: {}", path, why));
}

// The tables of the layerbench-history schema (kMigrations[0]).
const std::set<std::string> kOwnTables = {"commits", "series", "runs", "samples", "marks", "confirmations"};

// What an existing file holds, read through a read-only connection.
struct Probe {
  std::int64_t version = 0;
  std::int64_t application_id = 0;
  std::set<std::string> tables;  // every table, index, view and trigger name
};

}  // namespace

std::string SeriesKey::display() const {
  return fmt::format("{} ({}{}, {})", benchmark, metric, unit.empty() ? "" : " " + unit, machine);
}

std::string now_utc() {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

std::string normalize_time(const std::string& text) {
  static const std::regex re(R"((\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:?\d{2})?)");
  std::smatch m;
  if (!std::regex_match(text, m, re))
    throw UsageError(fmt::format("--time {}: expected ISO-8601 such as 2026-12-01T10:00:00Z", text));
  std::tm tm{};
  tm.tm_year = std::stoi(m[1]) - 1900;
  tm.tm_mon = std::stoi(m[2]) - 1;
  tm.tm_mday = std::stoi(m[3]);
  tm.tm_hour = std::stoi(m[4]);
  tm.tm_min = std::stoi(m[5]);
  tm.tm_sec = std::stoi(m[6]);
  // Every field in range, the day in its month (2026-02-30 is no date; timegm would make it March 2).
  const std::chrono::year_month_day ymd{std::chrono::year(tm.tm_year + 1900),
                                        std::chrono::month(static_cast<unsigned>(tm.tm_mon + 1)),
                                        std::chrono::day(static_cast<unsigned>(tm.tm_mday))};
  if (!ymd.ok())
    throw UsageError(fmt::format("--time {}: {}-{}-{} is not a date (no day {} in that month)", text, m[1].str(),
                                 m[2].str(), m[3].str(), tm.tm_mday));
  if (tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 59)
    throw UsageError(fmt::format("--time {}: not a valid time of day (hours 00-23, minutes and seconds 00-59)", text));
  std::time_t t = timegm(&tm);
  const std::string zone = m[8];
  if (!zone.empty() && zone != "Z") {
    const int sign = zone[0] == '-' ? -1 : 1;
    const std::string digits = zone.substr(1);
    const int hh = std::stoi(digits.substr(0, 2)), mm = std::stoi(digits.substr(digits.size() - 2));
    if (hh > 23 || mm > 59) throw UsageError(fmt::format("--time {}: the UTC offset {} is not valid", text, zone));
    t -= sign * (hh * 3600 + mm * 60);
  }
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string digest_of(const std::string& bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}:{}", h, bytes.size());
}

Store::Store(const std::string& path, Mode mode) : path_(path) {
  const bool exists = std::filesystem::exists(path);
  if (!exists && mode != Mode::create) refuse(path, "no such history database (create it with `layerbench-history add`)");
  if (exists && std::filesystem::is_directory(path)) refuse(path, "is a directory, expected a history database file");
  try {
    Probe p;
    if (exists) {
      // The checks read through a read-only connection, which never writes the file (not even
      // a checkpoint when it closes): a foreign, newer or damaged database stays exactly as it was.
      sql::Connection probe(path, false, true, kBusyMs);
      auto v = probe.prepare("PRAGMA user_version");
      v.step();
      p.version = v.int64(0);
      auto a = probe.prepare("PRAGMA application_id");
      a.step();
      p.application_id = a.int64(0);
      auto t = probe.prepare("SELECT name FROM sqlite_schema");  // SQLITE_NOTADB on a file that is not SQLite
      while (t.step()) p.tables.insert(t.text(0));
    }
    // Ours: our application_id; or, written before it was set, our schema version with our tables.
    // An empty database (no schema at all) is a new history. Anything else belongs to another
    // application and is never written to.
    const bool own_tables = std::includes(p.tables.begin(), p.tables.end(), kOwnTables.begin(), kOwnTables.end());
    const bool ours = p.application_id == kApplicationId ||
                      (p.application_id == 0 && p.version >= 1 && own_tables) ||
                      (p.application_id == 0 && p.version == 0 && p.tables.empty());
    if (!ours) {
      std::vector<std::string> names(p.tables.begin(), p.tables.end());
      if (names.size() > 5) names.resize(5), names.push_back("...");
      refuse(path, fmt::format("not a layerbench history database (SQLite application_id {:#x}, {} schema entries: "
                               "{}): another application's file; nothing was written to it",
                               p.application_id, p.tables.size(), fmt::join(names, ", ")));
    }
    if (p.version > kSchemaVersion)
      refuse(path, fmt::format("schema version {} is newer than this layerbench-history's ({}): use a newer "
                               "layerbench; the file was not changed",
                               p.version, kSchemaVersion));
    if (mode == Mode::read && p.version == 0) refuse(path, "not a history database (no layerbench-history schema in it)");
    db_ = std::make_unique<sql::Connection>(path, mode == Mode::create, mode == Mode::read, kBusyMs);
    if (mode == Mode::read) return;
    // SQLite opens a write-protected file read-only without a word: say so before any write. The
    // directory must be writable too (the write-ahead log lives beside the file).
    const std::string dir = std::filesystem::path(path).parent_path().empty()
                                ? std::string(".") : std::filesystem::path(path).parent_path().string();
    if (sqlite3_db_readonly(db_->raw(), "main") == 1)
      refuse(path, "the database is read-only (write-protected file or file system); `add`, `confirm` and `mark` "
                   "write to it: give a writable copy");
    if (::access(dir.c_str(), W_OK) != 0)
      refuse(path, fmt::format("its directory '{}' is not writable (the write-ahead log is kept beside the "
                               "database); give a writable place", dir));
    use_wal(*db_);
    db_->exec("PRAGMA synchronous=NORMAL");
    db_->exec("PRAGMA foreign_keys=ON");
    for (auto from = p.version; from < kSchemaVersion; ++from) {
      sql::Transaction tx(*db_);
      std::int64_t now = 0;
      {
        auto again = db_->prepare("PRAGMA user_version");  // another process may have migrated meanwhile
        again.step();
        now = again.int64(0);
      }
      if (now > from) continue;
      db_->exec(kMigrations[from]);
      db_->exec(fmt::format("PRAGMA user_version = {}", from + 1));
      tx.commit();
    }
    if (p.application_id != kApplicationId) db_->exec(fmt::format("PRAGMA application_id = {}", kApplicationId));
  } catch (const sql::SqliteError& e) {
    if (e.code() == SQLITE_READONLY || e.code() == SQLITE_PERM || e.code() == SQLITE_CANTOPEN)
      refuse(path, fmt::format("cannot write the database ({}): it is read-only here; give a writable copy", e.what()));
    refuse(path, fmt::format("not a usable history database ({}); the file was not changed", e.what()));
  }
}

Store::~Store() = default;

std::int64_t Store::commit_id(const std::string& sha) {
  const auto c = find_commit(sha);
  if (!c) throw UsageError(fmt::format("commit {}: not in {}", sha, path_));
  return c->id;
}

std::optional<Commit> Store::find_commit(const std::string& prefix) {
  auto q = db_->prepare("SELECT id, sha, time, branch FROM commits WHERE substr(sha, 1, ?1) = ?2 LIMIT 2");
  q.bind(1, static_cast<std::int64_t>(prefix.size())).bind(2, prefix);
  std::optional<Commit> found;
  while (q.step()) {
    if (found) throw UsageError(fmt::format("commit {}: ambiguous in {}", prefix, path_));
    found = Commit{q.int64(0), q.text(1), q.text(2), q.text(3)};
  }
  return found;
}

AddOutcome Store::add(const Commit& commit, const std::vector<std::pair<ResultSamples, std::string>>& files,
                      const std::string& machine_override) {
  AddOutcome out;
  sql::Transaction tx(*db_);
  std::int64_t cid = 0;
  {
    auto q = db_->prepare("SELECT id, time, branch FROM commits WHERE sha = ?1");
    q.bind(1, commit.sha);
    if (q.step()) {
      cid = q.int64(0);
      if (!commit.time.empty() && q.text(1) != commit.time)
        throw UsageError(fmt::format("--time {}: commit {} is recorded with time {}", commit.time, commit.sha, q.text(1)));
      if (!commit.branch.empty() && q.text(2).empty())
        db_->prepare("UPDATE commits SET branch = ?1 WHERE id = ?2").bind(1, commit.branch).bind(2, cid).run();
    } else {
      auto ins = db_->prepare(
          "INSERT INTO commits(sha, time, branch, seq) VALUES(?1, ?2, ?3, (SELECT coalesce(max(seq), 0) + 1 FROM commits))");
      ins.bind(1, commit.sha).bind(2, commit.time.empty() ? now_utc() : commit.time).bind(3, commit.branch).run();
      cid = db_->last_insert_id();
    }
  }
  auto find_run = db_->prepare("SELECT id FROM runs WHERE commit_id = ?1 AND digest = ?2 AND machine = ?3");
  auto add_run = db_->prepare("INSERT INTO runs(commit_id, source, digest, machine, added) VALUES(?1, ?2, ?3, ?4, ?5)");
  auto find_series = db_->prepare("SELECT id FROM series WHERE benchmark = ?1 AND metric = ?2 AND machine = ?3");
  auto add_series = db_->prepare("INSERT INTO series(benchmark, metric, unit, machine) VALUES(?1, ?2, ?3, ?4)");
  auto add_sample = db_->prepare("INSERT OR IGNORE INTO samples(run_id, series_id, idx, value) VALUES(?1, ?2, ?3, ?4)");
  const std::string added = now_utc();
  for (const auto& [file, digest] : files) {
    std::string machine = !machine_override.empty() ? machine_override : file.machine.empty() ? "default" : file.machine;
    find_run.reset();
    find_run.bind(1, cid).bind(2, digest).bind(3, machine);
    if (find_run.step()) {
      ++out.files_known;
      continue;
    }
    add_run.reset();
    add_run.bind(1, cid).bind(2, file.path).bind(3, digest).bind(4, machine).bind(5, added).run();
    const auto run_id = db_->last_insert_id();
    ++out.files_added;
    for (const auto& s : file.series) {
      find_series.reset();
      find_series.bind(1, s.benchmark).bind(2, s.metric).bind(3, machine);
      std::int64_t sid = 0;
      if (find_series.step()) {
        sid = find_series.int64(0);
      } else {
        add_series.reset();
        add_series.bind(1, s.benchmark).bind(2, s.metric).bind(3, s.unit).bind(4, machine).run();
        sid = db_->last_insert_id();
      }
      // A file naming one benchmark twice (two GB repetitions sets) keeps all of them in order.
      auto next = db_->prepare("SELECT coalesce(max(idx), -1) + 1 FROM samples WHERE run_id = ?1 AND series_id = ?2");
      next.bind(1, run_id).bind(2, sid);
      next.step();
      std::int64_t idx = next.int64(0);
      for (double v : s.samples) {
        add_sample.reset();
        add_sample.bind(1, run_id).bind(2, sid).bind(3, idx++).bind(4, v).run();
        ++out.samples;
      }
    }
  }
  tx.commit();
  return out;
}

std::vector<Commit> Store::commits() {
  std::vector<Commit> out;
  auto q = db_->prepare("SELECT id, sha, time, branch FROM commits ORDER BY time, seq");
  while (q.step()) out.push_back({q.int64(0), q.text(1), q.text(2), q.text(3)});
  return out;
}

std::vector<Series> Store::series(bool apply_exclusions) {
  const auto cs = commits();
  std::map<std::int64_t, std::size_t> pos;
  for (std::size_t i = 0; i < cs.size(); ++i) pos[cs[i].id] = i;
  std::vector<Series> out;
  std::map<std::int64_t, std::size_t> index;
  auto q = db_->prepare("SELECT id, benchmark, metric, unit, machine FROM series ORDER BY benchmark, metric, machine");
  while (q.step()) {
    index[q.int64(0)] = out.size();
    out.push_back({q.int64(0), {q.text(1), q.text(2), q.text(3), q.text(4)}, std::vector<std::vector<double>>(cs.size())});
  }
  std::map<std::int64_t, std::vector<std::string>> excluded;  // commit -> benchmarks ('' = all)
  if (apply_exclusions) {
    auto m = db_->prepare("SELECT commit_id, benchmark FROM marks WHERE kind = 'exclude'");
    while (m.step()) excluded[m.int64(0)].push_back(m.text(1));
  }
  auto s = db_->prepare(
      "SELECT r.commit_id, s.series_id, s.value FROM samples s JOIN runs r ON r.id = s.run_id "
      "ORDER BY r.commit_id, r.id, s.series_id, s.idx");
  while (s.step()) {
    const auto cid = s.int64(0);
    auto& series = out[index.at(s.int64(1))];
    if (auto it = excluded.find(cid); it != excluded.end()) {
      bool drop = false;
      for (const auto& b : it->second) drop |= b.empty() || b == series.key.benchmark;
      if (drop) continue;
    }
    series.samples[pos.at(cid)].push_back(s.real(2));
  }
  return out;
}

std::int64_t Store::add_mark(const std::string& kind, const std::string& sha, const std::string& benchmark,
                             const std::string& note) {
  sql::Transaction tx(*db_);
  const auto cid = commit_id(sha);
  db_->prepare("INSERT INTO marks(kind, commit_id, benchmark, note, added) VALUES(?1, ?2, ?3, ?4, ?5)")
      .bind(1, kind).bind(2, cid).bind(3, benchmark).bind(4, note).bind(5, now_utc()).run();
  const auto id = db_->last_insert_id();
  tx.commit();
  return id;
}

void Store::remove_mark(std::int64_t id) {
  sql::Transaction tx(*db_);
  db_->prepare("DELETE FROM marks WHERE id = ?1").bind(1, id).run();
  if (db_->changes() == 0) throw UsageError(fmt::format("--remove {}: no such mark", id));
  tx.commit();
}

std::vector<Mark> Store::marks() {
  std::vector<Mark> out;
  auto q = db_->prepare(
      "SELECT m.id, m.kind, c.sha, m.benchmark, m.note, m.added FROM marks m JOIN commits c ON c.id = m.commit_id "
      "ORDER BY m.id");
  while (q.step()) out.push_back({q.int64(0), q.text(1), q.text(2), q.text(3), q.text(4), q.text(5)});
  return out;
}

void Store::add_confirmation(const Confirmation& c) {
  sql::Transaction tx(*db_);
  const auto b = commit_id(c.before_sha), a = commit_id(c.after_sha);
  db_->prepare(
         "INSERT INTO confirmations(before_id, after_id, benchmark, metric, verdict, pairs, relative, low, high, "
         "command, journal, added) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)")
      .bind(1, b).bind(2, a).bind(3, c.benchmark).bind(4, c.metric).bind(5, c.verdict).bind(6, c.pairs)
      .bind(7, c.relative).bind(8, c.low).bind(9, c.high).bind(10, c.command).bind(11, c.journal).bind(12, now_utc())
      .run();
  tx.commit();
}

std::vector<Confirmation> Store::confirmations() {
  std::vector<Confirmation> out;
  auto q = db_->prepare(
      "SELECT f.id, b.sha, a.sha, f.benchmark, f.metric, f.verdict, f.command, f.journal, f.added, f.pairs, "
      "f.relative, f.low, f.high FROM confirmations f JOIN commits b ON b.id = f.before_id "
      "JOIN commits a ON a.id = f.after_id ORDER BY f.id");
  while (q.step()) {
    Confirmation c;
    c.id = q.int64(0);
    c.before_sha = q.text(1);
    c.after_sha = q.text(2);
    c.benchmark = q.text(3);
    c.metric = q.text(4);
    c.verdict = q.text(5);
    c.command = q.text(6);
    c.journal = q.text(7);
    c.added = q.text(8);
    c.pairs = q.int64(9);
    c.relative = q.real(10);
    c.low = q.real(11);
    c.high = q.real(12);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace layerbench::history
