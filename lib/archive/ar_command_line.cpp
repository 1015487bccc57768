// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "archive/ar_command_line.h"

#include <climits>
#include <cstddef>
#include <string_view>

namespace linkd::archive {
namespace {

// StringRef::getAsInteger(10, int&): an optional '-', then decimal digits
// only, the whole string, within int's range.
bool parseInt(std::string_view s, int &out) {
  bool negative = !s.empty() && s.front() == '-';
  if (negative)
    s.remove_prefix(1);
  if (s.empty())
    return false;
  unsigned long long value = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return false;
    unsigned long long next = value * 10 + static_cast<unsigned>(c - '0');
    if (next / 10 != value)
      return false; // overflow
    value = next;
  }
  long long limit = negative ? -static_cast<long long>(INT_MIN) : INT_MAX;
  if (value > static_cast<unsigned long long>(limit))
    return false;
  out = negative ? static_cast<int>(-static_cast<long long>(value))
                 : static_cast<int>(value);
  return true;
}

// One argument of llvm-ar's first pass, maybe with a value: "--NAME VALUE",
// "--NAME=VALUE", and (llvm-ar strips an optional "--") the same without
// dashes.
struct FlagMatch {
  bool matched = false;
  std::string value;
  std::optional<std::string> error;
};

FlagMatch matchFlag(std::string_view name, const std::vector<std::string> &args,
                    size_t &i) {
  FlagMatch m;
  std::string_view arg = args[i];
  if (arg.starts_with("--"))
    arg.remove_prefix(2);
  if (arg == name) {
    m.matched = true;
    if (i + 1 == args.size())
      m.error = std::string(name) + " requires an argument";
    else
      m.value = args[++i];
  } else if (arg.size() > name.size() && arg.starts_with(name) &&
             arg[name.size()] == '=') {
    m.matched = true;
    m.value = std::string(arg.substr(name.size() + 1));
  }
  return m;
}

ArCommand stopWith(ArCommand cmd, ArStop stop, std::string error = {},
                   bool withUsage = false) {
  cmd.stop = stop;
  cmd.error = std::move(error);
  cmd.withUsage = withUsage;
  return cmd;
}

std::optional<ArFormat> formatNamed(std::string_view name) {
  if (name == "default")
    return ArFormat::Default;
  if (name == "gnu")
    return ArFormat::Gnu;
  if (name == "darwin")
    return ArFormat::Darwin;
  if (name == "bsd")
    return ArFormat::Bsd;
  if (name == "bigarchive")
    return ArFormat::BigArchive;
  if (name == "coff")
    return ArFormat::Coff;
  return std::nullopt;
}

// The state between the two passes.
struct FirstPass {
  std::string modifiers;
  std::vector<std::string> positional;
};

// Pass one. Returns false (with `cmd` stopped) when the run ends here.
bool readArguments(const std::vector<std::string> &args, ArCommand &cmd,
                   FirstPass &pass) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (arg == "--help" || arg == "-h") {
      cmd = stopWith(cmd, ArStop::Help);
      return false;
    }
    if (arg == "--version") {
      cmd = stopWith(cmd, ArStop::Version);
      return false;
    }
    if (arg == "--") {
      pass.positional.insert(pass.positional.end(), args.begin() + i + 1,
                             args.end());
      break;
    }
    if (arg.empty() || arg[0] != '-') {
      if (pass.modifiers.empty())
        pass.modifiers += arg;
      else
        pass.positional.push_back(arg);
      continue;
    }
    if (arg == "-M") {
      cmd.mri = true;
      continue;
    }
    if (arg == "--thin") {
      cmd.thin = true;
      continue;
    }
    // --format, --output, then the ignored --plugin and --rsp-quoting (read
    // before expansion); a missing value ends the run.
    bool consumed = false;
    for (std::string_view name :
         {"format", "output", "plugin", "rsp-quoting"}) {
      FlagMatch m = matchFlag(name, args, i);
      if (m.error) {
        cmd = stopWith(cmd, ArStop::Error, *m.error);
        return false;
      }
      if (!m.matched)
        continue;
      if (name == "format") {
        std::optional<ArFormat> f = formatNamed(m.value);
        if (!f) {
          cmd = stopWith(cmd, ArStop::Error, "Invalid format " + m.value);
          return false;
        }
        cmd.format = *f;
      } else if (name == "output") {
        cmd.outputDir = m.value;
      }
      consumed = true;
      break;
    }
    if (consumed)
      continue;
    if (arg.starts_with("-X")) {
      cmd = stopWith(cmd, ArStop::Error,
                     arg + " option not supported on non AIX OS");
      return false;
    }
    pass.modifiers += arg.substr(1);
  }
  return true;
}

