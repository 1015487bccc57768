// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/incremental_link.h"

#include "daemon/linkd-lld/access_recorder.h"
#include "daemon/linkd-lld/report_sender.h"

#include "incremental/elf_object.h"
#include "incremental/link_map.h"
#include "incremental/padding.h"
#include "incremental/patcher.h"
#include "incremental/ready_spare.h"
#include "link/flavor.h"
#include "util/files.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/Archive.h"
#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace linkd {
namespace {

using Clock = std::chrono::steady_clock;

// Options that make a link one the patch cannot follow: another output LLD
// writes (a map, a dependency file, a reproducer), a layout of the user's
// (linker scripts, section addresses), relocatable output, code LLD makes
// (LTO: a bitcode input is never an object the patch takes, and these
// options change its code), or sections it folds or compresses. Exact
// names, or prefixes ending in '*'. gcc's -plugin options are LLD's to
// ignore, and are not here.
constexpr const char *kNotIncremental[] = {"-M",
                                           "--print-map",
                                           "-Map*",
                                           "--Map*",
                                           "--dependency-file*",
                                           "--reproduce*",
                                           "-r",
                                           "--relocatable",
                                           "-T*",
                                           "--script*",
                                           "--emit-relocs",
                                           "-q",
                                           "--icf=all",
                                           "--icf=safe",
                                           "--icf",
                                           "--lto*",
                                           "-lto*",
                                           "--thinlto*",
                                           "-thinlto*",
                                           "--compress-debug-sections=z*",
                                           "--gdb-index",
                                           "--why-extract*",
                                           "--print-archive-stats*",
                                           "--time-trace*"};

bool matches(std::string_view arg, std::string_view pattern) {
  if (pattern.ends_with('*'))
    return arg.starts_with(pattern.substr(0, pattern.size() - 1));
  return arg == pattern;
}

// Why this link is not one to patch ("" if it may be), and its output.
std::string eligibility(const std::vector<std::string> &argv,
                        std::string &output) {
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string_view a = argv[i];
    if (a.starts_with("@"))
      return "a response file (" + std::string(a) + ")";
    for (const char *p : kNotIncremental)
      if (matches(a, p))
        return "option " + std::string(a);
    if ((a == "-o" || a == "--output") && i + 1 < argv.size())
      output = argv[++i];
    else if (a.starts_with("--output="))
      output = a.substr(9);
    else if (a.starts_with("-o") && a.size() > 2 && a != "-o")
      output = a.substr(2);
  }
  if (output.empty())
    return "no -o";
  if (output == "-")
    return "the output goes to stdout";
  for (const std::string &a : argv)
    if (a.find_first_of("\t\n") != std::string::npos)
      return "an argument with a tab or newline";
  return "";
}

std::string hexDigest(std::string_view text) {
  llvm::SHA256 h;
  h.update(llvm::StringRef(text.data(), text.size()));
  auto d = h.final();
  return llvm::toHex(llvm::ArrayRef<uint8_t>(d.data(), 16), true);
}

// A file's identity, as the manifest keeps it.
struct Identity {
  uint64_t size = 0, ino = 0, dev = 0;
  int64_t mtimeNs = 0, ctimeNs = 0;
  bool operator==(const Identity &) const = default;
};

std::optional<Identity> identityOf(const std::string &path) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0)
    return std::nullopt;
  Identity id;
  id.size = static_cast<uint64_t>(st.st_size);
  id.ino = st.st_ino;
  id.dev = st.st_dev;
  id.mtimeNs = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
  id.ctimeNs = st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
  return id;
}

// The time a file changed now would be given: the kernel stamps files
// with its coarse clock (a tick, 1 to 10 ms, behind the wall clock), or
// with a finer time at or after it (multigrain time stamps).
// The name of the ready spare of the output whose identity is `id`.
std::string readySpareOf(const Identity &id) {
  return incremental::readySpareName(id.ino, id.size, id.mtimeNs, id.ctimeNs);
}

int64_t fileClockNowNs() {
  struct timespec ts{};
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// Whether `id` may have changed at or after `startedNs` (fileClockNowNs):
// a change after it has a time at or past it. One in the same tick before
// it counts too (a build that links right after its last compile loses
// the state only when both fall in one tick).
bool changedSince(const Identity &id, int64_t startedNs) {
  return id.ctimeNs >= startedNs;
}

// How long before a link an input's last change must be for its identity
// to prove it unchanged since: a second write within one tick of the file
// system's clock leaves the same times. Times with nanoseconds (ext4, xfs,
// btrfs, tmpfs) tick with the kernel's coarse clock (at most 10 ms): 100
// ms. Whole seconds (FAT, some network file systems): two seconds.
int64_t racyWindowNs(const Identity &id) {
  bool fine = id.mtimeNs % 1000000000LL != 0 || id.ctimeNs % 1000000000LL != 0;
  return fine ? 100000000LL : 2000000000LL;
}

// What the last link was, and what it read.
struct Manifest {
  std::vector<std::string> head; // cwd, args, env, umask: compared whole
  bool quiet = false;            // LLD printed nothing
  int64_t recordedNs = 0;
  int64_t linkMicros = 0; // the full link's wall time (for time saved)
  struct Input {
    std::string path;
    Identity id;
    std::string copy; // objects/N for an object, "" for anything else
  };
  std::vector<Input> inputs;
  // The state's output and spare (see IncrementalLink::publish), as last
  // left: a file whose identity differs is not used.
  std::optional<Identity> output, spare;
  // The paths the last link looked for and did not find (a library in an
  // earlier -L directory): one that exists now changes the link.
  std::vector<std::string> probes;
};

std::vector<std::string> headOf(const v1::LinkRequest &req) {
  std::vector<std::string> head = {"cwd\t" + req.cwd(),
                                   "umask\t" + std::to_string(req.umask())};
  // gcc names a temporary file of its own in each link
  // (-plugin-opt=-fresolution=/tmp/ccXXXXXX.res), which LLD ignores.
  for (const std::string &a : req.argv())
    if (!llvm::StringRef(a).starts_with("-plugin-opt=-fresolution="))
      head.push_back("arg\t" + a);
  // The variables LLD reads (a build's PATH differs between make and a
  // shell, and LLD never looks at it).
  std::map<std::string, std::string> env;
  for (const auto &[k, v] : req.env())
    for (std::string_view name : flavorEnvironment(Flavor::Elf))
      if (k == name)
        env.emplace(k, v);
  for (const auto &[k, v] : env)
    head.push_back("env\t" + k + "=" + v);
  // The room the objects were given: another lays the output out anew.
  const v1::IncrementalPlan &plan = req.incremental_plan();
  if (plan.slack_percent() || plan.slack_bytes())
    head.push_back("slack\t" + std::to_string(plan.slack_percent()) + "%+" +
                   std::to_string(plan.slack_bytes()));
  return head;
}

std::string formatIdentity(const Identity &id) {
  return std::to_string(id.size) + "\t" + std::to_string(id.mtimeNs) + "\t" +
         std::to_string(id.ctimeNs) + "\t" + std::to_string(id.ino) + "\t" +
         std::to_string(id.dev);
}

bool parseIdentity(llvm::ArrayRef<llvm::StringRef> f, Identity &id) {
  return f.size() == 5 && !f[0].getAsInteger(10, id.size) &&
         !f[1].getAsInteger(10, id.mtimeNs) &&
         !f[2].getAsInteger(10, id.ctimeNs) && !f[3].getAsInteger(10, id.ino) &&
         !f[4].getAsInteger(10, id.dev);
}

std::string formatManifest(const Manifest &m) {
  std::string out = "linkd-incremental 2\n";
  for (const std::string &h : m.head)
    out += h + "\n";
  out += "quiet\t" + std::string(m.quiet ? "1" : "0") + "\n";
  out += "recorded\t" + std::to_string(m.recordedNs) + "\n";
  out += "link_micros\t" + std::to_string(m.linkMicros) + "\n";
  for (const Manifest::Input &in : m.inputs)
    out += "input\t" + in.path + "\t" + formatIdentity(in.id) + "\t" +
           (in.copy.empty() ? "-" : in.copy) + "\n";
  for (const std::string &p : m.probes)
    out += "probe\t" + p + "\n";
  if (m.output)
    out += "output\t" + formatIdentity(*m.output) + "\n";
  if (m.spare)
    out += "spare\t" + formatIdentity(*m.spare) + "\n";
  return out;
}

std::optional<Manifest> parseManifest(const std::string &text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != "linkd-incremental 2")
    return std::nullopt;
  Manifest m;
  while (std::getline(in, line)) {
    llvm::SmallVector<llvm::StringRef, 8> f;
    llvm::StringRef(line).split(f, '\t');
    if (f.empty())
      return std::nullopt;
    if (f[0] == "quiet" && f.size() == 2) {
      m.quiet = f[1] == "1";
    } else if (f[0] == "recorded" && f.size() == 2) {
      if (f[1].getAsInteger(10, m.recordedNs))
        return std::nullopt;
    } else if (f[0] == "link_micros" && f.size() == 2) {
      if (f[1].getAsInteger(10, m.linkMicros))
        return std::nullopt;
    } else if (f[0] == "input" && f.size() == 8) {
      Manifest::Input i;
      i.path = f[1].str();
      if (!parseIdentity(llvm::ArrayRef(f).slice(2, 5), i.id))
        return std::nullopt;
      i.copy = f[7] == "-" ? "" : f[7].str();
      m.inputs.push_back(std::move(i));
    } else if (f[0] == "probe" && f.size() == 2) {
      m.probes.push_back(f[1].str());
    } else if ((f[0] == "output" || f[0] == "spare") && f.size() == 6) {
      Identity id;
      if (!parseIdentity(llvm::ArrayRef(f).slice(1), id))
        return std::nullopt;
      (f[0] == "output" ? m.output : m.spare) = id;
    } else {
      m.head.push_back(line);
    }
  }
  return m;
}

