#include "study/history/sqlite.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

namespace layerbench::history::sql {

Connection::Connection(const std::string& path, bool create, bool read_only, int busy_ms) {
  const int flags = read_only ? SQLITE_OPEN_READONLY
                              : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw SqliteError(fmt::format("cannot open: {}", msg), rc & 0xff);
  }
  sqlite3_busy_timeout(db_, busy_ms);
  sqlite3_extended_result_codes(db_, 0);
}

Connection::~Connection() { sqlite3_close(db_); }

void Connection::fail(int rc, std::string_view what) const {
  throw SqliteError(fmt::format("{}: {}", what, sqlite3_errmsg(db_)), rc & 0xff);
}

void Connection::exec(std::string_view sql) {
  char* err = nullptr;
  const std::string text(sql);
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    const std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw SqliteError(msg, rc & 0xff);
  }
}

Statement Connection::prepare(std::string_view sql) { return Statement(*this, sql); }
std::int64_t Connection::last_insert_id() const { return sqlite3_last_insert_rowid(db_); }
int Connection::changes() const { return sqlite3_changes(db_); }

Statement::Statement(Connection& db, std::string_view sql) : db_(&db) {
  const int rc = sqlite3_prepare_v2(db.raw(), sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) db.fail(rc, "prepare");
}

Statement::~Statement() { sqlite3_finalize(stmt_); }
Statement::Statement(Statement&& o) noexcept : db_(o.db_), stmt_(o.stmt_) { o.stmt_ = nullptr; }

Statement& Statement::bind(int i, std::int64_t v) {
  if (const int rc = sqlite3_bind_int64(stmt_, i, v); rc != SQLITE_OK) db_->fail(rc, "bind");
  return *this;
}
Statement& Statement::bind(int i, double v) {
  if (const int rc = sqlite3_bind_double(stmt_, i, v); rc != SQLITE_OK) db_->fail(rc, "bind");
  return *this;
}
Statement& Statement::bind(int i, std::string_view v) {
  if (const int rc = sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT); rc != SQLITE_OK)
    db_->fail(rc, "bind");
  return *this;
}
Statement& Statement::bind_null(int i) {
  if (const int rc = sqlite3_bind_null(stmt_, i); rc != SQLITE_OK) db_->fail(rc, "bind");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_->fail(rc, "query");
}
void Statement::run() {
  while (step()) {
  }
}
void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}
std::int64_t Statement::int64(int c) const { return sqlite3_column_int64(stmt_, c); }
double Statement::real(int c) const { return sqlite3_column_double(stmt_, c); }
std::string Statement::text(int c) const {
  const auto* p = sqlite3_column_text(stmt_, c);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, c)))
           : std::string();
}
bool Statement::is_null(int c) const { return sqlite3_column_type(stmt_, c) == SQLITE_NULL; }

Transaction::Transaction(Connection& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }
Transaction::~Transaction() {
  if (!done_) {
    try {
      db_.exec("ROLLBACK");
    } catch (...) {
    }
  }
}
void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace layerbench::history::sql
