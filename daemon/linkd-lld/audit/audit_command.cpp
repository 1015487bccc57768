// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/audit/audit_command.h"

#include "audit/audit_model.h"
#include "audit/state_record.h"
#include "config/config.h"
#include "daemon/linkd-lld/audit/load_closure.h"
#include "digest/digest.h"
#include "store/local_store.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>

namespace linkd {

namespace {

constexpr const char *kUsage =
    "usage: linkd audit PROGRAM [MODULE...] [--search DIR]... [--json] "
    "[--allow FILE]\n";

struct AuditArgs {
  audit::ClosureOptions closure;
  bool json = false;
  std::string allowFile;
};

int usage(const std::string &msg) {
  std::fprintf(stderr, "linkd audit: %s\n%s", msg.c_str(), kUsage);
  return 2;
}

bool parseArgs(int argc, char **argv, AuditArgs &a, std::string &error) {
  for (int i = 2; i < argc; ++i) {
    std::string_view s = argv[i];
    if (s == "--json") {
      a.json = true;
    } else if (s == "--search" || s == "--allow") {
      if (i + 1 >= argc) {
        error = "missing value for " + std::string(s);
        return false;
      }
      (s == "--search" ? a.closure.searchDirs.emplace_back() : a.allowFile) =
          argv[++i];
    } else if (s.starts_with("--")) {
      error = "unknown option " + std::string(s);
      return false;
    } else if (a.closure.program.empty()) {
      a.closure.program = argv[i];
    } else {
      a.closure.named.push_back(argv[i]);
    }
  }
  if (a.closure.program.empty()) {
    error = "missing PROGRAM";
    return false;
  }
  if (const char *lp = std::getenv("LD_LIBRARY_PATH"))
    a.closure.ldLibraryPath = lp;
  return true;
}

// The link records of the local store, opened only if it exists.
class Records {
public:
  Records() {
    Config cfg = loadConfig();
    struct stat st;
    if (cfg.cacheDir.empty() || stat(cfg.cacheDir.c_str(), &st) != 0)
      return;
    StoreConfig sc;
    sc.root = cfg.cacheDir;
    std::string err;
    store = LocalStore::open(sc, &err);
  }
  // The recorded state of the module at `path`, if linkd linked it.
  std::optional<std::vector<audit::RecordedSymbol>>
  find(const std::string &path, std::string *warning) {
    if (!store)
      return std::nullopt;
    auto d = sha256File(path);
    if (!d)
      return std::nullopt;
    std::string value;
    if (store->getAction(audit::kStateRecordNs, d->digest, value) !=
        Lookup::Hit)
      return std::nullopt;
    std::vector<audit::RecordedSymbol> syms;
    if (!audit::decodeStateRecord(value, syms, warning))
      return std::nullopt;
    return syms;
  }

private:
  std::unique_ptr<LocalStore> store;
};

audit::AuditModule toAuditModule(audit::LoadedModule &lm, Records &records,
                                 std::vector<std::string> &warnings) {
  audit::AuditModule am;
  audit::ModuleInfo &info = lm.info;
  am.path = info.path;
  am.format = info.format;
  am.how = lm.how;
  // A link record beats a PE symbol table: it names the input of each
  // symbol, so the C runtime's own state can be told apart. An ELF symbol
  // table is better than a record (it has bindings and visibility).
  std::string warning;
  std::optional<std::vector<audit::RecordedSymbol>> rec;
  if (info.format == "PE" || (!info.hasSymbolTable && info.format == "ELF"))
    rec = records.find(info.path, &warning);
  if (!warning.empty())
    warnings.push_back(info.path + ": " + warning);
  if (rec) {
    audit::applyRecord(info, *rec);
    am.source = "linkd link record";
  } else if (info.hasSymbolTable) {
    am.source = "symbol table";
  } else {
    am.source = "exports only";
    am.inspectable = false;
  }
  am.defs = std::move(info.defs);
  return am;
}

bool loadAllowList(const std::string &file, audit::AllowList &allow) {
  if (file.empty())
    return true;
  std::ifstream in(file);
  if (!in) {
    std::fprintf(stderr, "linkd audit: cannot read allow file %s\n",
                 file.c_str());
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string error;
  return audit::parseAllowList(ss.str(), allow, &error);
}

} // namespace

int cmdAudit(int argc, char **argv) {
  AuditArgs args;
  std::string error;
  if (!parseArgs(argc, argv, args, error))
    return usage(error);
  audit::AllowList allow;
  if (!loadAllowList(args.allowFile, allow))
    return 2;
  audit::Closure closure = audit::loadClosure(args.closure);
  for (const std::string &e : closure.errors)
    std::fprintf(stderr, "linkd audit: error: %s\n", e.c_str());
  if (!closure.errors.empty())
    return 2;
  Records records;
  std::vector<std::string> warnings;
  std::vector<audit::AuditModule> modules;
  for (audit::LoadedModule &lm : closure.modules)
    modules.push_back(toAuditModule(lm, records, warnings));
  for (const std::string &w : warnings)
    std::fprintf(stderr, "linkd audit: warning: %s\n", w.c_str());
  size_t allowed = 0;
  auto findings = audit::findDuplicates(modules, allow, &allowed);
  std::string report =
      args.json ? audit::formatJson(args.closure.program, modules, findings,
                                    allowed, closure.notFollowed)
                : audit::formatText(args.closure.program, modules, findings,
                                    allowed, closure.notFollowed);
  std::fwrite(report.data(), 1, report.size(), stdout);
  std::fflush(stdout);
  return findings.empty() ? 0 : 1;
}

} // namespace linkd
