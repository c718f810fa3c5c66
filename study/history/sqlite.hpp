#pragma once
// A thin RAII layer over SQLite's C API (libsqlite3-dev): a connection, prepared statements with
// typed binds and columns, and a transaction guard that rolls back unless committed. Every error
// becomes a SqliteError carrying SQLite's message. (SQLiteCpp would add a dependency for the
// same few dozen lines.)
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace layerbench::history::sql {

class SqliteError : public std::runtime_error {
 public:
  SqliteError(const std::string& what, int code) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }  // SQLite's primary result code (SQLITE_NOTADB, ...)

 private:
  int code_;
};

class Statement;

class Connection {
 public:
  // Opens `path`; create = false fails when the file does not exist. busy_ms: how long a writer
  // waits for another one's lock before giving up.
  Connection(const std::string& path, bool create, bool read_only, int busy_ms);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void exec(std::string_view sql);  // one or more statements, no results
  Statement prepare(std::string_view sql);
  std::int64_t last_insert_id() const;
  int changes() const;
  sqlite3* raw() const { return db_; }
  [[noreturn]] void fail(int rc, std::string_view what) const;

 private:
  sqlite3* db_ = nullptr;
};

class Statement {
 public:
  Statement(Connection& db, std::string_view sql);
  ~Statement();
  Statement(Statement&& o) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, std::int64_t v);  // 1-based
  Statement& bind(int index, double v);
  Statement& bind(int index, std::string_view v);
  Statement& bind_null(int index);
  bool step();  // true: a row is ready
  void run();   // step to the end
  void reset();
  std::int64_t int64(int col) const;  // 0-based
  double real(int col) const;
  std::string text(int col) const;
  bool is_null(int col) const;

 private:
  Connection* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE (takes the write lock at once, so two writers queue instead of deadlocking on
// an upgrade); rolled back by the destructor unless commit() ran.
class Transaction {
 public:
  explicit Transaction(Connection& db);
  ~Transaction();
  void commit();

 private:
  Connection& db_;
  bool done_ = false;
};

}  // namespace layerbench::history::sql