// The inputs LLD's --dependency-file names: "OUT: \" then one escaped path
// per line ("  a\ b.o \"), until the line without the backslash.
std::vector<std::string> parseDependencies(const std::string &text) {
  std::vector<std::string> deps;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || !llvm::StringRef(line).ends_with(" \\"))
    return deps;
  while (std::getline(in, line)) {
    llvm::StringRef l = llvm::StringRef(line).ltrim(' ');
    bool more = l.ends_with(" \\");
    if (more)
      l = l.drop_back(2);
    std::string path;
    for (size_t i = 0; i < l.size(); ++i) {
      if (l[i] == '\\' && i + 1 < l.size()) {
        path += l[++i];
      } else if (l[i] == '$' && i + 1 < l.size() && l[i + 1] == '$') {
        path += '$';
        ++i;
      } else {
        path += l[i];
      }
    }
    if (!path.empty())
      deps.push_back(path);
    if (!more)
      break;
  }
  return deps;
}

bool isX8664Object(const std::string &bytes) {
  return bytes.size() >= 20 &&
         bytes.compare(0, 4,
                       "\x7f"
                       "ELF") == 0 &&
         bytes[4] == llvm::ELF::ELFCLASS64 &&
         bytes[5] == llvm::ELF::ELFDATA2LSB &&
         static_cast<uint8_t>(bytes[16]) == llvm::ELF::ET_REL &&
         static_cast<uint8_t>(bytes[18]) == llvm::ELF::EM_X86_64;
}

// Writes `data` to `path` through a temporary beside it and a rename, with
// the mode LLD gives an output (0777 under the umask). The temporary has
// LLD's own form (`<out>.tmp` and seven hex digits, store/temp_journal.h):
// journaled before it is created, so a link killed in between leaves no
// litter the daemon does not remove.
std::string lldTemporaryName(const std::string &path) {
  char digits[8];
  std::snprintf(digits, sizeof(digits), "%07x",
                static_cast<unsigned>(std::random_device{}()) & 0xfffffff);
  return path + ".tmp" + digits;
}

// A new temporary of that form beside `path`, open for writing (its name
// in `tmp`), or -1 with errno set.
int createLldTemporary(const std::string &path, std::string &tmp) {
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 16; ++attempt) {
    tmp = lldTemporaryName(path);
    fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0777);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  return fd;
}

std::string writeOutput(const std::string &path, llvm::StringRef data) {
  std::string tmp;
  int fd = createLldTemporary(path, tmp);
  if (fd < 0)
    return path + ": " + std::strerror(errno);
  bool ok = writeAll(fd, std::string_view(data.data(), data.size()));
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    std::string e = path + ": " + std::strerror(errno);
    unlink(tmp.c_str());
    return e;
  }
  return "";
}

// Writes each edit's bytes at its offset of `fd`; "" or why not.
std::string writeEdits(int fd, const std::vector<incremental::Edit> &edits) {
  for (const incremental::Edit &e : edits)
    for (size_t done = 0; done < e.bytes.size();) {
      ssize_t n = pwrite(fd, e.bytes.data() + done, e.bytes.size() - done,
                         static_cast<off_t>(e.offset + done));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return std::strerror(n < 0 ? errno : EIO);
      done += static_cast<size_t>(n);
    }
  return "";
}

// The lines of LLD's map `keep` takes (given what follows the address
// columns), with the header and the output sections' lines: a big
// program's map is tens of MB of lines for its archives' members and
// symbols, and a patch reads the lines of the files it replaces.
std::string filterMap(llvm::StringRef map,
                      llvm::function_ref<bool(llvm::StringRef)> keep) {
  std::string kept;
  constexpr size_t kHeader = 16 + 1 + 16 + 1 + 8 + 1 + 5 + 1; // link_map.h
  for (llvm::StringRef text = map; !text.empty();) {
    auto [line, rest] = text.split('\n');
    text = rest;
    llvm::StringRef what = line.size() > kHeader ? line.substr(kHeader) : "";
    if (kept.empty() || (!what.empty() && what[0] != ' ') || keep(what))
      kept.append(line.data(), line.size()).push_back('\n');
  }
  return kept;
}

// The edits that made the state's output from its spare, as kept in
// `spare.edits`: each an offset and a length (8 bytes each, little
// endian) and the bytes; nullopt if malformed or outside a file of `size`.
std::string formatEdits(const std::vector<incremental::Edit> &edits) {
  std::string out = "linkd-edits 1\n";
  for (const incremental::Edit &e : edits) {
    char head[16];
    llvm::support::endian::write64le(head, e.offset);
    llvm::support::endian::write64le(head + 8, e.bytes.size());
    out.append(head, sizeof(head)).append(e.bytes);
  }
  return out;
}

std::optional<std::vector<incremental::Edit>> parseEdits(llvm::StringRef text,
                                                         uint64_t size) {
  if (!text.consume_front("linkd-edits 1\n"))
    return std::nullopt;
  std::vector<incremental::Edit> edits;
  while (!text.empty()) {
    if (text.size() < 16)
      return std::nullopt;
    uint64_t offset = llvm::support::endian::read64le(text.data());
    uint64_t length = llvm::support::endian::read64le(text.data() + 8);
    text = text.drop_front(16);
    if (length > text.size() || offset > size || length > size - offset)
      return std::nullopt;
    edits.push_back({offset, text.take_front(length).str()});
    text = text.drop_front(length);
  }
  return edits;
}

// How many outputs keep a state: each holds a copy of its output and
// objects. The least recently linked go first; one another link holds
// (its lock) stays.
constexpr size_t kMaxStates = 16;

void pruneStates(const std::string &base, const std::string &keep) {
  DIR *d = opendir(base.c_str());
  if (!d)
    return;
  std::vector<std::pair<int64_t, std::string>> states;
  while (dirent *e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() != 32 ||
        name.find_first_not_of("0123456789abcdef") != std::string::npos)
      continue;
    std::string path = base + "/" + name;
    std::optional<Identity> id = identityOf(path + "/lock");
    if (path != keep)
      states.emplace_back(id ? id->mtimeNs : 0, path);
  }
  closedir(d);
  if (states.size() < kMaxStates)
    return;
  std::sort(states.begin(), states.end());
  for (size_t i = 0; i + kMaxStates - 1 < states.size(); ++i) {
    // Neither a link nor a full link's process still preparing the next
    // patch (prepareNextPatch) may be using it.
    UniqueFd fd(open((states[i].second + "/lock").c_str(), O_RDWR | O_CLOEXEC));
    UniqueFd prep(
        open((states[i].second + "/prepare.lock").c_str(), O_RDWR | O_CLOEXEC));
    if (fd.valid() && flock(fd.get(), LOCK_EX | LOCK_NB) == 0 &&
        (!prep.valid() || flock(prep.get(), LOCK_EX | LOCK_NB) == 0))
      removeTree(states[i].second);
  }
}

// An object the relink replaces: a plain object, or a member of an archive
// (`lib.a(member.o)`, as LLD's map names it).
struct Change {
  std::string name;    // as the map names it
  std::string before;  // what the last link read
  std::string after;   // what this link reads
  std::string copy;    // objects/N.o for a plain object, "" for a member
  std::string mapFile; // the state's map lines of its file
};

bool isArchive(const char *head, size_t n) {
  return n >= 8 && std::memcmp(head, "!<arch>\n", 8) == 0;
}

class IncrementalLink {
public:
  IncrementalLink(const v1::LinkRequest &req, const LldInvocation &inv)
      : req(req), inv(inv), plan(req.incremental_plan()) {}

  [[noreturn]] void run();

private:
  // The changed objects (path, copy) or why a patch cannot be tried.
  std::string changedObjects(std::vector<Change> &changed);
  // The changed members of archive input `in` the last link extracted, or
  // why the archive's change needs a full link.
  std::string changedMembers(const Manifest::Input &in,
                             std::vector<Change> &changed);
  // The patched output, or why not.
  std::string patch(const std::vector<Change> &changed,
                    std::vector<incremental::Edit> &edits);
  // The link's objects but changed[k], as the output holds them (the
  // changed ones before k in their new version): what a patch of
  // changed[k] reads when a global of it moved. "" or why not.
  std::string otherInputs(const std::vector<Change> &changed, size_t k,
                          const std::set<std::string> &names,
                          std::vector<incremental::OtherInput> &out);
  // The state's second name of archive `path` (its last version), and its
  // map lines, as `copy`; "" or why not.
  std::string keepArchive(const std::string &path, const std::string &copy,
                          llvm::StringRef map = "");
  // Writes the patched output and turns the state's output and spare
  // around (`kept`: the state matches it); "" or why nothing was written.
  std::string publish(const std::vector<incremental::Edit> &edits, bool &kept);
  // The spare with its edits and `edits` over it, if nothing else can see
  // it change.
  bool writeSpare(const std::vector<incremental::Edit> &edits);
  // LLD's full link; keeps the state when it succeeds.
  int fullLink();
  // With the plan's slack: the objects LLD reads padded to slots.
  void padObjects();
  // The same of archive input `abs` (`bytes`, `name` on the command line):
  // its object members padded, in an archive LLD reads instead.
  void padArchiveInput(const std::string &abs, const std::string &name,
                       llvm::StringRef bytes, bool sameLink, const Identity &id,
                       const incremental::SlackPolicy &slack);
  std::string keepState(bool quiet);
  // Whether the last link's copy `copy` of input `path` (any spelling of
  // it), now `now`, is still its content: the same file, unchanged since
  // that link (its identity, and not changed just before it).
  bool copyStillHolds(const std::string &path, const std::string &copy,
                      const Identity &now) const;
  void result(const std::string &line);
  void prepareNextPatch(int rc);
  [[noreturn]] void finish(int rc);

