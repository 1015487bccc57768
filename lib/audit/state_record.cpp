// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "audit/state_record.h"

#include "link/response_files.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <map>
#include <span>

namespace linkd::audit {

namespace {

std::string_view trimLeft(std::string_view s) {
  size_t i = s.find_first_not_of(' ');
  return i == std::string_view::npos ? std::string_view() : s.substr(i);
}

bool startsWithAny(std::string_view s,
                   std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes)
    if (s.starts_with(p))
      return true;
  return false;
}

// Column starts from the header line ("... Out     In      Symbol").
struct MapColumns {
  size_t out = 0, in = 0, symbol = 0;
  bool ok = false;
};

MapColumns headerColumns(std::string_view line) {
  MapColumns c;
  size_t out = line.find(" Out ");
  size_t in = line.find(" In ");
  size_t sym = line.find(" Symbol");
  if (out == std::string_view::npos || in == std::string_view::npos ||
      sym == std::string_view::npos || !(out < in && in < sym))
    return c;
  c.out = out + 1;
  c.in = in + 1;
  c.symbol = sym + 1;
  c.ok = true;
  return c;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

// An argument after which the command keeps exactly its own argv: it shows
// its command line (-###, a PDB, a reproduce tarball, lld-link's and the
// MinGW driver's verbose output), writes a map of the user's (LLD keeps
// only the last one) or something else into the map (--cref: its table
// goes to the map when there is one, else to stdout), links no image (help,
// version) or reports its own phases by name (--time-trace, /time).
bool keepsItsArgv(std::string_view a) {
  std::string l = lower(a);
  // A PDB holds the link's command line (and /Brepro's timestamp hashes
  // the PDB): our map option would change the outputs' bytes.
  if ((l.starts_with("/debug") || l.starts_with("-debug")) &&
      !l.ends_with(":none"))
    return true;
  for (std::string_view p :
       {"--pdb",       "-pdb",        "/pdb",       "-map",
        "--map",       "/map",        "-lldmap",    "/lldmap",
        "--print-map", "--reproduce", "-reproduce", "/reproduce",
        "/linkrepro",  "-linkrepro",  "-###",       "--time-trace",
        "-time-trace", "--cref",      "-cref",      "/verbose",
        "-verbose",    "--verbose"})
    if (l.starts_with(p))
      return true;
  for (std::string_view w :
       {"--help", "-help", "/help", "/?", "-?", "/??", "-??", "--version",
        "-version", "-v", "/time", "-time"})
    if (l == w)
      return true;
  return a == "-M" || a == "-V";
}

// lld-link's lib mode: "/lib" or "-lib" as the first argument, as LLD's
// COFF driver checks it (before response files are read).
bool isLibMode(const std::vector<std::string> &argv) {
  return argv.size() > 1 &&
         (lower(argv[1]) == "/lib" || lower(argv[1]) == "-lib");
}

bool strips(const std::vector<std::string> &args) {
  for (const std::string &a : args)
    if (a == "-s" || a == "--strip-all" || a == "-strip-all")
      return true;
  return false;
}

// --build-id[=STYLE] (the last one counts; gcc's driver passes it): the
// output can be matched to its record after `strip`.
bool hasBuildId(const std::vector<std::string> &args) {
  bool on = false;
  for (std::string_view a : args) {
    if (a.starts_with("--"))
      a.remove_prefix(1);
    if (a == "-build-id")
      on = true;
    else if (a.starts_with("-build-id="))
      on = a != "-build-id=none";
  }
  return on;
}

} // namespace

RecordPolicy recordPolicyFrom(const char *e) {
  if (!e || !*e)
    return RecordPolicy::PeImages;
  std::string v = lower(e);
  if (v == "0" || v == "off" || v == "no" || v == "false")
    return RecordPolicy::Off;
  return RecordPolicy::All;
}

std::string stateRecordMapOption(RecordPolicy policy, Flavor flavor,
                                 const std::vector<std::string> &argv,
                                 const std::string &cwd, bool reproduce,
                                 const std::string &mapPath) {
  if (policy == RecordPolicy::Off || reproduce ||
      (flavor != Flavor::Coff && flavor != Flavor::Elf))
    return {};
  // The options inside response files count as given; one left unread
  // (a FIFO, a device, too big) might hold anything.
  ExpandedArgs expanded = expandResponseFiles(argv, cwd);
  if (!expanded.unread.empty())
    return {};
  const std::vector<std::string> &args = expanded.args;
  std::span<const std::string> given(argv);
  // LLD decides on the first "-m" as given, and looks into response files
  // only when there is none.
  bool givenHasM = given.size() > 1 && std::find(given.begin() + 1, given.end(),
                                                 "-m") != given.end();
  bool mingw = flavor == Flavor::Elf && given.size() > 1 &&
               (givenHasM ? selectsMinGWDriver(given.subspan(1))
                          : selectsMinGWDriver(args));
  bool pe = (flavor == Flavor::Coff && !isLibMode(argv)) || mingw;
  bool elf = flavor == Flavor::Elf && !pe && policy == RecordPolicy::All &&
             (strips(args) || hasBuildId(args));
  if (!pe && !elf)
    return {};
  for (const std::string &a : args)
    if (keepsItsArgv(a))
      return {};
  return flavor == Flavor::Coff ? "/lldmap:" + mapPath : "-Map=" + mapPath;
}

bool environmentAddsToTheLink(
    const std::function<const char *(const char *)> &value) {
  for (const char *name : {"LLD_REPRODUCE", "LINK", "_LINK_"})
    if (const char *v = value(name); v && *v)
      return true;
  return false;
}

char stateSectionKind(std::string_view s) {
  if (startsWithAny(s, {".data.rel.ro", ".tls$ZZZ"}))
    return 0;
  if (s == ".tdata" || s == ".tbss" || s == ".tls" ||
      startsWithAny(s, {".tdata.", ".tbss.", ".tls$"}))
    return 'T';
  if (s == ".bss" || s == ".sbss" || startsWithAny(s, {".bss.", ".sbss."}))
    return 'B';
  if (s == ".data" || s == ".sdata" ||
      startsWithAny(s, {".data.", ".data$", ".sdata."}))
    return 'D';
  return 0;
}

bool isToolchainInput(std::string_view input) {
  if (input.empty() || input.starts_with("<"))
    return true;
  std::string_view file = input;
  if (size_t paren = file.find('('); paren != std::string_view::npos)
    file = file.substr(0, paren); // the archive
  if (size_t slash = file.rfind('/'); slash != std::string_view::npos)
    file = file.substr(slash + 1);
  static constexpr std::array<std::string_view, 14> kStartup = {
      "crt1.o", "Scrt1.o",     "rcrt1.o",   "gcrt1.o",  "crti.o",
      "crtn.o", "crt2.o",      "dllcrt2.o", "crtdll.o", "crtbegin",
      "crtend", "crtfastmath", "crtprec",   "crt0.o"};
  for (std::string_view s : kStartup)
    if (file.starts_with(s))
      return true;
  // LLD's COFF map names archive members without their archive: the
  // mingw-w64 CRT's members ("lib64_libmingw32_a-gccmain.o"), import
  // library members ("libkernel32s00282.o", "libmsvcrt_defs00055.o") and
  // libgcc's ("_chkstk_ms.o").
  if (startsWithAny(file, {"lib64_lib", "lib32_lib", "libarm64_lib",
                           "libarm32_lib", "_"}))
    return true;
  if (file.starts_with("lib") && file.ends_with(".o")) {
    std::string_view stem = file.substr(0, file.size() - 2);
    size_t digits = stem.find_last_not_of("0123456789");
    if (digits != std::string_view::npos && stem.size() - digits - 1 >= 5 &&
        (stem[digits] == 's' || stem.substr(0, digits + 1).ends_with("_defs")))
      return true;
  }
  return startsWithAny(
      file, {"libc.a", "libc_nonshared.a", "libgcc", "libmingw", "libmsvcr",
             "libucrt", "libkernel32", "libpthread", "libwinpthread", "libssp",
             "libmoldname", "libclang_rt.", "libunwind", "libatomic",
             "libuser32", "libadvapi32", "libshell32", "libntdll"});
}

std::string encodeStateRecord(const std::vector<RecordedSymbol> &symbols) {
  std::string out;
  for (const RecordedSymbol &s : symbols) {
    out += s.kind;
    if (s.binding)
      out += s.binding;
    out += '\t';
    out += s.name;
    out += '\t';
    out += s.input;
    if (s.binding) {
      out += '\t';
      out += s.source;
    }
    out += '\n';
  }
  return out;
}

bool decodeStateRecord(std::string_view text,
                       std::vector<RecordedSymbol> &symbols,
                       std::string *error) {
  size_t lineNo = 0;
  while (!text.empty()) {
    ++lineNo;
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text =
        nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    size_t t1 = line.find('\t');
    size_t t2 = t1 == std::string_view::npos ? t1 : line.find('\t', t1 + 1);
    bool bound = t1 == 2 && (line[1] == 'g' || line[1] == 'l');
    // With a binding, SOURCE follows INPUT after a tab; without one (records
    // of before), INPUT is the rest of the line.
    size_t t3 = bound && t2 != std::string_view::npos ? line.find('\t', t2 + 1)
                                                      : std::string_view::npos;
    if ((t1 != 1 && !bound) || t2 == std::string_view::npos ||
        (line[0] != 'D' && line[0] != 'B' && line[0] != 'T' &&
         line[0] != 'W') ||
        t2 == t1 + 1 || (bound && t3 == std::string_view::npos)) {
      if (error)
        *error = "malformed state record at line " + std::to_string(lineNo);
      return false;
    }
    RecordedSymbol r;
    r.kind = line[0];
    r.name = std::string(line.substr(t1 + 1, t2 - t1 - 1));
    r.input = std::string(
        line.substr(t2 + 1, t3 == std::string_view::npos ? t3 : t3 - t2 - 1));
    if (bound) {
      r.binding = line[1];
      r.source = std::string(line.substr(t3 + 1));
    }
    symbols.push_back(std::move(r));
  }
  return true;
}

namespace {

// The Size column of a map line: the numeric field before Align, in hex
// (ELF: VMA LMA Size Align; COFF: Address Size Align). 0 if unreadable.
uint64_t mapLineSize(std::string_view numbers) {
  std::vector<std::string_view> fields;
  while (!numbers.empty()) {
    size_t b = numbers.find_first_not_of(' ');
    if (b == std::string_view::npos)
      break;
    numbers.remove_prefix(b);
    size_t e = numbers.find(' ');
    fields.push_back(numbers.substr(0, e));
    numbers.remove_prefix(e == std::string_view::npos ? numbers.size() : e);
  }
  if (fields.size() < 2)
    return 0;
  std::string_view f = fields[fields.size() - 2];
  uint64_t v = 0;
  for (char c : f) {
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0 || v > (UINT64_MAX >> 4))
      return 0;
    v = v * 16 + static_cast<uint64_t>(d);
  }
  return v;
}

} // namespace