// Pass two: the modifier letters. Returns false when the run ends here.
bool readModifiers(ArCommand &cmd, FirstPass &pass, unsigned &operations,
                   unsigned &positioning, bool &symtabOnly) {
  auto takePositional = [&](std::string &into) {
    if (pass.positional.empty())
      return false;
    into = pass.positional.front();
    pass.positional.erase(pass.positional.begin());
    return true;
  };
  auto operation = [&](ArOperation op) {
    ++operations;
    cmd.operation = op;
  };
  for (char c : pass.modifiers) {
    switch (c) {
    case 'd':
      operation(ArOperation::Delete);
      break;
    case 'm':
      operation(ArOperation::Move);
      break;
    case 'p':
      operation(ArOperation::Print);
      break;
    case 'q':
      operation(ArOperation::QuickAppend);
      break;
    case 'r':
      operation(ArOperation::ReplaceOrInsert);
      break;
    case 't':
      operation(ArOperation::DisplayTable);
      break;
    case 'x':
      operation(ArOperation::Extract);
      break;
    case 'c':
      cmd.create = true;
      break;
    case 'l':
      break;
    case 'o':
      cmd.originalDates = true;
      break;
    case 'O':
      cmd.memberOffsets = true;
      break;
    case 'P':
      cmd.compareFullPath = true;
      break;
    case 's':
      cmd.symtab = true;
      symtabOnly = true;
      break;
    case 'S':
      cmd.symtab = false;
      break;
    case 'u':
      cmd.onlyUpdate = true;
      break;
    case 'v':
      cmd.verbose = true;
      break;
    case 'a':
    case 'b':
    case 'i':
      if (!takePositional(cmd.relPos)) {
        cmd = stopWith(cmd, ArStop::Error,
                       "expected [relpos] for 'a', 'b', or 'i' modifier");
        return false;
      }
      (c == 'a' ? cmd.addAfter : cmd.addBefore) = true;
      ++positioning;
      break;
    case 'D':
      cmd.deterministic = true;
      break;
    case 'U':
      cmd.deterministic = false;
      break;
    case 'N': {
      std::string text;
      if (!takePositional(text)) {
        cmd = stopWith(cmd, ArStop::Error, "expected [count] for 'N' modifier",
                       true);
        return false;
      }
      if (!parseInt(text, cmd.count)) {
        cmd = stopWith(cmd, ArStop::Error,
                       "value for [count] must be numeric, got: " + text, true);
        return false;
      }
      if (cmd.count < 1) {
        cmd =
            stopWith(cmd, ArStop::Error,
                     "value for [count] must be positive, got: " + text, true);
        return false;
      }
      break;
    }
    case 'T':
      cmd.thin = true;
      break;
    case 'L':
      cmd.addLibrary = true;
      break;
    case 'V':
      cmd = stopWith(cmd, ArStop::Version);
      return false;
    case 'h':
      cmd = stopWith(cmd, ArStop::Help);
      return false;
    default:
      cmd = stopWith(cmd, ArStop::Error, std::string("unknown option ") + c,
                     true);
      return false;
    }
  }
  return true;
}

// The combination checks, in llvm-ar's order; "" if the command is valid.
std::string combinationError(const ArCommand &cmd, unsigned operations,
                             unsigned positioning) {
  using Op = ArOperation;
  Op op = cmd.operation;
  if (operations == 0)
    return "you must specify at least one of the operations";
  if (operations > 1)
    return "only one operation may be specified";
  if (positioning > 1)
    return "you may only specify one of 'a', 'b', and 'i' modifiers";
  if ((cmd.addAfter || cmd.addBefore) && op != Op::Move &&
      op != Op::ReplaceOrInsert)
    return "the 'a', 'b' and 'i' modifiers can only be specified with the "
           "'m' or 'r' operations";
  if (cmd.count && op != Op::Extract && op != Op::Delete)
    return "the 'N' modifier can only be specified with the 'x' or 'd' "
           "operations";
  if (cmd.originalDates && op != Op::Extract)
    return "the 'o' modifier is only applicable to the 'x' operation";
  if (cmd.onlyUpdate && op != Op::ReplaceOrInsert)
    return "the 'u' modifier is only applicable to the 'r' operation";
  if (cmd.addLibrary && op != Op::QuickAppend)
    return "the 'L' modifier is only applicable to the 'q' operation";
  if (!cmd.outputDir.empty() && op != Op::Extract)
    return "--output is only applicable to the 'x' operation";
  return {};
}

} // namespace

