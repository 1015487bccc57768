// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The llvm-ar and llvm-ranlib command lines (LLVM 19), read without LLVM.
//
// The daemon reads a request's command line here to key and classify it
// (which archive an update reads, whether the operation writes anything), the
// client to see whether an MRI script must travel with the request, and the
// archiver child to run it: one reading, so they cannot disagree.
//
// llvm-ar reads its arguments in two passes and stops at the first thing that
// ends the run, so the parse does too. Pass one walks the arguments (after
// response-file expansion) left to right: --help/-h and --version end it;
// "--" makes the rest positional; the first word not starting with '-' is the
// operation-and-modifiers string and later ones are positional; -M, --thin,
// --format, --output, --plugin, --rsp-quoting and -X are options; any other
// "-xyz" adds "xyz" to the modifiers. Pass two reads the modifier letters in
// order (a/b/i take [relpos] and N takes [count] from the positionals, in the
// order the letters appear), then the archive name and the members, then
// checks the combination. What llvm-ar prints when it stops (an error, with
// the usage text or without, help, version) is described here and printed by
// the archiver (daemon/linkd-lld/archiver_main.cpp).
//
// llvm-ranlib reads flags (-D, -U, -h, -V, -X) and archive names, with no
// response files. (Later LLVMs accept GNU's -t; 19 rejects it.)
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace linkd::archive {

// The exit status of an archiver child that was asked to run an MRI script
// (which llvm-ar reads from stdin) when the client sent no stdin: the daemon
// reports an internal error and the client runs the command locally. llvm-ar
// itself only exits with 0 or 1.
constexpr int kNeedsStdinStatus = 121;

enum class ArOperation {
  None,
  Print,           // p
  Delete,          // d
  Move,            // m
  QuickAppend,     // q
  ReplaceOrInsert, // r
  DisplayTable,    // t
  Extract,         // x
  CreateSymTab     // s alone, and ranlib
};

enum class ArFormat { Default, Gnu, Coff, Bsd, Darwin, BigArchive };

// Why parsing ended before an operation could run.
enum class ArStop {
  None,    // run the command (or the MRI script)
  Help,    // print the help text, exit 0
  Version, // print LLVM's version, exit 0
  Error    // print `error`, plus the help text if `withUsage`; exit 1
};

struct ArCommand {
  ArStop stop = ArStop::None;
  std::string error;
  bool withUsage = false;

  bool mri = false; // -M: the script on stdin is the command
  ArOperation operation = ArOperation::None;
  bool addAfter = false;        // a
  bool addBefore = false;       // b, i
  bool create = false;          // c
  bool originalDates = false;   // o
  bool memberOffsets = false;   // O
  bool compareFullPath = false; // P (and thin archives)
  bool onlyUpdate = false;      // u
  bool verbose = false;         // v
  bool symtab = true;           // s / S
  bool deterministic = true;    // D / U
  bool thin = false;            // T, --thin
  bool addLibrary = false;      // L
  std::string relPos;           // a, b, i
  int count = 0;                // N, 1-based; 0 = not given
  ArFormat format = ArFormat::Default;
  std::string outputDir; // --output
  std::string archive;
  std::vector<std::string> members;

  // Operations that write the archive (the rest only read it).
  bool writesArchive() const;
};

enum class RspQuoting { Gnu, Windows };

struct RspQuotingChoice {
  RspQuoting quoting = RspQuoting::Gnu;
  std::optional<std::string> error; // llvm-ar fails with this before anything
};

// --rsp-quoting as llvm-ar finds it: in every argument, argv[0] included,
// before response files are expanded. Default: GNU quoting (Linux).
RspQuotingChoice arResponseFileQuoting(const std::vector<std::string> &argv);

// Parses llvm-ar's arguments after response-file expansion, argv[0] excluded.
// With `mri` set, the modifiers are not read (the script is the command).
ArCommand parseArCommandLine(const std::vector<std::string> &args);

struct RanlibCommand {
  ArStop stop = ArStop::None;
  std::string error;
  bool withUsage = false;
  bool deterministic = true;
  std::vector<std::string> archives; // each gets a symbol table, in order
};

// Parses llvm-ranlib's arguments, argv[0] excluded.
RanlibCommand parseRanlibCommandLine(const std::vector<std::string> &args);

} // namespace linkd::archive