std::vector<RecordedSymbol> stateFromLldMap(std::string_view map) {
  std::vector<RecordedSymbol> out;
  std::map<std::string, uint64_t> writable; // bytes per input
  MapColumns cols;
  char kind = 0;       // of the output section
  char symbolKind = 0; // of the input section, where it says
  std::string input;
  while (!map.empty()) {
    size_t nl = map.find('\n');
    std::string_view line = map.substr(0, nl);
    map =
        nl == std::string_view::npos ? std::string_view() : map.substr(nl + 1);
    if (!cols.ok) {
      cols = headerColumns(line);
      continue;
    }
    if (line.size() <= cols.out || line[cols.out - 1] != ' ')
      continue;
    size_t at = line.find_first_not_of(' ', cols.out);
    if (at == std::string_view::npos)
      continue;
    std::string_view text = line.substr(at);
    if (at < cols.in) { // an output section
      kind = stateSectionKind(text);
      input.clear();
    } else if (at < cols.symbol) { // an input section
      size_t colon = text.rfind(":(");
      symbolKind = 0;
      input = std::string(
          colon == std::string_view::npos ? text : text.substr(0, colon));
      // MinGW places .bss in .data: the input section is more precise.
      if (kind && colon != std::string_view::npos && text.ends_with(")"))
        if (char k = stateSectionKind(
                text.substr(colon + 2, text.size() - colon - 3)))
          symbolKind = k;
      if (kind)
        if (uint64_t n = mapLineSize(line.substr(0, cols.out)))
          writable[input] += n;
    } else if (kind && !input.empty()) {
      std::string_view name = trimLeft(text);
      // Section symbols and import thunks are not state.
      if (!name.empty() && !name.starts_with(".") &&
          !name.starts_with("__declspec(dllimport) ") &&
          !name.starts_with("__imp_"))
        out.push_back(
            {symbolKind ? symbolKind : kind, std::string(name), input, 0, ""});
    }
  }
  for (const auto &[in, bytes] : writable)
    out.push_back({'W', std::to_string(bytes), in, 0, ""});
  return out;
}

} // namespace linkd::audit
