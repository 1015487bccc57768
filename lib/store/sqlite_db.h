// A thin RAII layer over SQLite: one connection, prepared statements, and
// errors as values. Shared by the store index and the stat cache.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace linkd {

class SqliteStatement {
public:
  SqliteStatement(sqlite3 *db, const char *sql);
  ~SqliteStatement();
  SqliteStatement(const SqliteStatement &) = delete;
  SqliteStatement &operator=(const SqliteStatement &) = delete;

  bool ok() const { return stmt != nullptr; }
  SqliteStatement &bind(int i, int64_t v);
  SqliteStatement &bind(int i, std::string_view blob); // as BLOB
  SqliteStatement &bindText(int i, std::string_view text);
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step();
  void reset();
  int64_t columnInt(int i);
  std::string columnBlob(int i);

private:
  sqlite3_stmt *stmt = nullptr;
};

class SqliteDb {
public:
  // Opens (creating) `path` in WAL mode with a busy timeout, so several
  // daemons can share one file. Returns nullptr and sets `error` on failure.
  static std::unique_ptr<SqliteDb> open(const std::string &path,
                                        std::string *error);
  ~SqliteDb();

  sqlite3 *handle() { return db; }
  // Runs one or more statements without results. False on error.
  bool exec(const char *sql, std::string *error = nullptr);
  std::string lastError() const;

private:
  explicit SqliteDb(sqlite3 *db) : db(db) {}
  sqlite3 *db;
};

} // namespace linkd
