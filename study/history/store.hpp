#pragma once
// The history store: one SQLite file (WAL journal, busy timeout, every write one transaction).
//
// Schema, version 1 (PRAGMA user_version = 1):
//   commits(id, sha UNIQUE, time, branch, seq)        time: ISO-8601 UTC; history order = (time, seq)
//   series(id, benchmark, metric, unit, machine)      UNIQUE(benchmark, metric, machine)
//   runs(id, commit_id, source, digest, machine, added)  UNIQUE(commit_id, digest, machine): one
//                                                     result file added twice changes nothing
//   samples(run_id, series_id, idx, value)            every sample, PRIMARY KEY(run_id, series_id, idx)
//   marks(id, kind, commit_id, benchmark, note, added) kind 'expected' (an intended change at that
//                                                     commit) or 'exclude' (its runs are left out);
//                                                     benchmark '' = every benchmark
//   confirmations(id, before_id, after_id, benchmark, metric, verdict, pairs, relative, low,
//                 high, command, journal, added)      verdict 'confirmed' | 'refuted' | 'undecided'
// Migrations run in order from the file's user_version, each in its own transaction; a file
// whose user_version is newer than this build's is refused before anything is written.
// Concurrency: writers take the lock with BEGIN IMMEDIATE and wait up to the busy timeout, so
// concurrent `add`s queue; a writer killed mid-transaction leaves no trace (WAL rollback).
#include "study/history/ingest.hpp"
#include "study/history/sqlite.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace layerbench::history {

inline constexpr int kSchemaVersion = 1;
// SQLite `PRAGMA application_id` of a layerbench history ("LBHI"): set on every database the tool
// writes, checked before anything is written, so another application's SQLite file is refused.
inline constexpr std::int64_t kApplicationId = 0x4C424849;

struct Commit {
  std::int64_t id = 0;
  std::string sha, time, branch;
};

struct SeriesKey {
  std::string benchmark, metric, unit, machine;
  std::string display() const;  // "benchmark (metric, machine)"
};

// One series across the history: samples[i] are those of commits[i] (empty where the commit has
// no run of this series, or its runs are excluded).
struct Series {
  std::int64_t id = 0;
  SeriesKey key;
  std::vector<std::vector<double>> samples;
};

struct Mark {
  std::int64_t id = 0;
  std::string kind;  // "expected" or "exclude"
  std::string sha;
  std::string benchmark;  // "" = all
  std::string note, added;
};

struct Confirmation {
  std::int64_t id = 0;
  std::string before_sha, after_sha, benchmark, metric, verdict, command, journal, added;
  std::int64_t pairs = 0;
  double relative = 0, low = 0, high = 0;
};

struct AddOutcome {
  std::size_t files_added = 0, files_known = 0, samples = 0;
};

class Store {
 public:
  enum class Mode { create, write, read };
  // Throws layerbench::UsageError (exit 2, file untouched) when the file is missing (write/read),
  // not an SQLite database or damaged, or its schema is newer than kSchemaVersion.
  Store(const std::string& path, Mode mode);
  ~Store();

  // Records `commit` (time/branch may be empty: kept from before, or now / "" for a new commit)
  // and the files' runs in one transaction. Idempotent: a file already recorded for the commit
  // (same bytes, same machine) is skipped.
  AddOutcome add(const Commit& commit, const std::vector<std::pair<ResultSamples, std::string>>& files_with_digest,
                 const std::string& machine_override);

  std::vector<Commit> commits();             // in history order
  std::vector<Series> series(bool apply_exclusions = true);
  std::optional<Commit> find_commit(const std::string& sha_or_prefix);  // UsageError when ambiguous

  std::int64_t add_mark(const std::string& kind, const std::string& sha, const std::string& benchmark,
                        const std::string& note);
  void remove_mark(std::int64_t id);
  std::vector<Mark> marks();

  void add_confirmation(const Confirmation& c);
  std::vector<Confirmation> confirmations();

  const std::string& path() const { return path_; }
  int schema_version() const { return kSchemaVersion; }

 private:
  std::int64_t commit_id(const std::string& sha);
  std::string path_;
  std::unique_ptr<sql::Connection> db_;
};

// "2026-12-01T10:00:00Z", "2026-12-01T11:00:00+01:00", "2026-12-01 10:00:00" -> UTC
// "2026-12-01T10:00:00Z"; throws UsageError naming --time otherwise.
std::string normalize_time(const std::string& text);
std::string now_utc();
// A content digest for idempotent adds (FNV-1a 64 over the bytes, hex).
std::string digest_of(const std::string& bytes);

}  // namespace layerbench::history