bool ArCommand::writesArchive() const {
  switch (operation) {
  case ArOperation::Delete:
  case ArOperation::Move:
  case ArOperation::QuickAppend:
  case ArOperation::ReplaceOrInsert:
  case ArOperation::CreateSymTab:
    return true;
  case ArOperation::None:
  case ArOperation::Print:
  case ArOperation::DisplayTable:
  case ArOperation::Extract:
    break;
  }
  return false;
}

RspQuotingChoice arResponseFileQuoting(const std::vector<std::string> &argv) {
  RspQuotingChoice choice;
  for (size_t i = 0; i < argv.size(); ++i) {
    FlagMatch m = matchFlag("rsp-quoting", argv, i);
    if (m.error) {
      choice.error = *m.error;
      return choice;
    }
    if (!m.matched)
      continue;
    if (m.value == "posix")
      choice.quoting = RspQuoting::Gnu;
    else if (m.value == "windows")
      choice.quoting = RspQuoting::Windows;
    else {
      choice.error = "Invalid response file quoting style " + m.value;
      return choice;
    }
  }
  return choice;
}

ArCommand parseArCommandLine(const std::vector<std::string> &args) {
  ArCommand cmd;
  FirstPass pass;
  if (!readArguments(args, cmd, pass))
    return cmd;
  if (cmd.mri) {
    if (!pass.positional.empty() || !pass.modifiers.empty())
      return stopWith(cmd, ArStop::Error, "cannot mix -M and other options",
                      true);
    return cmd;
  }
  unsigned operations = 0, positioning = 0;
  bool symtabOnly = false;
  if (!readModifiers(cmd, pass, operations, positioning, symtabOnly))
    return cmd;
  if (cmd.thin)
    cmd.compareFullPath = true;
  if (pass.positional.empty())
    return stopWith(cmd, ArStop::Error, "an archive name must be specified",
                    true);
  cmd.archive = pass.positional.front();
  cmd.members.assign(pass.positional.begin() + 1, pass.positional.end());
  if (operations == 0 && symtabOnly) {
    operations = 1;
    cmd.operation = ArOperation::CreateSymTab;
    if (!cmd.members.empty())
      return stopWith(cmd, ArStop::Error,
                      "the 's' operation takes only an archive as argument",
                      true);
  }
  if (std::string err = combinationError(cmd, operations, positioning);
      !err.empty())
    return stopWith(cmd, ArStop::Error, err, true);
  return cmd;
}

RanlibCommand parseRanlibCommandLine(const std::vector<std::string> &args) {
  RanlibCommand cmd;
  auto stop = [&](ArStop s, std::string error = {}) {
    cmd.stop = s;
    cmd.error = std::move(error);
    return cmd;
  };
  for (const std::string &arg : args) {
    if (arg == "--help" || arg == "-h")
      return stop(ArStop::Help);
    if (arg == "--version")
      return stop(ArStop::Version);
    if (arg.empty() || arg[0] != '-') {
      cmd.archives.push_back(arg);
      continue;
    }
    for (std::string_view rest = std::string_view(arg).substr(1); !rest.empty();
         rest.remove_prefix(1)) {
      switch (rest.front()) {
      case 'D':
        cmd.deterministic = true;
        break;
      case 'U':
        cmd.deterministic = false;
        break;
      case 'h':
        return stop(ArStop::Help);
      case 'V':
        return stop(ArStop::Version);
      case 'X':
        return stop(ArStop::Error, "-" + std::string(rest) +
                                       " option not supported on non AIX OS");
      default:
        return stop(ArStop::Error,
                    "Invalid option: '-" + std::string(rest) + "'");
      }
    }
  }
  if (cmd.archives.empty()) {
    stop(ArStop::Error, "an archive name must be specified");
    cmd.withUsage = true;
  }
  return cmd;
}

} // namespace linkd::archive
