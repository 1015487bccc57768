// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "store/sqlite_db.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace linkd {

SqliteStatement::SqliteStatement(sqlite3 *db, const char *sql) {
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK)
    stmt = nullptr;
}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt); }

SqliteStatement &SqliteStatement::bind(int i, int64_t v) {
  sqlite3_bind_int64(stmt, i, v);
  return *this;
}

SqliteStatement &SqliteStatement::bind(int i, std::string_view blob) {
  sqlite3_bind_blob64(stmt, i, blob.data(), blob.size(), SQLITE_TRANSIENT);
  return *this;
}

SqliteStatement &SqliteStatement::bindText(int i, std::string_view text) {
  sqlite3_bind_text64(stmt, i, text.data(), text.size(), SQLITE_TRANSIENT,
                      SQLITE_UTF8);
  return *this;
}

int SqliteStatement::step() { return stmt ? sqlite3_step(stmt) : SQLITE_ERROR; }

void SqliteStatement::reset() {
  if (stmt) {
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
  }
}

int64_t SqliteStatement::columnInt(int i) {
  return sqlite3_column_int64(stmt, i);
}

std::string SqliteStatement::columnBlob(int i) {
  const void *p = sqlite3_column_blob(stmt, i);
  int n = sqlite3_column_bytes(stmt, i);
  return p ? std::string(static_cast<const char *>(p), static_cast<size_t>(n))
           : std::string();
}

std::unique_ptr<SqliteDb> SqliteDb::open(const std::string &path,
                                         std::string *error) {
  sqlite3 *db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                               SQLITE_OPEN_FULLMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    if (error)
      *error = "cannot open " + path + ": " +
               (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return nullptr;
  }
  std::unique_ptr<SqliteDb> out(new SqliteDb(db));
  sqlite3_busy_timeout(db, 10000);
  // WAL: readers never block the writer; NORMAL sync is crash-safe in WAL
  // (a crash can lose the last transactions, never corrupt the file).
  if (!out->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", error))
    return nullptr;
  return out;
}

namespace {

void moveAside(const std::string &path) {
  for (const char *suffix : {"", "-wal", "-shm"}) {
    std::string from = path + suffix;
    if (::rename(from.c_str(), (path + ".damaged" + suffix).c_str()) != 0)
      ::unlink(from.c_str());
  }
}

} // namespace

bool SqliteDb::markDamaged(const std::string &path) {
  int fd = ::open((path + ".rebuild").c_str(),
                  O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return false;
  ::close(fd);
  return true;
}

std::unique_ptr<SqliteDb> SqliteDb::openOrRebuild(const std::string &path,
                                                  const char *schema,
                                                  std::string *error,
                                                  std::string *movedAside) {
  std::string why;
  if (::unlink((path + ".rebuild").c_str()) == 0)
    why = "marked damaged";
  if (why.empty()) {
    auto db = open(path, &why);
    if (db && db->exec(schema, &why))
      return db;
  }
  moveAside(path);
  if (movedAside)
    *movedAside = why.empty() ? "damaged" : why;
  auto db = open(path, error);
  if (!db || !db->exec(schema, error))
    return nullptr;
  return db;
}

SqliteDb::~SqliteDb() {
  prepared.clear(); // finalized before the connection closes
  sqlite3_close(db);
}

SqliteDb::Cached SqliteDb::cached(const char *sql) {
  std::unique_ptr<SqliteStatement> &s = prepared[sql];
  if (!s)
    s = std::make_unique<SqliteStatement>(db, sql);
  return Cached(*s);
}

bool SqliteDb::exec(const char *sql, std::string *error) {
  char *msg = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &msg) == SQLITE_OK)
    return true;
  if (error)
    *error = msg ? msg : "sqlite error";
  sqlite3_free(msg);
  return false;
}

std::string SqliteDb::lastError() const { return sqlite3_errmsg(db); }

} // namespace linkd