  int64_t micros() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() -
                                                                 start)
        .count();
  }

  const v1::LinkRequest &req;
  const LldInvocation &inv;
  const v1::IncrementalPlan &plan;
  std::string output, dir;
  Clock::time_point start = Clock::now();
  std::optional<Manifest> last; // the state's manifest, when readable
  std::string patchSummary;
  // The time each step of a patch took (its log line's `phases`), in
  // milliseconds: step:ms,... and the time the other objects took to read.
  std::string phases;
  int64_t phaseMark = 0, othersMicros = 0;
  // The state's output is a second name of the output (keepState), so a
  // spare can become the output by a rename.
  bool secondName = false;
  bool prepareNext = false; // a full link that kept a state: prepareNextPatch
  bool readySpare = false;  // the spare publish() wrote was a ready one
  void phase(const char *step) {
    int64_t now = micros();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s:%.1f", phases.empty() ? "" : ",", step,
                  static_cast<double>(now - phaseMark) / 1000);
    phases += buf;
    phaseMark = now;
  }
  int lock = -1; // the state's lock, held from run() to finish()
  // When this link began to read its inputs (the file clock): an input
  // changed after it may not be what the link read, and no state is kept.
  int64_t startedNs = fileClockNowNs();
  std::vector<std::string> changedArchives; // inputs whose members changed
  std::unique_ptr<llvm::MemoryBuffer> lastOutput; // the state's, mapped
  std::vector<uint8_t> chunkHashes; // behind the patched output's build-id
  // Per archive of the project that changed: how its state's copy becomes
  // the new version's (changedMembers, then keepArchive).
  struct ArchivePlan {
    std::vector<incremental::Edit> edits;       // over the copy, in place
    std::map<std::string, std::string> digests; // by member: the new version's
    bool inPlace = true; // every changed member kept its padded size
  };
  std::map<std::string, ArchivePlan> archivePlans;
  std::deque<incremental::LinkMap> otherMaps; // behind otherInputs()
  std::deque<std::unique_ptr<llvm::MemoryBuffer>> otherBuffers; // the same
  // How publish() wrote the output: over the spare, as a copy of the
  // state's output, or a copy of the state's own (another file system).
  const char *written = "copy";
  int64_t lldMicros = 0; // a full link: LLD's part of micros()
  std::string stateNote; // a full link: the state it left, or why none
  // The full link's padded objects: absolute path -> the state's file LLD
  // read in its place (padded/N.o, or the last link's objects/N.padded.o).
  std::map<std::string, std::string> padded;
};

// `path` (as the link names it) absolute, without "." and ".." parts.
std::string absoluteInput(const std::string &cwd, const std::string &path) {
  llvm::SmallString<256> abs(path);
  if (!llvm::sys::path::is_absolute(abs))
    abs = cwd + "/" + path;
  llvm::sys::path::remove_dots(abs, /*remove_dot_dot=*/true);
  return std::string(abs);
}

// A file of the system's (the C runtime's crt*.o, its libraries): never
// edited between links, kept by identity and never padded.
bool isSystemFile(llvm::StringRef abs) {
  return abs.starts_with("/usr/") || abs.starts_with("/lib");
}

// The state's padded copy of the object at `abs`: what LLD read.
std::string paddedCopyName(const std::string &abs) {
  return "objects/" + hexDigest(abs) + ".padded.o";
}

void IncrementalLink::result(const std::string &line) {
  if (!plan.result_file().empty())
    std::ofstream(plan.result_file()) << line << "\n";
}

