// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/audit/audit_command.h"

#include "audit/audit_model.h"
#include "audit/module_id.h"
#include "audit/state_record.h"
#include "config/config.h"
#include "daemon/linkd-lld/audit/load_closure.h"
#include "daemon/linkd-lld/audit/pdb_reader.h"
#include "digest/digest.h"
#include "store/local_store.h"
#include "util/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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
    "[--allow FILE] [--allow-incomplete]\n";

struct AuditArgs {
  audit::ClosureOptions closure;
  bool json = false;
  bool allowIncomplete = false;
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
    } else if (s == "--allow-incomplete") {
      a.allowIncomplete = true;
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
  // The recorded state of the module at `path`, if linkd linked it: by its
  // build-id (which `strip` keeps), else by its bytes.
  std::optional<std::vector<audit::RecordedSymbol>>
  find(const std::string &path, std::string *warning, std::string *how) {
    if (!store)
      return std::nullopt;
    std::string value;
    auto lookup = [&](const Digest &key) {
      return store->getAction(audit::kStateRecordNs, key, value) == Lookup::Hit;
    };
    std::string id = buildIdOf(path);
    if (!id.empty() && lookup(sha256(id))) {
      *how = id.substr(0, id.find(':'));
    } else {
      auto d = sha256File(path);
      if (!d || !lookup(d->digest))
        return std::nullopt;
      how->clear();
    }
    std::vector<audit::RecordedSymbol> syms;
    if (!audit::decodeStateRecord(value, syms, warning))
      return std::nullopt;
    return syms;
  }

private:
  static std::string buildIdOf(const std::string &path) {
    return audit::moduleBuildId(
        readFile(path, audit::kMaxModuleBytes).value_or(""));
  }
  std::unique_ptr<LocalStore> store;
};

// Replaces a module's state by linkd's link record where there is one (a
// PE image; an ELF module without a symbol table); says where its state
// came from.
struct Source {
  std::string text;
  bool inspectable = true;
};
Source applyLinkRecord(audit::LoadedModule &lm, Records &records,
                       const std::vector<std::string> &searchDirs,
                       std::vector<std::string> &warnings) {
  audit::ModuleInfo &info = lm.info;
  // A stripped ELF module's separate debug file has its symbol table, with
  // bindings and visibility: better than a record.
  // Not the dynamic loader's: ld.so keeps private copies of libc's state
  // (its own __environ, __curbrk, profil buffers) by design.
  std::string base = info.path.substr(info.path.find_last_of('/') + 1);
  bool loader = base.starts_with("ld-linux") || base.starts_with("ld64.so") ||
                base.starts_with("ld.so") || base.starts_with("ld-musl") ||
                info.soname.starts_with("ld-linux");
  std::string mismatch;
  std::string debugFile =
      loader ? "" : audit::useSeparateDebugFile(info, searchDirs, &mismatch);
  if (!debugFile.empty())
    return {"separate debug file " + debugFile};
  if (!mismatch.empty())
    warnings.push_back(info.path + ": debug file not used: " + mismatch);
  // A link record beats a PE symbol table: it names the input of each
  // symbol, so the C runtime's own state can be told apart. An ELF symbol
  // table is better than a record (it has bindings and visibility).
  std::string warning, how;
  std::optional<std::vector<audit::RecordedSymbol>> rec;
  if (info.format == "PE" || (!info.hasSymbolTable && info.format == "ELF"))
    rec = records.find(info.path, &warning, &how);
  if (!warning.empty())
    warnings.push_back(info.path + ": " + warning);
  if (rec) {
    std::string blind = audit::applyRecord(info, *rec);
    std::string text = how.empty() ? "linkd link record"
                                   : "linkd link record, found by its " + how;
    if (!blind.empty())
      return {text + ": " + blind, false};
    return {text};
  }
  // A PE module linkd did not link: its PDB, if it is this build's.
  if (info.format == "PE") {
    std::string pdbMismatch, blind;
    std::string pdb = audit::usePdb(info, searchDirs, &pdbMismatch, &blind);
    if (!pdb.empty())
      return blind.empty() ? Source{"PDB " + pdb}
                           : Source{"PDB " + pdb + ": " + blind, false};
    if (!pdbMismatch.empty())
      warnings.push_back(info.path + ": PDB not used: " + pdbMismatch);
  }
  if (info.hasSymbolTable)
    return {"symbol table"};
  return {lm.system ? "exports only (a system library)" : "exports only",
          false};
}

audit::AuditModule toAuditModule(audit::LoadedModule &lm, Source source) {
  audit::AuditModule am;
  am.path = lm.info.path;
  am.format = lm.info.format;
  am.how = lm.how;
  am.source = std::move(source.text);
  am.inspectable = source.inspectable;
  am.system = !source.inspectable && lm.system;
  am.defs = std::move(lm.info.defs);
  return am;
}

bool loadAllowList(const std::string &file, audit::AllowList &allow) {
  if (file.empty())
    return true;
  Result<std::string> text = readFile(file, 64u << 20);
  if (!text) {
    std::fprintf(stderr, "linkd audit: cannot read allow file %s\n",
                 text.error().c_str());
    return false;
  }
  std::string error;
  return audit::parseAllowList(*text, allow, &error);
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
  audit::Report report;
  report.program = args.closure.program;
  std::vector<Source> sources;
  std::vector<audit::ModuleInfo *> order;
  for (audit::LoadedModule &lm : closure.modules) {
    sources.push_back(
        applyLinkRecord(lm, records, args.closure.searchDirs, warnings));
    order.push_back(&lm.info);
  }
  audit::modelInterposition(order);
  for (size_t i = 0; i < closure.modules.size(); ++i)
    report.modules.push_back(
        toAuditModule(closure.modules[i], std::move(sources[i])));
  for (const std::string &w : warnings)
    std::fprintf(stderr, "linkd audit: warning: %s\n", w.c_str());
  report.findings =
      audit::findDuplicates(report.modules, allow, &report.allowed);
  report.notFollowed = std::move(closure.notFollowed);
  std::string text =
      args.json ? audit::formatJson(report) : audit::formatText(report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return audit::exitStatus(report, args.allowIncomplete);
}

} // namespace linkd
