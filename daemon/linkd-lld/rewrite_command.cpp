// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// `linkd-lld rewrite`: the command line around lib/rewrite. Reads every
// input, computes and applies the rename table (or prints it with
// --dry-run), and writes each output atomically (temporary file + rename)
// into --out-dir. Any bad input fails the whole run before anything is
// written: the table depends on every runtime input.
// Compiled without exceptions (it includes LLVM headers).
#include "daemon/linkd-lld/rewrite_command.h"

#include "rewrite/rewrite.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace linkd {
namespace {

using rewrite::Scope;

constexpr const char *kUsage =
    "usage: linkd-lld rewrite [--match PREFIX] [--export-prefix P] "
    "[--import-prefix P]\n"
    "         [--internal-prefix P] [--rename OLD=NEW]... [--rename-file F]\n"
    "         [--runtime FILE...] [--kernel FILE...] [--input FILE...]\n"
    "         --out-dir DIR [--dry-run] [--table-out FILE]\n";

int usageError(const std::string &msg) {
  std::fprintf(stderr, "linkd-lld rewrite: %s\n%s", msg.c_str(), kUsage);
  return 2;
}

// One "error:" line per message line: the library joins one message per
// bad input or member.
int failure(const std::string &msg) {
  size_t start = 0;
  while (start < msg.size()) {
    size_t nl = msg.find('\n', start);
    std::string line = msg.substr(start, nl - start);
    std::fprintf(stderr, "linkd-lld rewrite: error: %s\n", line.c_str());
    start = nl == std::string::npos ? msg.size() : nl + 1;
  }
  return 1;
}

struct Options {
  rewrite::RewriteSpec spec;
  std::vector<std::pair<Scope, std::string>> inputs;
  std::string outDir;
  std::string tableOut; // the rename table as JSON
  bool dryRun = false;
};

// Parses argv into `opts`; an error message, or empty.
std::string parse(int argc, char **argv, Options &opts) {
  std::optional<Scope> listing; // inside --runtime/--kernel/--input FILE...
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    if (!a.starts_with("--")) {
      if (!listing)
        return "unexpected argument '" + std::string(a) +
               "' (inputs follow --runtime, --kernel or --input)";
      opts.inputs.emplace_back(*listing, std::string(a));
      continue;
    }
    listing.reset();
    if (a == "--dry-run") {
      opts.dryRun = true;
      continue;
    }
    if (a == "--runtime" || a == "--kernel" || a == "--input") {
      listing = a == "--runtime"  ? Scope::Runtime
                : a == "--kernel" ? Scope::Kernel
                                  : Scope::Other;
      continue;
    }
    if (i + 1 >= argc)
      return "missing value for " + std::string(a);
    std::string v = argv[++i];
    if (a == "--match")
      opts.spec.match = v;
    else if (a == "--export-prefix")
      opts.spec.exportPrefix = v;
    else if (a == "--import-prefix")
      opts.spec.importPrefix = v;
    else if (a == "--internal-prefix")
      opts.spec.internalPrefix = v;
    else if (a == "--out-dir")
      opts.outDir = v;
    else if (a == "--table-out")
      opts.tableOut = v;
    else if (a == "--rename") {
      if (std::string err = rewrite::addRename(opts.spec, v); !err.empty())
        return "--rename: " + err;
    } else if (a == "--rename-file") {
      auto buf = llvm::MemoryBuffer::getFile(v, /*IsText=*/true);
      if (!buf)
        return v + ": cannot read rename file: " + buf.getError().message();
      std::string err =
          rewrite::parseRenameFile(opts.spec, (*buf)->getBuffer(), v);
      if (!err.empty())
        return err;
    } else
      return "unknown option " + std::string(a);
  }
  if (opts.inputs.empty())
    return "no inputs (--runtime, --kernel or --input)";
  if (opts.outDir.empty() && !opts.dryRun)
    return "--out-dir is required";
  return {};
}

// Writes `contents` to `path` through a temporary file in the same
// directory, so a reader never sees a partial file.
std::string writeAtomically(const std::string &path,
                            const std::string &contents) {
  std::string dir = llvm::sys::path::parent_path(path).str();
  if (!dir.empty() && llvm::sys::fs::create_directories(dir))
    return path + ": cannot create directory " + dir;
  // open(2), not mkstemp: glibc's mkstemp opens through an internal call
  // that the access recorder cannot see, and the link cache would not know
  // the renamed file as an output.
  // The pid makes the name unique among live processes (each output path
  // is written once per run); a leftover of a dead one is truncated.
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return path + ": cannot create a temporary file: " + std::strerror(errno);
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      std::string err = std::strerror(errno);
      close(fd);
      unlink(tmp.c_str());
      return path + ": write failed: " + err;
    }
    done += static_cast<size_t>(n);
  }
  fchmod(fd, 0644);
  if (close(fd) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    unlink(tmp.c_str());
    return path + ": cannot write: " + err;
  }
  return {};
}