// After a full link that kept its state, the client has its answer (the
// report, as _exit sends it) and this process goes on at the lowest
// priority, without the state's lock, to prepare the next patch: the
// chunk hashes behind the output's build-id, and a copy of the output to
// write into (incremental/ready_spare.h), both named after the output's
// identity. A link that comes first finds neither, and does without.
void IncrementalLink::prepareNextPatch(int rc) {
  llvm::outs().flush();
  llvm::errs().flush();
  // The state is free before the answer, as finish() frees it: the next
  // link may come at once, and this process is about to run last.
  close(lock);
  lock = -1;
  endLinkRecording(rc);
  if (!child_report::sendOnExit(rc))
    return; // no report channel: the daemon waits for the exit
  child_report::yieldTheExit();
  // Its disk writes (the copy, the syncs) behind everyone's too: the idle
  // class (ioprio_set has no glibc wrapper; failure leaves the default).
  constexpr int kWhoProcess = 1, kClassIdle = 3, kClassShift = 13;
  syscall(SYS_ioprio_set, kWhoProcess, 0, kClassIdle << kClassShift);
  // What the link freed goes back to the system now, not at the exit: a
  // big program's link held gigabytes, and this may take a while.
  malloc_trim(0);
  // Whatever is printed now reaches no one.
  signal(SIGPIPE, SIG_IGN);
  if (int null = open("/dev/null", O_WRONLY | O_CLOEXEC); null >= 0) {
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    close(null);
  }
  // One at a time per state, and never under a state being removed
  // (pruneStates).
  UniqueFd prep(open((dir + "/prepare.lock").c_str(),
                     O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!prep.valid() || flock(prep.get(), LOCK_EX) != 0 ||
      !identityOf(dir + "/lock"))
    return;
  std::string out = dir + "/output", chunks;
  UniqueFd fd(open(out.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st{};
  if (fd.valid() && fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
    auto buffer = llvm::MemoryBuffer::getOpenFile(
        fd.get(), out, static_cast<uint64_t>(st.st_size), false);
    std::vector<uint8_t> hashes;
    if (buffer)
      hashes = incremental::buildIdChunkHashes((*buffer)->getBuffer());
    chunks = dir + "/" +
             incremental::readyChunksName(incremental::readySpareName(st));
    if (hashes.empty() ||
        !writeOutput(chunks, llvm::toStringRef(llvm::ArrayRef(hashes))).empty())
      chunks.clear();
  }
  fd.reset();
  bool outdated = false;
  if (!incremental::makeReadySpare(dir, outdated).empty() && !chunks.empty())
    unlink(chunks.c_str());
}

void IncrementalLink::finish(int rc) {
  llvm::outs().flush();
  llvm::errs().flush();
  // The next link of this output may come as soon as the daemon has this
  // one's report, before this process is gone: the state is free now.
  if (lock >= 0)
    close(lock);
  _exit(rc);
}

// `object` padded to the slots of `padded`, its last version as LLD read
// it (the state's padded copy).
llvm::Expected<std::string> padLike(llvm::MemoryBufferRef object,
                                    llvm::StringRef padded) {
  auto slots = incremental::slotsOf(
      llvm::MemoryBufferRef(padded, object.getBufferIdentifier()), {});
  if (!slots)
    return slots.takeError();
  return incremental::padObject(object, *slots);
}

// The fallback reason ("kind\tmessage") of a new version that does not fit
// its last version's slots.
std::string unpaddedReason(const std::string &why) {
  // A record more or fewer in .eh_frame, or a CIE resized: a function
  // came or went (eh_frame_room.h).
  bool records = why.find("section .eh_frame has") != std::string::npos ||
                 why.find("section .eh_frame CIE") != std::string::npos;
  return (why.find("outgrew its slot") != std::string::npos
              ? "section_outgrew\t"
          : records ? "eh_frame_changed\t"
                    : "sections_changed\t") +
         why;
}

std::string IncrementalLink::changedObjects(std::vector<Change> &changed) {
  Result<std::string> text = readFile(dir + "/manifest");
  if (!text)
    return "new_output\tno state for this output yet";
  last = parseManifest(*text);
  std::optional<Manifest> &m = last;
  if (!m)
    return "unreadable\tthe state's manifest is unreadable";
  if (m->head != headOf(req))
    return "argv\tthe command line, environment or umask changed";
  if (!m->quiet)
    return "diagnostics\tthe last link printed diagnostics (a patch would "
           "not repeat them)";
  struct stat st{};
  for (const std::string &p : m->probes)
    if (lstat(p.c_str(), &st) == 0)
      return "input_changed\t" + p +
             " exists now (the last link looked for it and found nothing)";
  for (const Manifest::Input &in : m->inputs) {
    std::optional<Identity> now = identityOf(in.path);
    if (!now)
      return "input_changed\t" + in.path + " is gone";
    // Written just before the manifest: the same identity may hide a
    // second write within one tick of the file system's clock.
    bool racy = in.id.ctimeNs + racyWindowNs(in.id) > m->recordedNs;
    if (*now == in.id && !racy)
      continue;
    if (in.copy.starts_with("archives/")) {
      if (std::string why = changedMembers(in, changed); !why.empty())
        return why;
      changedArchives.push_back(in.path);
      continue;
    }
    if (in.copy.empty())
      return "input_changed\t" + in.path + " changed (not an object)";
    Result<std::string> before = readFile(dir + "/" + in.copy);
    Result<std::string> after = readFile(in.path);
    if (!before || !after)
      return "unreadable\t" + (before ? after.error() : before.error());
    // A padded object's new version, padded to the slots the last one had
    // (its sections' sizes in the state's copy): what LLD would read.
    if (in.copy.ends_with(".padded.o")) {
      auto slots = incremental::slotsOf(llvm::MemoryBufferRef(*before, in.path),
                                        incremental::SlackPolicy{});
      if (!slots)
        return "unreadable\tthe state's copy of " + in.path + ": " +
               toString(slots.takeError());
      auto p = incremental::padObject(llvm::MemoryBufferRef(*after, in.path),
                                      *slots);
      if (!p)
        return unpaddedReason(toString(p.takeError()));
      *after = std::move(*p);
    }
    if (*before != *after)
      changed.push_back(Change{in.path, std::move(*before), std::move(*after),
                               in.copy, dir + "/map"});
  }
  return "";
}

// The members of an archive, by name and content; why not, if it is not
// one the patch follows (thin, unreadable, two members of one name).
std::string
archiveMembers(llvm::StringRef bytes, const std::string &name,
               std::vector<std::pair<std::string, llvm::StringRef>> &members) {
  auto archive =
      llvm::object::Archive::create(llvm::MemoryBufferRef(bytes, name));
  if (!archive)
    return name + ": " + toString(archive.takeError());
  if ((*archive)->isThin())
    return name + " is a thin archive";
  llvm::Error err = llvm::Error::success();
  std::set<std::string> seen;
  for (const llvm::object::Archive::Child &c : (*archive)->children(err)) {
    auto memberName = c.getName();
    auto data = c.getBuffer();
    if (!memberName || !data) {
      llvm::consumeError(memberName.takeError());
      llvm::consumeError(data.takeError());
      return name + ": a member is unreadable";
    }
    if (!seen.insert(memberName->str()).second)
      return name + " has two members named " + memberName->str();
    members.emplace_back(memberName->str(), *data);
  }
  if (err)
    return name + ": " + toString(std::move(err));
  return "";
}

// What a member would bring to the link: its global symbols, defined and
// undefined (one taken for a symbol the link dropped all sections of has
// no line in the map; a new reference of its own could take another).
std::optional<std::set<std::string>> globalSymbols(llvm::StringRef bytes) {
  llvm::MemoryBufferRef ref(bytes, "member");
  if (!incremental::notAnX8664Object(ref).empty())
    return std::nullopt;
  auto o = incremental::readElfObject(ref);
  if (!o) {
    llvm::consumeError(o.takeError());
    return std::nullopt;
  }
  std::set<std::string> defs;
  for (const auto &sym : o->symbols)
    if (sym.getBinding() != llvm::ELF::STB_LOCAL)
      defs.insert(incremental::symbolName(*o, sym) + "\t" +
                  std::to_string(sym.st_info) + "\t" +
                  (sym.st_shndx == llvm::ELF::SHN_UNDEF ? "U" : "D"));
  return defs;
}

// What a padded archive copy keeps beside it (`<copy>.digests`): each
// member's name and a digest of its bytes before padding, so that a
// member the user's archive still has as it was is known without padding
// it again.
using MemberDigests = std::map<std::string, std::string>;

// xxh3's 128 bits: it tells the user's own members apart between two
// versions of the user's own archive (no other party's bytes), at four
// times BLAKE3's speed (a patch hashes every member of a 20 MB libgit.a:
// 1.2 ms instead of 4.5).
std::string memberDigest(llvm::StringRef data) {
  llvm::XXH128_hash_t h = llvm::xxh3_128bits(llvm::arrayRefFromStringRef(data));
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx",
                static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return hex;
}

MemberDigests readDigests(const std::string &file) {
  MemberDigests d;
  Result<std::string> text = readFile(file);
  for (llvm::StringRef rest = text ? llvm::StringRef(*text) : "";
       !rest.empty();) {
    auto [line, next] = rest.split('\n');
    rest = next;
    auto [name, digest] = line.rsplit('\t');
    if (!name.empty() && digest.size() == 32)
      d[name.str()] = digest.str();
  }
  return d;
}

std::string formatDigests(const MemberDigests &d) {
  std::string out;
  for (const auto &[name, digest] : d)
    out += name + "\t" + digest + "\n";
  return out;
}

// Archive `bytes` (named `name`) with each x86-64 object member padded:
// to the slots of its namesake in `slotsFrom` (the archive's last padded
// copy, whose members had the digests `was`) while it fits them, else to
// `slack`'s; a member whose digest is unchanged is taken from the copy as
// it is. Members keep their names and order; the symbol table is written
// again (the members' offsets). `now` gets the members' digests.
llvm::Expected<std::string>
padArchive(llvm::StringRef bytes, const std::string &name,
           llvm::StringRef slotsFrom, const MemberDigests &was,
           const incremental::SlackPolicy &slack, MemberDigests &now) {
  std::vector<std::pair<std::string, llvm::StringRef>> members, last;
  if (std::string why = archiveMembers(bytes, name, members); !why.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), why);
  if (!slotsFrom.empty() && !archiveMembers(slotsFrom, name, last).empty())
    last.clear();
  std::map<llvm::StringRef, llvm::StringRef> lastByName(last.begin(),
                                                        last.end());
  std::deque<std::string> padded; // behind the members' buffers
  std::vector<llvm::NewArchiveMember> out;
  now.clear();
  for (const auto &[member, data] : members) {
    llvm::StringRef bytesNow = data;
    std::string digest = memberDigest(data);
    auto before = lastByName.find(member);
    auto known = was.find(member);
    if (before != lastByName.end() && known != was.end() &&
        known->second == digest) {
      bytesNow = before->second; // as padded the last time
    } else if (isX8664Object(data.take_front(20).str())) {
      std::string label = name + "(" + member + ")"; // for its messages
      llvm::MemoryBufferRef ref(data, label);
      std::optional<std::string> p;
      if (before != lastByName.end()) {
        auto q = padLike(ref, before->second);
        if (q)
          p = std::move(*q);
        else
          llvm::consumeError(q.takeError()); // it outgrew them: new room
      }
      if (!p) {
        auto slots = incremental::slotsOf(ref, slack);
        if (!slots)
          return slots.takeError();
        auto q = incremental::padObject(ref, *slots);
        if (!q)
          return q.takeError();
        p = std::move(*q);
      }
      bytesNow = padded.emplace_back(std::move(*p));
    }
    now[member] = digest;
    llvm::NewArchiveMember m(llvm::MemoryBufferRef(bytesNow, member));
    m.MemberName = member;
    out.push_back(std::move(m));
  }
  auto buf = llvm::writeArchiveToBuffer(
      out, llvm::SymtabWritingMode::NormalSymtab, llvm::object::Archive::K_GNU,
      /*Deterministic=*/true, /*Thin=*/false);
  if (!buf)
    return buf.takeError();
  return (*buf)->getBuffer().str();
}

// The edits that turn the padded copy `was` of archive `name` into `user`
// with its members padded to the copy's slots, when every member whose
// digest changed keeps its padded size (the archive's layout and symbol
// table stay); nullopt otherwise. `digests` gets the members' digests.
std::optional<std::vector<incremental::Edit>>
samePlaceEdits(llvm::StringRef user, llvm::StringRef was,
               const std::string &name, const MemberDigests &before,
               MemberDigests &digests) {
  std::vector<std::pair<std::string, llvm::StringRef>> now, last;
  if (!archiveMembers(user, name, now).empty() ||
      !archiveMembers(was, name, last).empty() || now.size() != last.size())
    return std::nullopt;
  std::vector<incremental::Edit> edits;
  for (size_t i = 0; i < now.size(); ++i) {
    const auto &[member, data] = now[i];
    if (member != last[i].first)
      return std::nullopt;
    std::string digest = memberDigest(data);
    digests[member] = digest;
    if (auto d = before.find(member); d != before.end() && d->second == digest)
      continue;
    std::string bytes = data.str();
    if (isX8664Object(bytes)) {
      auto p = padLike(llvm::MemoryBufferRef(bytes, member), last[i].second);
      if (!p) {
        llvm::consumeError(p.takeError());
        return std::nullopt;
      }
      bytes = std::move(*p);
    }
    if (bytes.size() != last[i].second.size())
      return std::nullopt;
    if (bytes != last[i].second)
      edits.push_back(incremental::Edit{
          static_cast<uint64_t>(last[i].second.data() - was.data()),
          std::move(bytes)});
  }
  return edits;
}

std::string IncrementalLink::changedMembers(const Manifest::Input &in,
                                            std::vector<Change> &changed) {
  std::string copy = dir + "/" + in.copy;
  // Both archives mapped: tens of megabytes, most of it only hashed.
  auto beforeBuf = llvm::MemoryBuffer::getFile(copy, false, false);
  auto afterBuf = llvm::MemoryBuffer::getFile(in.path, false, false);
  Result<std::string> map = readFile(copy + ".map");
  if (!beforeBuf || !afterBuf || !map)
    return "unreadable\t" +
           (!beforeBuf  ? copy + ": " + beforeBuf.getError().message()
            : !afterBuf ? in.path + ": " + afterBuf.getError().message()
                        : map.error());
  llvm::StringRef before = (*beforeBuf)->getBuffer(),
                  after = (*afterBuf)->getBuffer();
  std::vector<std::pair<std::string, llvm::StringRef>> old, now;
  std::string why = archiveMembers(before, in.path, old);
  if (why.empty())
    why = archiveMembers(after, in.path, now);
  if (!why.empty())
    return "input_changed\t" + why;
  if (old.size() != now.size())
    return "input_changed\t" + in.path + ": members added or removed";
  // A padded copy (incremental_slack): each new member as LLD would read
  // it, padded to the slots of the one before.
  bool paddedCopy = in.copy.ends_with(".padded.a");
  MemberDigests digests =
      paddedCopy ? readDigests(copy + ".digests") : MemberDigests{};
  // What makes the copy the new version's after a patch: its changed
  // members written over it, when each kept its padded size.
  ArchivePlan &plan = archivePlans[in.path];
  // Every member is hashed: on both cores.
  std::vector<std::string> nowDigests(paddedCopy ? now.size() : 0);
  llvm::parallelFor(0, nowDigests.size(), [&](size_t i) {
    nowDigests[i] = memberDigest(now[i].second);
  });
  for (size_t i = 0; i < old.size(); ++i) {
    if (old[i].first != now[i].first)
      return "input_changed\t" + in.path + ": members renamed or reordered";
    if (paddedCopy) {
      std::string d = std::move(nowDigests[i]);
      auto was = digests.find(now[i].first);
      bool same = was != digests.end() && was->second == d;
      plan.digests[now[i].first] = std::move(d);
      if (same)
        continue; // the member the copy holds padded
    }
    std::string nowBytes = now[i].second.str();
    std::string outgrew;
    if (paddedCopy && isX8664Object(nowBytes)) {
      std::string label = in.path + "(" + now[i].first + ")";
      auto p = padLike(llvm::MemoryBufferRef(nowBytes, label), old[i].second);
      if (p)
        nowBytes = std::move(*p);
      else
        outgrew = toString(p.takeError());
    }
    if (outgrew.empty() && old[i].second == nowBytes)
      continue;
    if (nowBytes.size() != old[i].second.size())
      plan.inPlace = false;
    else
      plan.edits.push_back(incremental::Edit{
          static_cast<uint64_t>(old[i].second.data() - before.data()),
          nowBytes});
    // In the link: a line of the map names it, as `<archive>(<member>)`
    // with the map's spelling of the archive.
    std::string member = "(" + old[i].first + "):(";
    size_t at = map->find(member);
    std::string name = in.path + "(" + old[i].first + ")";
    if (at != std::string::npos) {
      size_t begin = map->rfind("        ", at);
      if (begin == std::string::npos)
        return "unreadable\tthe state's map of " + in.path;
      name = map->substr(begin + 8, at + member.size() - 2 - (begin + 8));
      if (!outgrew.empty())
        return unpaddedReason(outgrew);
      changed.push_back(Change{name, old[i].second.str(), std::move(nowBytes),
                               "", copy + ".map"});
      continue;
    }
    // Not in the link: still not, if it defines what it defined (LLD
    // takes a member for a symbol it defines), and no other member either.
    auto a = globalSymbols(old[i].second), b = globalSymbols(now[i].second);
    if (!a || !b || *a != *b)
      return "input_changed\t" + name +
             " (not in the last link) defines or needs other symbols";
  }
  return "";
}

std::string IncrementalLink::patch(const std::vector<Change> &changed,
                                   std::vector<incremental::Edit> &edits) {
  // The state's output is the user's output too (a second name): one
  // written or removed since is no base for a patch.
  std::optional<Identity> now = identityOf(dir + "/output");
  if (!now || !this->last->output || !(*now == *this->last->output))
    return "output_changed\tthe output was changed or removed after the "
           "last link";
  auto last = llvm::MemoryBuffer::getFile(dir + "/output", /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  // The chunk hashes behind the build-id, as the last link left them.
  // After a full link, those prepareNextPatch computed (if they are of
  // this output, they give its build-id: the patcher checks).
  std::string ready =
      dir + "/" + incremental::readyChunksName(readySpareOf(*now));
  Result<std::string> chunks = readFile(dir + "/chunks");
  if (!chunks && (chunks = readFile(ready)))
    unlink(ready.c_str());
  if (chunks)
    chunkHashes.assign(chunks->begin(), chunks->end());
  if (!last)
    return "unreadable\tthe state's output is unreadable";
  lastOutput = std::move(*last);
  llvm::StringRef base = lastOutput->getBuffer();
  // Each object's patch reads the output the ones before it made (its
  // build-id): a copy, made only when there is more than one.
  std::string current;
  std::map<uint64_t, std::string> all; // by offset; the last build-id wins
  uint64_t bytes = 0, relocations = 0, moved = 0;
  for (size_t k = 0; k < changed.size(); ++k) {
    const Change &c = changed[k];
    Result<std::string> mapText = readFile(c.mapFile);
    if (!mapText)
      return "unreadable\tthe state's map: " + mapText.error();
    auto map = incremental::LinkMap::parse(*mapText, c.name);
    if (!map)
      return "unreadable\tthe state's map: " + toString(map.takeError());
    incremental::PatchInputs in;
    in.oldOutput =
        llvm::MemoryBufferRef(k == 0 ? base : current, "the last output");
    in.map = &*map;
    in.objectName = c.name;
    in.oldObject = llvm::MemoryBufferRef(c.before, c.name + " (last)");
    in.newObject = llvm::MemoryBufferRef(c.after, c.name);
    in.oldChunkHashes = chunkHashes;
    in.otherInputs = [&, k](const std::set<std::string> &names,
                            std::vector<incremental::OtherInput> &out) {
      int64_t began = micros();
      std::string why = otherInputs(changed, k, names, out);
      othersMicros += micros() - began;
      return why;
    };
    incremental::PatchResult r = incremental::patchOutput(in);
    if (!r.patched)
      return r.kind + "\t" + c.name + ": " + r.reason;
    chunkHashes = std::move(r.chunkHashes);
    for (incremental::Edit &e : r.edits)
      all[e.offset] = std::move(e.bytes);
    if (k + 1 < changed.size()) {
      if (k == 0)
        current = base.str();
      for (const auto &[offset, b] : all)
        std::memcpy(current.data() + offset, b.data(), b.size());
    }
    bytes += r.bytesWritten;
    relocations += r.relocationsApplied;
    moved += r.symbolsMoved;
  }
  for (auto &[offset, b] : all)
    edits.push_back(incremental::Edit{offset, std::move(b)});
  patchSummary = "objects=" + std::to_string(changed.size()) +
                 " bytes=" + std::to_string(bytes) +
                 " relocations=" + std::to_string(relocations) +
                 " moved=" + std::to_string(moved);
  return "";
}

std::string
IncrementalLink::otherInputs(const std::vector<Change> &changed, size_t k,
                             const std::set<std::string> &names,
                             std::vector<incremental::OtherInput> &out) {
  if (!last)
    return "no manifest";
  // An input's bytes as the output holds them now.
  auto current = [&](const std::string &name,
                     llvm::StringRef bytes) -> std::optional<llvm::StringRef> {
    for (size_t j = 0; j < changed.size(); ++j)
      if (changed[j].name == name)
        return j == k  ? std::nullopt
               : j < k ? std::optional<llvm::StringRef>(changed[j].after)
                       : std::optional<llvm::StringRef>(changed[j].before);
    return bytes;
  };
  // A file of the state, mapped (an archive's copy is tens of megabytes,
  // most of it never read).
  otherBuffers.clear();
  auto mapped = [&](const std::string &file) -> Result<llvm::StringRef> {
    auto buf = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!buf)
      return Failure{file + ": " + buf.getError().message()};
    otherBuffers.push_back(std::move(*buf));
    return otherBuffers.back()->getBuffer();
  };
  // A map of the state, with the lines of the files `keep` keeps: a big
  // program's has a line per input section, and few files name one of
  // `names`.
  otherMaps.clear();
  auto mapOf = [&](const std::string &file,
                   llvm::function_ref<bool(llvm::StringRef)> keep)
      -> llvm::Expected<const incremental::LinkMap *> {
    Result<std::string> text = readFile(file);
    if (!text)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     text.error());
    auto map = incremental::LinkMap::parse(*text, keep);
    if (!map)
      return map.takeError();
    otherMaps.push_back(std::move(*map));
    return &otherMaps.back();
  };
  // The manifest lists the inputs in the order LLD opened them (the
  // command line's): each one's place, and the patched object's. First
  // the inputs that may name one of `names` (most name none), then the
  // maps' lines for those.
  struct Candidate {
    size_t at;        // in the manifest
    std::string name; // the object's path, or the member's name
    llvm::StringRef bytes;
    // An object (placed by the link's map), a member of a kept archive (by
    // its map, `archives`[archive]) or of a system library (unplaced).
    enum { Object, Member, SystemMember } kind = Object;
    size_t archive = 0;
  };
  std::vector<Candidate> candidates;
  std::vector<std::string> archives; // kept ones: their copies' maps
  llvm::StringSet<> keys = incremental::nameSet(names);
  std::optional<size_t> patched;
  for (size_t at = 0; at < last->inputs.size(); ++at) {
    const Manifest::Input &in = last->inputs[at];
    if (in.copy.starts_with("objects/")) {
      Result<llvm::StringRef> bytes = mapped(dir + "/" + in.copy);
      if (!bytes)
        return bytes.error();
      std::optional<llvm::StringRef> now = current(in.path, *bytes);
      if (!now)
        patched = at;
      else if (incremental::namesAnyGlobal(llvm::MemoryBufferRef(*now, in.path),
                                           keys))
        candidates.push_back({at, in.path, *now});
      continue;
    }
    // An archive: its copy and its members' map lines, or (a system
    // library, kept by identity) the file itself, its members unplaced.
    bool kept = in.copy.starts_with("archives/");
    if (!kept && !in.copy.empty())
      continue;
    Result<llvm::StringRef> bytes =
        mapped(kept ? dir + "/" + in.copy : in.path);
    if (!bytes)
      return bytes.error();
    if (!isArchive(bytes->data(), bytes->size()))
      continue; // a shared object, a script: bound by name, or no code
    std::vector<std::pair<std::string, llvm::StringRef>> members;
    if (std::string why = archiveMembers(*bytes, in.path, members);
        !why.empty())
      return why;
    // The patched object may be one of its members.
    if (kept && dir + "/" + in.copy + ".map" == changed[k].mapFile)
      patched = at;
    if (kept)
      archives.push_back(dir + "/" + in.copy + ".map");
    for (const auto &[member, data] : members) {
      std::string name = in.path + "(" + member + ")";
      std::optional<llvm::StringRef> now = current(name, data);
      if (now &&
          incremental::namesAnyGlobal(llvm::MemoryBufferRef(*now, name), keys))
        candidates.push_back(
            kept ? Candidate{at, member, *now, Candidate::Member,
                             archives.size() - 1}
                 : Candidate{at, name, *now, Candidate::SystemMember});
    }
  }
  if (candidates.empty())
    return "";
  // The link's map for the objects; each kept archive's for its members
  // (the map spells a member `<the archive as LLD found it>(<member>)`,
  // and the member is in the link only if it names it).
  std::set<llvm::StringRef> objectNames;
  std::vector<std::set<llvm::StringRef>> memberNames(archives.size());
  for (const Candidate &c : candidates)
    if (c.kind == Candidate::Member)
      memberNames[c.archive].insert(c.name);
    else if (c.kind == Candidate::Object)
      objectNames.insert(c.name);
  const incremental::LinkMap *objects = nullptr;
  if (!objectNames.empty()) {
    auto m = mapOf(dir + "/map", [&](llvm::StringRef f) {
      return objectNames.count(f) != 0;
    });
    if (!m)
      return "the state's map: " + toString(m.takeError());
    objects = *m;
  }
  auto memberOf = [](llvm::StringRef file) {
    size_t open = file.rfind('(');
    return file.ends_with(")") && open != llvm::StringRef::npos
               ? file.slice(open + 1, file.size() - 1)
               : llvm::StringRef();
  };
  std::vector<const incremental::LinkMap *> archiveMaps(archives.size());
  std::vector<std::map<std::string, std::string, std::less<>>> spelled(
      archives.size());
  for (size_t a = 0; a < archives.size(); ++a) {
    if (memberNames[a].empty())
      continue;
    auto m = mapOf(archives[a], [&](llvm::StringRef f) {
      return memberNames[a].count(memberOf(f)) != 0;
    });
    if (!m)
      return "the state's map of " + archives[a] + ": " +
             toString(m.takeError());
    archiveMaps[a] = *m;
    for (const std::string &f : (*m)->files())
      spelled[a].emplace(memberOf(f).str(), f);
  }
  std::vector<size_t> placeOf; // of out[base + i]
  size_t base = out.size();
  for (Candidate &c : candidates) {
    const incremental::LinkMap *map = nullptr;
    if (c.kind == Candidate::Object) {
      map = objects;
    } else if (c.kind == Candidate::Member) {
      // The map's spelling of it; a member it does not name is not in the
      // link.
      map = archiveMaps[c.archive];
      auto named = spelled[c.archive].find(c.name);
      if (named == spelled[c.archive].end())
        continue;
      c.name = named->second;
    }
    out.push_back({c.name, c.bytes, map, false});
    placeOf.push_back(c.at);
  }
  for (size_t i = 0; i < placeOf.size(); ++i)
    out[base + i].earlier = patched && placeOf[i] < *patched;
  return "";
}

bool IncrementalLink::copyStillHolds(const std::string &path,
                                     const std::string &copy,
                                     const Identity &now) const {
  if (!last)
    return false;
  std::string abs = absoluteInput(req.cwd(), path);
  for (const Manifest::Input &was : last->inputs)
    if (was.copy == copy && was.id == now &&
        absoluteInput(req.cwd(), was.path) == abs &&
        was.id.ctimeNs + racyWindowNs(was.id) <= last->recordedNs &&
        identityOf(dir + "/" + copy))
      return true;
  return false;
}

std::string IncrementalLink::keepState(bool quiet) {
  Result<std::string> deps = readFile(dir + "/deps.new");
  unlink((dir + "/deps.new").c_str());
  if (!deps)
    return deps.error();
  Manifest m;
  m.head = headOf(req);
  m.quiet = quiet;
  m.linkMicros = micros();
  std::optional<std::vector<std::string>> probes = takeMissingProbes();
  if (!probes)
    return "the link's file accesses were not recorded";
  // The output and LLD's temporaries beside it are the link's own.
  std::string absOutput = output[0] == '/' ? output : req.cwd() + "/" + output;
  for (std::string &p : *probes)
    if (p != absOutput && !llvm::StringRef(p).starts_with(absOutput + ".tmp") &&
        std::find(m.probes.begin(), m.probes.end(), p) == m.probes.end())
      m.probes.push_back(std::move(p));
  size_t copied = 0;
  for (const std::string &path : parseDependencies(*deps)) {
    std::optional<Identity> id = identityOf(path);
    if (!id)
      return path + ": " + std::strerror(errno);
    if (changedSince(*id, startedNs))
      return path + " changed while LLD linked";
    Manifest::Input in{path, *id, ""};
    // An object is kept whole (the next patch needs it as it was); any
    // other input by its identity.
    char head[20] = {};
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, head, sizeof(head)) : -1;
    bool object = n == static_cast<ssize_t>(sizeof(head)) &&
                  isX8664Object(std::string(head, sizeof(head)));
    if (fd >= 0)
      close(fd);
    // An archive: its last version by a second name (after the map).
    if (n > 0 && isArchive(head, static_cast<size_t>(n)))
      in.copy =
          "archives/" + hexDigest(path) +
          (padded.count(absoluteInput(req.cwd(), path)) ? ".padded.a" : ".a");
    auto pad =
        object ? padded.find(absoluteInput(req.cwd(), path)) : padded.end();
    if (pad != padded.end()) {
      // Padded: the state keeps what LLD read.
      in.copy = paddedCopyName(pad->first);
      if (pad->second != in.copy) {
        if (rename((dir + "/" + pad->second).c_str(),
                   (dir + "/" + in.copy).c_str()) != 0)
          return dir + "/" + in.copy + ": " + std::strerror(errno);
        ++copied;
      }
    } else if (object) {
      // A copy per path. The last link's copy stays when the object is the
      // same file, unchanged since (its identity, not changed just before
      // that link): most objects of a full link are.
      in.copy = "objects/" + hexDigest(path) + ".o";
      if (!copyStillHolds(path, in.copy, *id)) {
        Result<std::string> bytes = readFile(path);
        if (!bytes)
          return bytes.error();
        if (std::string e = writeOutput(dir + "/" + in.copy, *bytes);
            !e.empty())
          return e;
        ++copied;
      }
    }
    m.inputs.push_back(std::move(in));
  }
  // The state's output: a second name of the output LLD wrote (nothing
  // copied), or a copy where the state is on another file system. No
  // spare: the last output is no longer a patch away.
  for (const char *stale : {"/spare", "/spare.edits", "/chunks"})
    unlink((dir + stale).c_str());
  incremental::removeReadySpares(dir);
  std::string next = dir + "/output.new";
  unlink(next.c_str());
  secondName = link(output.c_str(), next.c_str()) == 0;
  if (!secondName) {
    Result<std::string> out = readFile(output);
    if (!out)
      return out.error();
    if (std::string e = writeOutput(next, *out); !e.empty())
      return e;
  }
  if (rename(next.c_str(), (dir + "/output").c_str()) != 0)
    return dir + "/output: " + std::strerror(errno);
  m.output = identityOf(dir + "/output");
  // The map as the next patch reads it: the objects' input sections (an
  // archive's members' go beside its copy).
  Result<std::string> map = readFile(dir + "/map.new");
  if (!map)
    return map.error();
  std::vector<std::string> prefixes;
  for (const Manifest::Input &in : m.inputs)
    if (in.copy.starts_with("objects/"))
      prefixes.push_back("        " + in.path + ":(");
  std::string kept = filterMap(*map, [&](llvm::StringRef what) {
    return std::any_of(
        prefixes.begin(), prefixes.end(),
        [&](const std::string &p) { return what.starts_with(p); });
  });
  if (std::string e = writeOutput(dir + "/map", kept); !e.empty())
    return e;
  for (Manifest::Input &in : m.inputs)
    if (in.copy.starts_with("archives/") &&
        !keepArchive(in.path, in.copy, *map).empty())
      in.copy.clear(); // by its identity only: a change links in full
  // The object copies were taken after the link: an object changed since
  // it began is not what LLD read, and the state would lie.
  for (const Manifest::Input &in : m.inputs)
    if (std::optional<Identity> id = identityOf(in.path);
        !id || !(*id == in.id))
      return in.path + " changed while its state was kept";
  m.recordedNs = startedNs;
  if (std::string e = writeOutput(dir + "/manifest", formatManifest(m));
      !e.empty())
    return e;
  // Copies of objects and archives this link did not read go.
  std::set<std::string> copies;
  for (const Manifest::Input &in : m.inputs)
    if (!in.copy.empty())
      copies.insert(in.copy);
  for (const char *sub : {"objects", "archives"})
    if (DIR *d = opendir((dir + "/" + sub).c_str())) {
      while (dirent *e = readdir(d)) {
        std::string name = std::string(sub) + "/" + e->d_name;
        llvm::StringRef base = name;
        bool beside =
            base.consume_back(".map") || base.consume_back(".digests");
        if (e->d_name[0] != '.' && !copies.count(name) &&
            !(beside && copies.count(base.str())))
          unlink((dir + "/" + name).c_str());
      }
      closedir(d);
    }
  stateNote = "objects_copied=" + std::to_string(copied);
  return "";
}

