// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A thin RAII layer over SQLite: one connection, prepared statements, and
// errors as values. Shared by the store index and the stat cache.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

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
  // open(), then `schema`. A file that is not a database or fails the
  // schema, or one marked by markDamaged(), is moved aside (with its -wal
  // and -shm) as `<path>.damaged` and made anew: a damaged index costs the
  // cache its entries, never the cache. `movedAside` gets why, if it was.
  static std::unique_ptr<SqliteDb> openOrRebuild(const std::string &path,
                                                 const char *schema,
                                                 std::string *error,
                                                 std::string *movedAside);
  // Marks `path` for openOrRebuild to move aside at the next start.
  static bool markDamaged(const std::string &path);
  ~SqliteDb();

  sqlite3 *handle() { return db; }
  // Runs one or more statements without results. False on error.
  bool exec(const char *sql, std::string *error = nullptr);
  std::string lastError() const;

  // A statement prepared once per connection (keyed by the address of the
  // literal `sql`) and reset when the handle goes out of scope, so it holds
  // no read transaction open. For the statements of every link: preparing
  // costs more than running them. The caller holds the connection's lock
  // for the handle's lifetime.
  class Cached {
  public:
    explicit Cached(SqliteStatement &s) : s(s) {}
    ~Cached() { s.reset(); }
    Cached(const Cached &) = delete;
    Cached &operator=(const Cached &) = delete;
    SqliteStatement *operator->() { return &s; }
    SqliteStatement &operator*() { return s; }

  private:
    SqliteStatement &s;
  };
  Cached cached(const char *sql);

private:
  explicit SqliteDb(sqlite3 *db) : db(db) {}
  std::unordered_map<const char *, std::unique_ptr<SqliteStatement>> prepared;
  sqlite3 *db;
};

} // namespace linkd