bool samePath(const std::string &a, const std::string &b) {
  struct stat sa, sb;
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// One line per record; a fifth column says what an AMDGPU name is paired
// with (kernel and descriptor, managed variable and value, metadata note).
// Names --match selects that stay (AMDGPU loader slots) follow, old and
// new the same, the note saying why.
int printTable(const rewrite::RenameTable &table) {
  for (const rewrite::RenameRecord &r : table.records())
    std::printf("%s\t%s\t%s\t%s%s%s\n", r.oldName.c_str(), r.newName.c_str(),
                rewrite::scopeName(r.scope), r.file.c_str(),
                r.note.empty() ? "" : "\t", r.note.c_str());
  for (const rewrite::LeftAloneRecord &r : table.leftAlone())
    std::printf("%s\t%s\t%s\t%s\t%s\n", r.name.c_str(), r.name.c_str(),
                rewrite::scopeName(r.scope), r.file.c_str(), r.why().c_str());
  return 0;
}

// A weak name left alone is shared by every rewritten copy a code object
// links: said on every run, not only with --dry-run.
void warnWeakLeftAlone(const rewrite::RenameTable &table) {
  for (const rewrite::LeftAloneRecord &r : table.leftAlone())
    if (r.weak)
      std::fprintf(stderr,
                   "linkd: warning: %s: %s matches --match but is a weak "
                   "loader slot, left alone: copies of this runtime rewritten "
                   "with other prefixes and linked into one code object share "
                   "it; give each copy its own with --rename\n",
                   r.file.c_str(), r.name.c_str());
}

std::string jsonString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

// The table for a loader that must follow renamed names (docs/rewrite.md,
// "--table-out"): {"version":1,"renames":[{"old","new","scope","file",
// "note"}...]}, one record per line.
std::string tableJson(const rewrite::RenameTable &table) {
  std::string out = "{\"version\": 1, \"renames\": [";
  const char *sep = "\n";
  for (const rewrite::RenameRecord &r : table.records()) {
    out += sep;
    out += "  {\"old\": " + jsonString(r.oldName) +
           ", \"new\": " + jsonString(r.newName) +
           ", \"scope\": " + jsonString(rewrite::scopeName(r.scope)) +
           ", \"file\": " + jsonString(r.file) +
           ", \"note\": " + jsonString(r.note) + "}";
    sep = ",\n";
  }
  out += "\n], \"left_alone\": [";
  sep = "\n";
  for (const rewrite::LeftAloneRecord &r : table.leftAlone()) {
    out += sep;
    out += "  {\"name\": " + jsonString(r.name) +
           ", \"scope\": " + jsonString(rewrite::scopeName(r.scope)) +
           ", \"file\": " + jsonString(r.file) +
           ", \"weak\": " + (r.weak ? "true" : "false") +
           ", \"note\": " + jsonString(r.why()) + "}";
    sep = ",\n";
  }
  return out + "\n]}\n";
}

int writeOutputs(const Options &opts,
                 const std::vector<rewrite::RewriteOutput> &outputs) {
  for (const rewrite::RewriteOutput &out : outputs) {
    for (const rewrite::OutputFile &f : out.files) {
      std::string path = opts.outDir + "/" + f.relativePath;
      if (samePath(path, out.inputName))
        return failure(out.inputName + ": output would overwrite the input; "
                                       "choose another --out-dir");
    }
  }
  for (const rewrite::RewriteOutput &out : outputs)
    for (const rewrite::OutputFile &f : out.files)
      if (std::string err =
              writeAtomically(opts.outDir + "/" + f.relativePath, f.contents);
          !err.empty())
        return failure(err);
  return 0;
}

} // namespace

int cmdRewrite(int argc, char **argv) {
  if (argc == 3 && std::string_view(argv[2]) == "--help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  Options opts;
  if (std::string err = parse(argc, argv, opts); !err.empty())
    return usageError(err);
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> buffers;
  std::vector<rewrite::RewriteInput> inputs;
  for (const auto &[scope, path] : opts.inputs) {
    auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!buf)
      return failure(path + ": " + buf.getError().message());
    inputs.push_back({scope, (*buf)->getMemBufferRef()});
    buffers.push_back(std::move(*buf));
  }
  if (opts.dryRun) {
    auto table = rewrite::computeTable(opts.spec, inputs);
    if (!table)
      return failure(llvm::toString(table.takeError()));
    warnWeakLeftAlone(*table);
    if (!opts.tableOut.empty())
      if (std::string err = writeAtomically(opts.tableOut, tableJson(*table));
          !err.empty())
        return failure(err);
    return printTable(*table);
  }
  auto result = rewrite::rewrite(opts.spec, inputs,
                                 std::vector<bool>(inputs.size(), true),
                                 /*withRecords=*/!opts.tableOut.empty());
  if (!result)
    return failure(llvm::toString(result.takeError()));
  warnWeakLeftAlone(result->table);
  if (int rc = writeOutputs(opts, result->outputs))
    return rc;
  if (!opts.tableOut.empty())
    if (std::string err =
            writeAtomically(opts.tableOut, tableJson(result->table));
        !err.empty())
      return failure(err);
  return 0;
}

} // namespace linkd