// A copy of the archive (the state's last version of it), and, with
// `map`, the map's lines for its members (with the output sections')
// beside it. Not a second name: binutils' ar writes an archive that has
// one in place, and the state's would change with it. A system library
// (under /usr or /lib) is kept by its identity only: a changed one links
// in full.
std::string IncrementalLink::keepArchive(const std::string &path,
                                         const std::string &copy,
                                         llvm::StringRef map) {
  if (isSystemFile(absoluteInput(req.cwd(), path)))
    return "a system library";
  std::string at = dir + "/" + copy;
  std::optional<Identity> now = identityOf(path);
  auto pad = padded.find(absoluteInput(req.cwd(), path));
  if (pad != padded.end()) {
    // What LLD read: the padded archive, and its members' digests.
    // A copy without its own digests would take stale ones for true:
    // on any failure neither stays (the archive is then kept by identity).
    for (const char *suffix : {"", ".digests"})
      if (pad->second != copy &&
          rename((dir + "/" + pad->second + suffix).c_str(),
                 (at + suffix).c_str()) != 0) {
        std::string e = at + suffix + ": " + std::strerror(errno);
        unlink(at.c_str());
        unlink((at + ".digests").c_str());
        return e;
      }
  } else if (auto edit = archivePlans.find(path);
             map.empty() && copy.ends_with(".padded.a") &&
             edit != archivePlans.end() && edit->second.inPlace) {
    // After a patch: the changed members' padded bytes over the copy's
    // (what changedMembers read), and the new digests. The manifest goes
    // first: a copy half written is never read as the last version's.
    unlink((dir + "/manifest").c_str());
    std::string e = writeEditsInPlace(at, edit->second.edits);
    if (e.empty())
      e = writeOutput(at + ".digests", formatDigests(edit->second.digests));
    if (!e.empty()) {
      unlink(at.c_str());
      unlink((at + ".digests").c_str());
      return e;
    }
  } else if (copy.ends_with(".padded.a")) {
    // After a patch: the new version, padded to the copy's slots (the
    // patch read its members so).
    Result<std::string> user = readFile(path), was = readFile(at);
    if (!user || !was)
      return !user ? user.error() : was.error();
    MemberDigests before = readDigests(at + ".digests"), digests;
    std::string e;
    // Most often every changed member keeps its padded size: the copy
    // with those members' bytes over it (a copy of the file and a few
    // writes, not a new archive).
    if (std::optional<std::vector<incremental::Edit>> edits =
            samePlaceEdits(*user, *was, path, before, digests)) {
      e = writePatchedCopy(at, at, *edits);
    } else {
      auto p = padArchive(*user, path, *was, before,
                          {plan.slack_percent(), plan.slack_bytes()}, digests);
      e = p ? writeOutput(at, *p) : toString(p.takeError());
    }
    if (e.empty())
      e = writeOutput(at + ".digests", formatDigests(digests));
    if (!e.empty()) {
      unlink(at.c_str());
      unlink((at + ".digests").c_str());
      return e;
    }
  } else if (map.empty() || !now || !copyStillHolds(path, copy, *now)) {
    if (std::string e = writePatchedCopy(path, at, {}); !e.empty()) {
      unlink(at.c_str());
      return e;
    }
  }
  if (map.empty())
    return "";
  // The map spells the archive as LLD found it (`./libfoo.a` for -L.),
  // the dependency file without dots: lines whose archive is this one.
  llvm::SmallString<256> want(path);
  llvm::sys::path::remove_dots(want);
  std::string kept = filterMap(map, [&](llvm::StringRef what) {
    if (!what.starts_with("        "))
      return false;
    llvm::StringRef file = what.drop_front(8).split(":(").first;
    size_t open = file.rfind('(');
    if (!file.ends_with(")") || open == llvm::StringRef::npos)
      return false;
    llvm::SmallString<256> archive(file.take_front(open));
    llvm::sys::path::remove_dots(archive);
    return archive == want;
  });
  return writeOutput(at + ".map", kept);
}

// The state's output is the output itself (a second name, so the state
// copies nothing), and its spare is the output before it, with the edits
// that made the last one from it. The patched output is the spare with
// those edits and this link's, written in place and renamed over the
// output, when nothing else can see it change: no other name, no process
// running, mapping or holding it open (a write lease is granted only
// then). Else the output is a copy of the state's with the edits. Either
// way the last output becomes the spare. Where the state cannot name the
// output (another file system), it keeps a copy of its own, patched too.
std::string
IncrementalLink::publish(const std::vector<incremental::Edit> &edits,
                         bool &kept) {
  std::string out = dir + "/output", spare = dir + "/spare",
              next = dir + "/output.new";
  unlink(next.c_str());
  bool fromSpare = writeSpare(edits);
  if (fromSpare) {
    std::string tmp = lldTemporaryName(output);
    if (link(spare.c_str(), tmp.c_str()) != 0 ||
        rename(tmp.c_str(), output.c_str()) != 0) {
      unlink(tmp.c_str());
      unlink(spare.c_str());
      fromSpare = false;
    }
  }
  if (!fromSpare)
    if (std::string e = writePatchedCopy(out, output, edits, next); !e.empty())
      return e;
  written = !fromSpare ? "copy" : readySpare ? "ready_spare" : "spare";
  lastOutput.reset();
  struct stat st{};
  if (fromSpare)
    kept = renameat2(AT_FDCWD, out.c_str(), AT_FDCWD, spare.c_str(),
                     RENAME_EXCHANGE) == 0;
  else if (lstat(next.c_str(), &st) == 0)
    kept = rename(out.c_str(), spare.c_str()) == 0 &&
           rename(next.c_str(), out.c_str()) == 0;
  else {
    unlink(spare.c_str());
    kept = writeEditsInPlace(out, edits).empty();
    written = "copy_own_state";
  }
  if (lstat(spare.c_str(), &st) == 0)
    kept =
        kept && writeOutput(dir + "/spare.edits", formatEdits(edits)).empty();
  std::string_view hashes(reinterpret_cast<const char *>(chunkHashes.data()),
                          chunkHashes.size());
  if (hashes.empty())
    unlink((dir + "/chunks").c_str());
  else
    kept = kept && writeOutput(dir + "/chunks", hashes).empty();
  return "";
}

bool IncrementalLink::writeSpare(const std::vector<incremental::Edit> &edits) {
  std::string spare = dir + "/spare";
  std::optional<Identity> id = identityOf(spare);
  std::optional<std::vector<incremental::Edit>> before;
  if (last->spare && id && *id == *last->spare) {
    Result<std::string> text = readFile(dir + "/spare.edits", id->size);
    if (text)
      before = parseEdits(*text, id->size);
  } else if (const std::optional<Identity> &out = last->output) {
    // After a full link: the copy of its output its process made since,
    // if it is there (a copy of another output has another name).
    std::string ready = dir + "/" + readySpareOf(*out);
    if (rename(ready.c_str(), spare.c_str()) != 0)
      return false;
    id = identityOf(spare);
    before.emplace(); // the output itself
    readySpare = true;
  }
  if (!id)
    return false;
  // ETXTBSY: a program of the spare still runs.
  UniqueFd fd(open(spare.c_str(), O_WRONLY | O_CLOEXEC));
  struct stat st{};
  if (!before || !fd.valid() || fstat(fd.get(), &st) != 0 || st.st_nlink != 1 ||
      st.st_ino != id->ino || fcntl(fd.get(), F_SETLEASE, F_WRLCK) != 0)
    return false;
  bool ok = writeEdits(fd.get(), *before).empty() &&
            writeEdits(fd.get(), edits).empty() &&
            futimens(fd.get(), nullptr) == 0;
  fcntl(fd.get(), F_SETLEASE, F_UNLCK);
  if (!ok)
    unlink(spare.c_str());
  return ok;
}

// The objects the command line names, each padded to slots with the
// plan's slack (lib/incremental/padding.h): LLD reads the padded object in
// place of the user's (redirectReads: its diagnostics, map and dependency
// file name the user's). An object keeps the slots its last padded
// version had while it fits them, so the next patch pads to those again;
// one that outgrew them gets new room. An object unchanged since the last
// link is read from the state's copy, padded then. System objects (crt*.o)
// and what the padder cannot take are linked as they are.
// The archives `-lNAME` (and `-l:FILE`) name, found as LLD finds them:
// in each -L directory in order (every -L counts, wherever it is), a
// shared `libNAME.so` first unless -Bstatic (or -static) is in effect
// there, then `libNAME.a`. Only archives; a library found as a shared
// object, or not found, is left out. Directories under a sysroot (`=`)
// are left to LLD.
std::vector<std::string> libraryArchives(const std::vector<std::string> &argv) {
  std::vector<std::string> dirs;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string &a = argv[i];
    if ((a == "-L" || a == "--library-path") && i + 1 < argv.size())
      dirs.push_back(argv[++i]);
    else if (a.starts_with("--library-path="))
      dirs.push_back(a.substr(15));
    else if (a.starts_with("-L") && a.size() > 2)
      dirs.push_back(a.substr(2));
  }
  std::erase_if(dirs, [](const std::string &d) {
    return d.empty() || d[0] == '=' || d.starts_with("$SYSROOT");
  });
  auto exists = [](const std::string &path) {
    struct stat st{};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  };
  std::vector<std::string> found;
  bool isStatic = false;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string &a = argv[i];
    if (a == "-Bstatic" || a == "-static" || a == "-dn" || a == "-non_shared")
      isStatic = true;
    else if (a == "-Bdynamic" || a == "-dy" || a == "-call_shared")
      isStatic = false;
    std::string name;
    if ((a == "-l" || a == "--library") && i + 1 < argv.size())
      name = argv[++i];
    else if (a.starts_with("--library="))
      name = a.substr(10);
    else if (a.starts_with("-l") && a.size() > 2)
      name = a.substr(2);
    if (name.empty())
      continue;
    for (const std::string &d : dirs) {
      if (name[0] == ':') {
        if (exists(d + "/" + name.substr(1))) {
          found.push_back(d + "/" + name.substr(1));
          break;
        }
        continue;
      }
      if (!isStatic && exists(d + "/lib" + name + ".so"))
        break; // a shared library: bound by name
      if (exists(d + "/lib" + name + ".a")) {
        found.push_back(d + "/lib" + name + ".a");
        break;
      }
    }
  }
  return found;
}

void IncrementalLink::padObjects() {
  incremental::SlackPolicy slack{plan.slack_percent(), plan.slack_bytes()};
  if ((!slack.percent && !slack.bytes) ||
      (mkdir((dir + "/padded").c_str(), 0700) != 0 && errno != EEXIST))
    return;
  // `-b binary` and kin take a file's bytes as data: nothing is padded.
  for (const std::string &a : inv.argv)
    if (a == "-b" || a.starts_with("--format") || a.starts_with("-format") ||
        (a.starts_with("-b") && a.size() > 2 && !a.starts_with("-build")))
      return;
  // The slots of the last link of the same command line.
  bool sameLink = last && last->head == headOf(req);
  std::vector<std::string> inputs;
  for (size_t i = 1; i < inv.argv.size(); ++i) {
    const std::string &a = inv.argv[i];
    if (a == "-o" || a == "--output") {
      ++i;
      continue;
    }
    if (!a.empty() && a[0] != '-')
      inputs.push_back(a);
  }
  for (const std::string &a : libraryArchives(inv.argv))
    inputs.push_back(a);
  for (const std::string &a : inputs) {
    std::string abs = absoluteInput(req.cwd(), a);
    std::optional<Identity> id = identityOf(abs);
    if (padded.count(abs) || isSystemFile(abs) || !id)
      continue;
    std::string copy = paddedCopyName(abs);
    if (sameLink && copyStillHolds(abs, copy, *id)) {
      if (redirectReads(abs, dir + "/" + copy).empty())
        padded[abs] = copy;
      continue;
    }
    Result<std::string> bytes = readFile(abs);
    if (bytes && isArchive(bytes->data(), bytes->size())) {
      padArchiveInput(abs, a, *bytes, sameLink, *id, slack);
      continue;
    }
    if (!bytes || !isX8664Object(*bytes))
      continue;
    llvm::MemoryBufferRef object(*bytes, a);
    std::optional<std::string> out;
    auto padTo = [&](llvm::Expected<std::vector<incremental::Slot>> slots) {
      if (!slots) {
        llvm::consumeError(slots.takeError());
        return;
      }
      if (auto p = incremental::padObject(object, *slots))
        out = std::move(*p);
      else
        llvm::consumeError(p.takeError());
    };
    Result<std::string> before =
        sameLink ? readFile(dir + "/" + copy) : Failure{"another link"};
    if (before)
      padTo(incremental::slotsOf(llvm::MemoryBufferRef(*before, a),
                                 incremental::SlackPolicy{}));
    if (!out)
      padTo(incremental::slotsOf(object, slack));
    std::string file = "padded/" + hexDigest(abs) + ".o";
    if (out && writeOutput(dir + "/" + file, *out).empty() &&
        redirectReads(abs, dir + "/" + file).empty())
      padded[abs] = file;
  }
}

void IncrementalLink::padArchiveInput(const std::string &abs,
                                      const std::string &name,
                                      llvm::StringRef bytes, bool sameLink,
                                      const Identity &id,
                                      const incremental::SlackPolicy &slack) {
  // The last link's padded copy: read again while the archive is the
  // same, else the slots of its members.
  std::string slotsFrom;
  MemberDigests was, now;
  if (sameLink)
    for (const Manifest::Input &in : last->inputs)
      if (in.copy.ends_with(".padded.a") &&
          absoluteInput(req.cwd(), in.path) == abs) {
        if (copyStillHolds(abs, in.copy, id)) {
          if (redirectReads(abs, dir + "/" + in.copy).empty())
            padded[abs] = in.copy;
          return;
        }
        slotsFrom = readFile(dir + "/" + in.copy).value_or("");
        was = readDigests(dir + "/" + in.copy + ".digests");
      }
  auto p = padArchive(bytes, name, slotsFrom, was, slack, now);
  if (!p) {
    llvm::consumeError(p.takeError()); // linked as it is
    return;
  }
  std::string file = "padded/" + hexDigest(abs) + ".a";
  if (writeOutput(dir + "/" + file, *p).empty() &&
      writeOutput(dir + "/" + file + ".digests", formatDigests(now)).empty() &&
      redirectReads(abs, dir + "/" + file).empty())
    padded[abs] = file;
}

int IncrementalLink::fullLink() {
  // The state says nothing while the link runs: a failed link leaves none.
  unlink((dir + "/manifest").c_str());
  std::vector<std::string> extra = {"-Map=" + dir + "/map.new",
                                    "--dependency-file=" + dir + "/deps.new"};
  bool printed = false;
  start = Clock::now();
  startedNs = fileClockNowNs();
  padObjects();
  takeMissingProbes(); // only this link's
  keepMissingProbes();
  int rc = runLldReturning(inv, extra, &printed);
  lldMicros = micros();
  if (rc == 0) {
    if (std::string e = keepState(!printed); !e.empty()) {
      unlink((dir + "/manifest").c_str()); // next time: a full link again
      stateNote = "no_state (" + e + ")";
    } else {
      // Verify mode never writes a spare; one in another file system
      // than the output cannot become it.
      prepareNext = secondName && !plan.verify();
    }
  } else {
    stateNote = "no_state (LLD failed)";
  }
  if (!padded.empty())
    stateNote += " padded=" + std::to_string(padded.size());
  unlink((dir + "/map.new").c_str());
  (void)removeTree(dir + "/padded"); // kept ones moved to objects/
  return rc;
}

void IncrementalLink::run() {
  ignoreAccessesUnder(plan.state_dir());
  std::string why = eligibility(inv.argv, output);
  if (why.empty() && !inv.leadingOption.empty())
    why = "the audit's record writes its own map";
  if (!why.empty()) {
    result("full kind=not_eligible reason=" + why);
    runLldAndExit(inv);
  }
  dir = plan.state_dir() + "/" + hexDigest(req.cwd() + '\0' + output);
  if ((mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) ||
      (mkdir((dir + "/objects").c_str(), 0700) != 0 && errno != EEXIST) ||
      (mkdir((dir + "/archives").c_str(), 0700) != 0 && errno != EEXIST)) {
    result("full kind=unreadable reason=" + dir + ": " + std::strerror(errno));
    runLldAndExit(inv);
  }
  // One link of an output at a time uses its state; another one at the
  // same moment links in full and leaves the state alone (no wait). The
  // lock's time stamp says when the output was last linked.
  lock = open((dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) != 0) {
    result("full kind=busy reason=another link of this output is running");
    runLldAndExit(inv);
  }
  futimens(lock, nullptr);
  pruneStates(plan.state_dir(), dir);
  child_report::noteTool(); // the patch, or LLD: the tool starts
  phase("setup");
  std::vector<Change> changed;
  std::vector<incremental::Edit> edits;
  std::string reason = changedObjects(changed);
  phase("inputs");
  if (reason.empty()) {
    reason = patch(changed, edits);
    phase("patch");
    if (othersMicros) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "(others:%.1f)",
                    static_cast<double>(othersMicros) / 1000);
      phases += buf;
    }
  }
  if (!reason.empty()) {
    size_t tab = reason.find('\t');
    int rc = fullLink();
    result("full kind=" + reason.substr(0, tab) + " lld_micros=" +
           std::to_string(lldMicros) + " micros=" + std::to_string(micros()) +
           " " + stateNote + " reason=" + reason.substr(tab + 1));
    if (prepareNext)
      prepareNextPatch(rc);
    finish(rc);
  }
  int64_t saved = last ? last->linkMicros : 0;
  if (plan.verify()) {
    int64_t patchMicros = micros();
    std::string patched =
        incremental::applyEdits(lastOutput->getBuffer(), edits);
    lastOutput.reset();
    int rc = fullLink();
    if (rc != 0) {
      result("verify_differs offset=-1 reason=LLD's full link failed");
      finish(rc);
    }
    Result<std::string> full = readFile(output);
    size_t at = 0;
    while (full && at < full->size() && at < patched.size() &&
           (*full)[at] == patched[at])
      ++at;
    if (full && *full == patched)
      result("verified " + patchSummary +
             " micros=" + std::to_string(patchMicros));
    else
      result("verify_differs offset=" + std::to_string(at) + " " +
             patchSummary);
    finish(0);
  }
  bool kept = false;
  if (std::string e = publish(edits, kept); !e.empty()) {
    result("full kind=unreadable reason=" + e);
    finish(fullLink());
  }
  phase("write");
  Manifest m = *last;
  m.output = identityOf(dir + "/output");
  m.spare = identityOf(dir + "/spare");
  kept = kept && m.output;
  for (const Change &c : changed)
    kept = kept &&
           (c.copy.empty() || writeOutput(dir + "/" + c.copy, c.after).empty());
  // A changed archive's new version takes the place of the last one (its
  // members were placed as before: the map lines stay).
  for (Manifest::Input &in : m.inputs)
    if (std::find(changedArchives.begin(), changedArchives.end(), in.path) !=
        changedArchives.end())
      kept = kept && keepArchive(in.path, in.copy).empty();
  // Each input as it is now; one that changed after this link began may
  // not be what the patch read: no state then.
  for (Manifest::Input &in : m.inputs) {
    std::optional<Identity> id = identityOf(in.path);
    kept = kept && id && !changedSince(*id, startedNs);
    if (id)
      in.id = *id;
  }
  m.recordedNs = startedNs;
  if (!kept || !writeOutput(dir + "/manifest", formatManifest(m)).empty())
    unlink((dir + "/manifest").c_str());
  phase("state");
  result("patched " + patchSummary + " write=" + written +
         " micros=" + std::to_string(micros()) + " phases=" + phases +
         " saved=" + std::to_string(std::max<int64_t>(0, saved - micros())));
  finish(0);
}

} // namespace

// `to`: a copy of `from` (the kernel copies, sharing blocks where the file
// system can) with the edits over it, written as writeOutput writes.
std::string writePatchedCopy(const std::string &from, const std::string &to,
                             const std::vector<incremental::Edit> &edits,
                             const std::string &keepAs) {
  int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st{};
  if (in < 0 || fstat(in, &st) != 0) {
    std::string e = from + ": " + std::strerror(errno);
    if (in >= 0)
      close(in);
    return e;
  }
  std::string tmp;
  int fd = createLldTemporary(to, tmp);
  if (fd < 0) {
    std::string e = to + ": " + std::strerror(errno);
    close(in);
    return e;
  }
  std::string error;
  if (int err = copyFileBytes(in, fd, static_cast<uint64_t>(st.st_size)))
    error = std::strerror(err);
  close(in);
  if (error.empty())
    error = writeEdits(fd, edits);
  if (close(fd) != 0 && error.empty())
    error = std::strerror(errno);
  // A second name before the rename (another file system: none).
  if (error.empty() && !keepAs.empty())
    (void)link(tmp.c_str(), keepAs.c_str());
  if (error.empty() && rename(tmp.c_str(), to.c_str()) != 0)
    error = std::strerror(errno);
  if (!error.empty()) {
    unlink(tmp.c_str());
    return to + ": " + error;
  }
  return "";
}

std::string writeEditsInPlace(const std::string &path,
                              const std::vector<incremental::Edit> &edits) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return path + ": " + std::strerror(errno) +
           (errno == ETXTBSY ? " (the program is running)" : "");
  std::string e = writeEdits(fd, edits);
  close(fd);
  return e;
}

void runIncrementalLinkAndExit(const v1::LinkRequest &req,
                               const LldInvocation &inv) {
  IncrementalLink(req, inv).run();
}

} // namespace linkd
