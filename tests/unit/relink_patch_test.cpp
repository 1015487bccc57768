// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// patchOutput against its oracle: a program of several files is linked by
// the real driver (`clang-19 -fuse-ld=lld`, its default PIE, --build-id
// and --eh-frame-hdr) with -Map; one file is edited and recompiled; the
// patch of the old output must be byte for byte what LLD links in full
// from the same inputs, and it must run. Then every reason a patch gives
// way to a full link, and hostile maps and outputs.
#include "incremental/link_map.h"
#include "incremental/padding.h"
#include "incremental/patcher.h"
#include "scratch_dir.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace linkd::incremental {
namespace {

// The edited file: state, a thread-local, a string, a table of pointers,
// a call through the PLT, a relaxable GOT load of a global another file
// defines.
const std::string kCounter = R"(
#include <stdio.h>
#include <string.h>
extern int shared_limit;
extern int helper(int);
int g = 3;
static int counter;
__thread int tcount;
static const char *names[] = {"alpha", "beta", "gamma"};
int step(int x) {
  counter += x;
  tcount++;
  return x * 7 + g + helper(x) + 11 + shared_limit + (int)strlen(names[x % 3]);
}
const char *who(void) { return names[counter % 3]; }
void show(void) { printf("%s %d %d\n", who(), counter, tcount); }
)";

const std::string kHelper = R"(
int shared_limit = 40;
int helper(int x) { return x ^ shared_limit; }
)";

const std::string kMain = R"(
#include <stdio.h>
extern int step(int);
extern void show(void);
int main(void) {
  int sum = 0;
  for (int i = 0; i < 5; ++i)
    sum += step(i);
  printf("%d\n", sum);
  show();
  return 0;
}
)";

// C++: inline functions and templates are COMDAT groups both objects
// carry; the edited object's copies are discarded, and its debug info
// points at them (tombstones).
const std::string kShapes = R"(
#include <string>
#include <vector>
#include <stdexcept>
template <class T> T twice(T v) { return v + v; }
inline int area(int w, int h) { return w * h; }
int scale = 3;
int measure(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i)
    v.push_back(twice(i) * scale + area(i, 2) + 17);
  if (n > 1000)
    throw std::runtime_error("too many");
  int s = 0;
  for (int x : v)
    s += x;
  return s;
}
)";

const std::string kShapesMain = R"(
#include <cstdio>
#include <string>
template <class T> T twice(T v) { return v + v; }
inline int area(int w, int h) { return w * h; }
int measure(int);
int main() {
  std::string s = "n";
  std::printf("%s %d %d %d\n", s.c_str(), measure(10), twice(4), area(2, 3));
  return 0;
}
)";

// How a test program is compiled and linked.
struct Layout {
  const char *flags, *linkFlags;
};

std::string edited(std::string from, const std::string &what,
                   const std::string &with) {
  size_t at = from.find(what);
  EXPECT_NE(at, std::string::npos) << what;
  if (at != std::string::npos)
    from.replace(at, what.size(), with);
  return from;
}

class RelinkPatchTest : public ScratchDirTest {
protected:
  struct Program {
    std::string compiler = "clang-19";
    std::string flags = "-O2";
    std::string linkFlags;
    std::vector<std::pair<std::string, std::string>> files; // name, source
    std::string output = "prog";
  };

  // Compiles each file, links them all, and keeps the map and the edited
  // file's object as it was.
  bool build(const Program &p, const std::string &mapName) {
    std::string objects;
    for (const auto &[name, source] : p.files) {
      write(name, source);
      std::string obj = name.substr(0, name.rfind('.')) + ".o";
      if (sh(p.compiler + " " + p.flags + " -c " + name + " -o " + obj) != 0)
        return false;
      objects += " " + obj;
    }
    return sh(p.compiler + " -fuse-ld=lld " + p.linkFlags + " -Wl,-Map," +
              mapName + objects + " -o " + p.output) == 0;
  }

  // Builds `p`, edits its first file to `after`, patches, links in full,
  // and returns the patch (its output compared with LLD's by the caller).
  PatchResult patchEdit(Program p, const std::string &after) {
    EXPECT_TRUE(build(p, "old.map"));
    std::string first = p.files.front().first;
    std::string obj = first.substr(0, first.rfind('.')) + ".o";
    std::string oldObject = read(obj), oldOutput = read(p.output);
    auto map = LinkMap::parse(read("old.map"));
    EXPECT_TRUE(static_cast<bool>(map));
    if (!map) {
      llvm::consumeError(map.takeError());
      return {};
    }
    p.files.front().second = after;
    // The full link of the new inputs: LLD's answer.
    EXPECT_TRUE(build(p, "new.map"));
    full = read(p.output);
    PatchInputs in;
    in.oldOutput = llvm::MemoryBufferRef(oldOutput, "old-output");
    in.map = &*map;
    in.objectName = obj;
    in.oldObject = llvm::MemoryBufferRef(oldObject, "old.o");
    std::string newObject = read(obj);
    in.newObject = llvm::MemoryBufferRef(newObject, "new.o");
    PatchResult r = patchOutput(in);
    if (r.patched) {
      patched = applyEdits(oldOutput, r.edits);
      std::ofstream(dir + "/patched", std::ios::binary) << patched;
      sh("chmod +x patched");
    }
    return r;
  }

  // Not patched, for a reason of `kind` whose text says `why`.
  static void expectRefused(const PatchResult &r, const std::string &kind,
                            const std::string &why) {
    EXPECT_FALSE(r.patched);
    EXPECT_EQ(r.kind, kind) << r.reason;
    EXPECT_NE(r.reason.find(why), std::string::npos) << r.reason;
  }

  // The patched output is LLD's, byte for byte, and runs as LLD's does.
  void expectLldsBytes(const PatchResult &r) {
    ASSERT_TRUE(r.patched) << r.kind << ": " << r.reason;
    EXPECT_GT(r.sectionsWritten, 0u);
    ASSERT_EQ(patched.size(), full.size());
    size_t first = 0;
    while (first < full.size() && patched[first] == full[first])
      ++first;
    EXPECT_EQ(first, full.size()) << "the patch differs from LLD's full link "
                                     "from byte "
                                  << first;
  }

  // One patch of mutated inputs: a refusal says its kind, a patch writes
  // only inside the output.
  static void tally(const PatchResult &r, size_t outputSize, int &patched,
                    int &refused) {
    if (!r.patched) {
      EXPECT_FALSE(r.kind.empty()) << r.reason;
      ++refused;
      return;
    }
    ++patched;
    for (const Edit &e : r.edits)
      EXPECT_LE(e.offset + e.bytes.size(), outputSize);
  }
  // The mutations' seed: `fixed`, or LINKD_TEST_SEED's (to search wider
  // by hand: for s in $(seq 1 50); do LINKD_TEST_SEED=$s ...; done).
  static uint64_t seed(uint64_t fixed) {
    const char *s = std::getenv("LINKD_TEST_SEED");
    return s ? std::strtoull(s, nullptr, 10) : fixed;
  }
  // Many mutations hit bytes the patch never reads, and it still patches;
  // many hit what it reads, and it refuses.
  static void report(int patched, int refused) {
    EXPECT_GT(patched, 0);
    EXPECT_GT(refused, 0);
    std::printf("[ mutated  ] %d patched, %d refused\n", patched, refused);
  }

  // The patched program prints what LLD's does, `marker` among it.
  void expectSameRun(const std::string &marker) {
    EXPECT_EQ(sh("./patched > patched.out && ./prog > full.out && cmp "
                 "patched.out full.out"),
              0);
    EXPECT_NE(read("patched.out").find(marker), std::string::npos)
        << read("patched.out");
  }

  static PatchResult patch(const std::string &output, const LinkMap &map,
                           const std::string &objectName,
                           const std::string &before,
                           const std::string &after) {
    PatchInputs in;
    in.oldOutput = llvm::MemoryBufferRef(output, "prog");
    in.map = &map;
    in.objectName = objectName;
    in.oldObject = llvm::MemoryBufferRef(before, "old.o");
    in.newObject = llvm::MemoryBufferRef(after, "new.o");
    return patchOutput(in);
  }

  Program counterProgram(const std::string &flags,
                         const std::string &linkFlags = "") {
    Program p;
    p.flags = flags;
    p.linkFlags = linkFlags;
    p.files = {
        {"counter.c", kCounter}, {"helper.c", kHelper}, {"main.c", kMain}};
    return p;
  }

  std::string full;    // LLD's full link of the new inputs
  std::string patched; // the previous output with the patch's edits
};

TEST_F(RelinkPatchTest, AChangedConstantIsLldsFullLinkInEveryLayout) {
  const std::string after = edited(kCounter, "+ 11 +", "+ 13 +");
  const Layout cases[] = {
      {"-O2", ""},
      {"-O2", "-no-pie"},
      {"-O2 -g", ""},
      {"-O2 -g", "-no-pie"},
      {"-O1 -g -ffunction-sections -fdata-sections", "-Wl,--gc-sections"},
      {"-O2 -fno-pic", "-no-pie -Wl,--build-id=md5"},
      {"-O2 -g", "-Wl,--build-id=fast -Wl,-z,now"},
      {"-O2 -g", "-Wl,--build-id=none"},
  };
  for (const Layout &c : cases) {
    SCOPED_TRACE(std::string(c.flags) + " | " + c.linkFlags);
    PatchResult r = patchEdit(counterProgram(c.flags, c.linkFlags), after);
    expectLldsBytes(r);
    EXPECT_GT(r.relocationsApplied, 0u);
    expectSameRun("beta 10 5");
  }
}

TEST_F(RelinkPatchTest, AChangedInitializerWritesData) {
  PatchResult r =
      patchEdit(counterProgram("-O2 -g"), edited(kCounter, "g = 3", "g = 9"));
  expectLldsBytes(r);
  EXPECT_EQ(sh("./patched | grep -q 'beta 10 5'"), 0);
}

TEST_F(RelinkPatchTest, CxxWithDiscardedComdatCopiesAndExceptions) {
  Program p;
  p.compiler = "clang++-19";
  p.flags = "-O1 -g";
  p.files = {{"shapes.cc", kShapes}, {"main.cc", kShapesMain}};
  PatchResult r = patchEdit(p, edited(kShapes, "+ 17", "+ 19"));
  expectLldsBytes(r);
  EXPECT_EQ(sh("./patched | grep -q 'n '"), 0);
}

TEST_F(RelinkPatchTest, ASharedObjectReachesItsOwnGlobalsThroughThePlt) {
  Program p = counterProgram("-O2 -fPIC", "-shared");
  p.files.pop_back(); // no main
  p.output = "libcounter.so";
  PatchResult r = patchEdit(p, edited(kCounter, "+ 11 +", "+ 13 +"));
  expectLldsBytes(r);
}

// A program of several 1 MiB chunks: the first patch hashes every chunk
// and returns the hashes; the next patch, given them, hashes only the
// chunks its edits touch, and both give LLD's build-id. Kept hashes are
// used only when they hash to the build-id: a stale set is ignored.
TEST_F(RelinkPatchTest, KeptChunkHashesGiveLldsBuildId) {
  for (const char *kind : {"sha1", "fast"}) {
    SCOPED_TRACE(kind);
    Program p = counterProgram("-O2", std::string("-Wl,--build-id=") + kind);
    p.files.push_back({"pad.c", "const char pad[3 << 20] = {1};\n"});
    PatchResult first = patchEdit(p, edited(kCounter, "+ 11 +", "+ 13 +"));
    expectLldsBytes(first);
    size_t chunks = (full.size() + (1u << 20) - 1) >> 20;
    ASSERT_GE(chunks, 4u);
    ASSERT_EQ(first.chunkHashes.size(), chunks * (kind[0] == 'f' ? 8 : 20));
    // The next edit, from the patched output (same layout, same map).
    std::string base = patched, before = read("counter.o");
    p.files.front().second = edited(kCounter, "+ 11 +", "+ 17 +");
    ASSERT_TRUE(build(p, "unused.map"));
    std::string want = read(p.output), after = read("counter.o");
    auto map = LinkMap::parse(read("old.map"));
    ASSERT_TRUE(static_cast<bool>(map));
    auto patchWith = [&](const std::string &output,
                         const std::vector<uint8_t> &kept) {
      PatchInputs in;
      in.oldOutput = llvm::MemoryBufferRef(output, "prog");
      in.map = &*map;
      in.objectName = "counter.o";
      in.oldObject = llvm::MemoryBufferRef(before, "old.o");
      in.newObject = llvm::MemoryBufferRef(after, "new.o");
      in.oldChunkHashes = kept;
      return patchOutput(in);
    };
    PatchResult second = patchWith(base, first.chunkHashes);
    ASSERT_TRUE(second.patched) << second.kind << ": " << second.reason;
    EXPECT_TRUE(applyEdits(base, second.edits) == want);
    EXPECT_EQ(second.chunkHashes.size(), first.chunkHashes.size());
    // Computed ahead of a patch (after a full link): the patch's own.
    EXPECT_EQ(buildIdChunkHashes(base), first.chunkHashes);
    EXPECT_EQ(buildIdChunkHashes(want), second.chunkHashes);
    // A stale set (one hash changed) is not used: every chunk is hashed.
    std::vector<uint8_t> stale = first.chunkHashes;
    stale[stale.size() / 2] ^= 1;
    PatchResult fresh = patchWith(base, stale);
    ASSERT_TRUE(fresh.patched) << fresh.kind << ": " << fresh.reason;
    EXPECT_TRUE(applyEdits(base, fresh.edits) == want);
    EXPECT_EQ(fresh.chunkHashes, second.chunkHashes);
    // The kept hashes are what the patch uses: with a byte of the padding
    // changed behind the build-id's back, hashing every chunk finds the id
    // is no hash of the file, while the kept hashes still give LLD's id.
    std::string tampered = base;
    size_t padAt = tampered.find("\1" + std::string(4096, '\0'));
    ASSERT_NE(padAt, std::string::npos);
    size_t at = padAt + (3u << 19); // mid-pad: a chunk no edit touches
    tampered[at] = 7;
    EXPECT_EQ(patchWith(tampered, {}).kind, "build_id");
    PatchResult kept = patchWith(tampered, first.chunkHashes);
    ASSERT_TRUE(kept.patched) << kept.kind << ": " << kept.reason;
    std::string out = applyEdits(tampered, kept.edits);
    out[at] = 0;
    EXPECT_TRUE(out == want) << "the build-id differs from LLD's";
  }
}

TEST_F(RelinkPatchTest, EachReasonForAFullLink) {
  // A section that changes size moves what follows it.
  PatchResult grown =
      patchEdit(counterProgram("-O2"),
                edited(kCounter, "counter += x;", "counter += x * x - 1;"));
  EXPECT_FALSE(grown.patched);
  EXPECT_TRUE(grown.kind == "section_resized" ||
              grown.kind == "section_outgrew" ||
              grown.kind == "eh_frame_changed")
      << grown.kind << ": " << grown.reason;
  // A string is a piece of a merged section.
  PatchResult str = patchEdit(counterProgram("-O2"),
                              edited(kCounter, "\"alpha\"", "\"omega\""));
  EXPECT_EQ(str.kind, "merged_changed") << str.reason;
  // A build-id that is not a hash of the output.
  PatchResult uuid = patchEdit(counterProgram("-O2", "-Wl,--build-id=uuid"),
                               edited(kCounter, "+ 11 +", "+ 13 +"));
  EXPECT_EQ(uuid.kind, "build_id") << uuid.reason;
  EXPECT_NE(uuid.reason.find("uuid"), std::string::npos) << uuid.reason;
  EXPECT_TRUE(buildIdChunkHashes(full).empty());
  EXPECT_TRUE(buildIdChunkHashes("not an ELF file").empty());
  EXPECT_TRUE(buildIdChunkHashes(full.substr(0, 100)).empty());
}

TEST_F(RelinkPatchTest, AnObjectTheMapDoesNotNameIsNotPlaced) {
  Program p = counterProgram("-O2");
  ASSERT_TRUE(build(p, "old.map"));
  std::string object = read("counter.o"), output = read("prog");
  auto map = LinkMap::parse(read("old.map"));
  ASSERT_TRUE(static_cast<bool>(map));
  write("counter.c", edited(kCounter, "+ 11 +", "+ 13 +"));
  ASSERT_EQ(sh("clang-19 -O2 -c counter.c -o counter.o"), 0);
  PatchResult r =
      patch(output, *map, "elsewhere/counter.o", object, read("counter.o"));
  EXPECT_EQ(r.kind, "not_placed") << r.reason;
  EXPECT_NE(r.reason.find("elsewhere/counter.o"), std::string::npos)
      << r.reason;
}

// Maps and outputs are read as hostile: a lie is a reason, never a write
// outside the output.
TEST_F(RelinkPatchTest, HostileMapsAndOutputsAreReasons) {
  EXPECT_FALSE(static_cast<bool>(LinkMap::parse("")));
  auto bad = LinkMap::parse("garbage\n");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("not an LLD link map"),
            std::string::npos);
  auto shortLine = LinkMap::parse(
      "             VMA              LMA     Size Align Out     In      "
      "Symbol\n  12 short\n");
  EXPECT_FALSE(static_cast<bool>(shortLine));
  llvm::consumeError(shortLine.takeError());

  Program p = counterProgram("-O2");
  ASSERT_TRUE(build(p, "old.map"));
  std::string object = read("counter.o"), output = read("prog");
  write("counter.c", edited(kCounter, "+ 11 +", "+ 13 +"));
  ASSERT_EQ(sh("clang-19 -O2 -c counter.c -o counter.o"), 0);
  std::string after = read("counter.o");
  // The map moves counter.o's .text far past the end of the output.
  std::string text = read("old.map");
  size_t line = text.find("counter.o:(.text)");
  ASSERT_NE(line, std::string::npos);
  size_t start = text.rfind('\n', line) + 1;
  text.replace(start, 16, "    7fffffff0000");
  auto lying = LinkMap::parse(text);
  ASSERT_TRUE(static_cast<bool>(lying));
  PatchResult r = patch(output, *lying, "counter.o", object, after);
  EXPECT_FALSE(r.patched);
  EXPECT_EQ(r.kind, "not_placed") << r.reason;
  // An output cut short.
  auto map = LinkMap::parse(read("old.map"));
  ASSERT_TRUE(static_cast<bool>(map));
  PatchResult c = patch(output.substr(0, output.size() / 3), *map, "counter.o",
                        object, after);
  EXPECT_FALSE(c.patched);
  EXPECT_TRUE(c.kind == "unreadable" || c.kind == "not_placed") << c.kind;
}

// The edited file of the moves: its first function grows within its slot,
// so every function after it moves; another file calls them, takes their
// addresses into data (dynamic relocations in a PIE) and reads a table of
// them through the GOT.
const std::string kMoving = R"(
#include <stdio.h>
static int calls;
int limit = 4;
int grow(int x) {
  int s = 0;
  for (int i = 0; i < x; ++i)
    s += i * limit;
  return s;
}
static int __attribute__((noinline)) twice(int x) { return 2 * x + limit; }
int (*hooks[])(int) = {grow, twice};
int after(int x) { return twice(x) + grow(x) + ++calls; }
const char *label(void) { return "moving"; }
)";

const std::string kMovingUser = R"(
#include <stdio.h>
extern int grow(int), after(int);
extern int (*hooks[])(int);
extern const char *label(void);
int (*mine[])(int) = {after, grow};
int use(int n) {
  int s = 0;
  for (int i = 0; i < n; ++i)
    s += mine[i % 2](i) + hooks[i % 2](i) + grow(i);
  printf("%s %d\n", label(), s);
  return s;
}
)";

const std::string kMovingMain = R"(
extern int use(int);
extern int after(int);
int main(void) { return use(6) + after(2) > 0 ? 0 : 1; }
)";

class RelinkMoveTest : public RelinkPatchTest {
protected:
  // Compiles `p`'s files and pads each object in place to the slots of
  // `policy` (the first file's to `firstSlots` when given): what the
  // daemon hands LLD in an incremental link with slack.
  bool compilePadded(const Program &p, const SlackPolicy &policy,
                     const std::vector<Slot> *firstSlots = nullptr) {
    objects.clear();
    for (const auto &[name, source] : p.files) {
      bool isEdited = objects.size() == editedFile;
      write(name, source);
      std::string obj = name.substr(0, name.rfind('.')) + ".o";
      if (sh(p.compiler + " " + p.flags + " -c " + name + " -o " + obj) != 0)
        return false;
      std::string bytes = read(obj);
      llvm::MemoryBufferRef ref(bytes, obj);
      auto slots = slotsOf(ref, policy);
      if (!slots)
        return ADD_FAILURE() << llvm::toString(slots.takeError()), false;
      auto padded =
          padObject(ref, firstSlots && isEdited ? *firstSlots : *slots);
      if (!padded)
        return ADD_FAILURE() << llvm::toString(padded.takeError()), false;
      write(obj, *padded);
      objects.push_back(obj);
    }
    return true;
  }
  bool link(const Program &p, const std::string &mapName) {
    std::string all;
    for (const std::string &o : objects)
      all += " " + o;
    // gcc's -fuse-ld=lld finds the system's ld.lld, which need not be LLD
    // 19: its `ld` from a directory of LLD 19's instead.
    std::string linker = "-fuse-ld=lld";
    if (p.compiler == "gcc") {
      if (sh("mkdir -p lld19 && ln -sf /usr/lib/llvm-19/bin/ld.lld lld19/ld") !=
          0)
        return false;
      linker = "-B" + dir + "/lld19/";
    }
    return sh(p.compiler + " " + linker + " " + p.linkFlags + " -Wl,-Map," +
              mapName + all + " -o " + p.output) == 0;
  }

  // Links `p` padded, edits its file `editedFile` (the first unless set) to
  // `after` (padded to the first version's slots), links in full (LLD's
  // answer in `full`) and patches, the other objects given as the daemon
  // gives them.
  PatchResult patchMove(Program p, const std::string &after,
                        const SlackPolicy &policy = {25, 64}) {
    EXPECT_TRUE(compilePadded(p, policy));
    EXPECT_TRUE(link(p, "old.map"));
    std::string first = objects.at(editedFile);
    std::string oldObject = read(first), oldOutput = read(p.output);
    std::string mapText = read("old.map");
    auto map = LinkMap::parse(mapText, first);
    auto fullMap = LinkMap::parse(mapText);
    EXPECT_TRUE(map && fullMap);
    if (!map || !fullMap) {
      llvm::consumeError(map.takeError());
      llvm::consumeError(fullMap.takeError());
      return {};
    }
    std::vector<OtherInput> others;
    std::deque<std::string> bytes; // behind `others`
    for (size_t i = 0; i < objects.size(); ++i)
      if (i != editedFile)
        others.push_back({objects[i], bytes.emplace_back(read(objects[i])),
                          &*fullMap, i < editedFile});
    auto slots = slotsOf(llvm::MemoryBufferRef(oldObject, first), {});
    EXPECT_TRUE(static_cast<bool>(slots));
    if (!slots) {
      llvm::consumeError(slots.takeError());
      return {};
    }
    p.files.at(editedFile).second = after;
    EXPECT_TRUE(compilePadded(p, policy, &*slots));
    EXPECT_TRUE(link(p, "new.map"));
    full = read(p.output);
    std::string newObject = read(first);
    PatchInputs in;
    in.oldOutput = llvm::MemoryBufferRef(oldOutput, "old-output");
    in.map = &*map;
    in.objectName = first;
    in.oldObject = llvm::MemoryBufferRef(oldObject, "old.o");
    in.newObject = llvm::MemoryBufferRef(newObject, "new.o");
    in.otherInputs = [&](const std::set<std::string> &,
                         std::vector<OtherInput> &out) {
      ++othersAsked;
      out = others;
      return std::string();
    };
    PatchResult r = patchOutput(in);
    if (r.patched) {
      patched = applyEdits(oldOutput, r.edits);
      std::ofstream(dir + "/patched", std::ios::binary) << patched;
      sh("chmod +x patched");
    }
    return r;
  }

  // The moving program built by `compiler` with `flags`, its first file
  // edited to `after`: a patch that is LLD's bytes and runs as LLD's link.
  PatchResult patchWith(const std::string &compiler, const std::string &flags,
                        const std::string &after,
                        const SlackPolicy &policy = {25, 64},
                        const std::string &linkFlags = "") {
    SCOPED_TRACE(compiler + " " + linkFlags);
    Program p = movingProgram(flags, linkFlags);
    p.compiler = compiler;
    PatchResult r = patchMove(p, after, policy);
    expectLldsBytes(r);
    expectSameRun("moving ");
    return r;
  }

  Program movingProgram(const std::string &flags,
                        const std::string &linkFlags = "") {
    Program p;
    p.flags = flags;
    p.linkFlags = linkFlags;
    p.files = {
        {"grow.c", kMoving}, {"user.c", kMovingUser}, {"main.c", kMovingMain}};
    return p;
  }

  // 600 patches of `flags`' moving program, edited to `edit`, with a byte
  // or more of its output, map, objects or another object mutated: each
  // refused with its kind or written inside the output.
  void mutateMoves(const std::string &flags, const std::string &edit,
                   const SlackPolicy &policy);

  std::vector<std::string> objects;
  size_t editedFile = 0; // the index of the file patchMove edits
  int othersAsked = 0;
};

// grow() gains a local (with -g: its DIE, name and locations; clang keeps
// the loop's code in one range, where grown()'s needs a .debug_rnglists
// the object did not have).
std::string withLocal() {
  return edited(kMoving, "s += i * limit;",
                "s += i * limit;\n    int excess_over_bound = s - x;\n"
                "    if (excess_over_bound > 1000)\n      s -= 7;");
}

std::string grown() {
  return edited(kMoving, "s += i * limit;",
                "s += i * limit;\n    if (s > 1000 + x)\n      s -= x * 3 + "
                "limit;");
}

// A function that grew within its slot moves the ones after it: the
// patch follows them in .symtab, in the other objects' calls and tables,
// in the dynamic relocations of a PIE, in .eh_frame and .eh_frame_hdr,
// and the output is LLD's link of the same padded objects.
TEST_F(RelinkMoveTest, SymbolsThatMoveWithinTheirSlotAreFollowed) {
  const Layout cases[] = {
      {"-O2", ""},
      {"-O2", "-no-pie"},
      {"-O1", "-Wl,-z,pack-relative-relocs"},
      {"-O2", "-Wl,--export-dynamic -Wl,--build-id=md5"},
      {"-O2 -fno-pic", "-no-pie -Wl,--hash-style=both"},
      {"-O2 -ffunction-sections", "-Wl,--gc-sections"},
  };
  for (const Layout &c : cases) {
    SCOPED_TRACE(std::string(c.flags) + " | " + c.linkFlags);
    othersAsked = 0;
    PatchResult r = patchMove(movingProgram(c.flags, c.linkFlags), grown());
    expectLldsBytes(r);
    expectSameRun("moving ");
    EXPECT_GT(r.symbolsMoved, 0u) << "the edit moved nothing";
    // With a section per function only grow's size changes: no global
    // moves, and the other objects are not read.
    bool own =
        std::string(c.flags).find("function-sections") != std::string::npos;
    EXPECT_EQ(othersAsked, own ? 0 : 1);
  }
}

// A variable whose initializer became zero moves from .data to .bss (both
// padded): its symbol changes section in the output's symbol table too.
// gcc keeps the object's sections in their order (an emptied .data stays);
// clang drops an empty .data and orders sections as their first variables
// come, which the patch does not follow yet (sections_changed).
TEST_F(RelinkMoveTest, AVariableMovesFromDataToBss) {
  for (const Layout &c : {Layout{"-O2", ""}, Layout{"-O2", "-no-pie"},
                          Layout{"-O1", "-Wl,--export-dynamic"}}) {
    SCOPED_TRACE(std::string(c.flags) + " | " + c.linkFlags);
    Program p = movingProgram(c.flags, c.linkFlags);
    p.compiler = "gcc";
    PatchResult r =
        patchMove(p, edited(kMoving, "int limit = 4;", "int limit = 0;"));
    expectLldsBytes(r);
    expectSameRun("moving ");
    EXPECT_GT(r.symbolsMoved, 0u);
  }
}

// With -g, an edit that grows code grows the object's debug info too: a
// new local and its name, its location list, more line rows. Each DWARF
// section has room of its own (debug_room.h), so the patch writes them
// in place, and the output is LLD's link of the same padded objects; gdb
// names the new local in the patched program.
TEST_F(RelinkMoveTest, DebugInfoGrowsWithinItsRoom) {
  for (const char *compiler : {"clang-19", "gcc"}) {
    // A new local is 124 more bytes of gcc's location lists (132 before).
    PatchResult r = patchWith(compiler, "-O2 -g", withLocal(), {50, 128});
    EXPECT_GT(r.symbolsMoved, 0u);
    // The first program had no such local: its DIE, name and locations
    // are the patch's.
    EXPECT_EQ(sh("gdb -nx -batch -ex 'break grow' -ex run -ex 'info "
                 "locals' ./patched > gdb.out 2>&1"),
              0);
    EXPECT_NE(read("gdb.out").find("excess_over_bound"), std::string::npos)
        << read("gdb.out");
  }
  // Linked without debug sections (-Wl,--strip-debug): nothing of them to
  // write.
  patchWith("clang-19", "-O2 -g", withLocal(), {50, 128}, "-Wl,--strip-debug");
}

// A function that keeps more values across its calls saves more
// registers: its FDE grows within the room the padder left in it, the
// functions after it move, and the patch writes the new unwind program
// with the moved FDEs; the output is LLD's link of the same objects.
TEST_F(RelinkMoveTest, AGrownUnwindRecordIsWrittenInPlace) {
  const std::string savesMore = edited(
      kMoving, "int after(int x) { return twice(x) + grow(x) + ++calls; }",
      "int after(int x) {\n  int a = twice(x), b = twice(a + x);\n  return a "
      "* b + grow(b) + ++calls;\n}");
  for (const Layout &c : {Layout{"-O2", ""}, Layout{"-O2", "-no-pie"}}) {
    SCOPED_TRACE(std::string(c.flags) + " | " + c.linkFlags);
    PatchResult r = patchMove(movingProgram(c.flags, c.linkFlags), savesMore);
    expectLldsBytes(r);
    expectSameRun("moving ");
    EXPECT_GT(r.symbolsMoved, 0u);
  }
}

// A first call to a function the link already resolves (getpid, which
// another object calls) is answered as that object's call was: through
// the same PLT entry, or its GOT slot. Only when an object LLD read
// earlier names it: else LLD would insert the symbol while reading this
// object, and order the symbol table and PLT differently (a reason).
TEST_F(RelinkMoveTest, ANewReferenceToAResolvedGlobalIsFollowed) {
  const std::string caller = R"(
#include <unistd.h>
int early(void) { return getpid() == 1; }
)";
  // (No new string: clang would put its section first in the object.)
  const std::string calls = edited(
      edited(kMoving, "#include <stdio.h>",
             "#include <stdio.h>\n#include <unistd.h>"),
      "  return s;\n}", "  if (getpid() == 1)\n    s += 1;\n  return s;\n}");
  for (const Layout &c :
       {Layout{"-O2", ""}, Layout{"-O2", "-no-pie"}, Layout{"-O2 -fno-plt", ""},
        Layout{"-O2 -fPIC", "-shared"}}) {
    SCOPED_TRACE(std::string(c.flags) + " | " + c.linkFlags);
    Program p = movingProgram(c.flags, c.linkFlags);
    p.files.insert(p.files.begin(), {"early.c", caller});
    if (std::string(c.linkFlags) == "-shared") {
      p.files.pop_back(); // no main
      p.output = "libmoving.so";
    }
    editedFile = 1;
    PatchResult r = patchMove(p, calls);
    expectLldsBytes(r);
    if (std::string(c.linkFlags) != "-shared")
      expectSameRun("moving ");
  }
  // The caller after the edited object: LLD meets getpid first in it now.
  Program p = movingProgram("-O2");
  p.files.insert(p.files.begin() + 1, {"early.c", caller});
  editedFile = 0;
  expectRefused(patchMove(p, calls), "new_reference", "getpid");
}

// The other way: the edited object's call removed, its last mention of
// getpid. The output keeps the symbol, its place and its entries while an
// object read before names it and other code still needs each of them:
// LLD's bytes. Else LLD would drop or move them: a full link that says
// why (the caller after the edited object; an earlier object that only
// takes getpid's address, through the GOT, so that nothing else needs the
// PLT entry the call went through).
TEST_F(RelinkMoveTest, AGoneReferenceToAGlobalOthersStillNeedIsFollowed) {
  const std::string caller = R"(
#include <unistd.h>
int early(void) { return getpid() == 1; }
)";
  const std::string withUnistd = edited(
      kMoving, "#include <stdio.h>", "#include <stdio.h>\n#include <unistd.h>");
  const std::string calls =
      edited(withUnistd, "  return s;\n}",
             "  if (getpid() == 1)\n    s += 1;\n  return s;\n}");
  auto program = [&](const Layout &c, const std::string &first, size_t at) {
    Program p = movingProgram(c.flags, c.linkFlags);
    p.files.insert(p.files.begin() + static_cast<std::ptrdiff_t>(at),
                   {"early.c", first});
    editedFile = at == 0 ? 1 : 0;
    p.files.at(editedFile).second = calls;
    if (std::string(c.linkFlags) == "-shared") {
      p.files.pop_back(); // no main
      p.output = "libmoving.so";
    }
    return p;
  };
  for (const Layout &c :
       {Layout{"-O2", ""}, Layout{"-O2", "-no-pie"}, Layout{"-O2 -fno-plt", ""},
        Layout{"-O2 -fPIC", "-shared"}}) {
    SCOPED_TRACE(std::string(c.flags) + " | " + c.linkFlags);
    PatchResult r = patchMove(program(c, caller, 0), withUnistd);
    expectLldsBytes(r);
    if (std::string(c.linkFlags) != "-shared")
      expectSameRun("moving ");
  }
  expectRefused(patchMove(program({"-O2", ""}, caller, 1), withUnistd),
                "new_reference", "getpid is gone");
  const std::string address = R"(
#include <unistd.h>
void *early(void) { return (void *)getpid; }
)";
  expectRefused(patchMove(program({"-O2", ""}, address, 0), withUnistd),
                "new_reference", "no other object needs");
  // A thread-local variable's last use gone, another object still using
  // it the same way (a PIE, a shared object): LLD's bytes if patched, and
  // a reason if not; never a wrong output.
  const std::string tlsUser = R"(
extern __thread int tls_count;
int early(void) { return ++tls_count; }
__thread int tls_count;
)";
  const std::string usesTls =
      edited(withUnistd, "  return s;\n}",
             "  extern __thread int tls_count;\n  s += tls_count;\n  return "
             "s;\n}");
  for (const Layout &c : {Layout{"-O2", ""}, Layout{"-O2 -fPIC", "-shared"}}) {
    SCOPED_TRACE(std::string("tls ") + c.flags + " | " + c.linkFlags);
    Program p = program(c, tlsUser, 0);
    p.files.at(editedFile).second = usesTls;
    PatchResult r = patchMove(p, withUnistd);
    if (r.patched)
      expectLldsBytes(r);
    else
      EXPECT_EQ(r.kind, "new_reference") << r.reason;
  }
}

// A new string: LLD would merge it with every object's strings and move
// every later one, so the padder hands the object's strings to LLD as its
// own (not mergeable, their labels section symbols, room after them). The
// new string fits that room, the code that reads the strings is written
// again, and the output is LLD's link of the same padded objects.
TEST_F(RelinkMoveTest, ANewStringFitsTheObjectsOwnStrings) {
  const std::string newString =
      edited(kMoving, "const char *label(void) { return \"moving\"; }",
             "const char *label(void) { return calls > 100 ? \"many moves\" "
             ": \"moving\"; }");
  for (const char *compiler : {"clang-19", "gcc"})
    patchWith(compiler, "-O2", newString);
}

TEST_F(RelinkMoveTest, ASharedObjectsMovedExportsAreFollowed) {
  Program p = movingProgram("-O2 -fPIC", "-shared");
  p.files.pop_back(); // no main
  p.output = "libmoving.so";
  PatchResult r = patchMove(p, grown());
  expectLldsBytes(r);
  EXPECT_GT(r.symbolsMoved, 0u);
}

TEST_F(RelinkMoveTest, CxxExceptionsMoveWithTheirFunctions) {
  Program p;
  p.compiler = "clang++-19";
  p.flags = "-O1";
  p.files = {{"shapes.cc", kShapes}, {"main.cc", kShapesMain}};
  PatchResult r =
      patchMove(p, edited(kShapes, "+ 17);", "+ 17 + (i & 3) * n);"));
  expectLldsBytes(r);
  EXPECT_EQ(sh("./patched | grep -q 'n '"), 0);
}

// What a move cannot be followed through is a reason: an alias the
// command line defines at a moved address, and a move without the other
// objects.
TEST_F(RelinkMoveTest, MovesItCannotFollowAreReasons) {
  PatchResult alias =
      patchMove(movingProgram("-O2", "-Wl,--defsym=also_after=after"), grown());
  EXPECT_EQ(alias.kind, "symbols_moved") << alias.reason;
  EXPECT_NE(alias.reason.find("also_after"), std::string::npos) << alias.reason;

  Program p = movingProgram("-O2");
  SlackPolicy policy{25, 64};
  ASSERT_TRUE(compilePadded(p, policy));
  ASSERT_TRUE(link(p, "old.map"));
  std::string before = read("grow.o"), output = read("prog");
  auto map = LinkMap::parse(read("old.map"), "grow.o");
  ASSERT_TRUE(static_cast<bool>(map));
  auto slots = slotsOf(llvm::MemoryBufferRef(before, "grow.o"), {});
  ASSERT_TRUE(static_cast<bool>(slots));
  p.files.front().second = grown();
  ASSERT_TRUE(compilePadded(p, policy, &*slots));
  PatchResult blind = patch(output, *map, "grow.o", before, read("grow.o"));
  EXPECT_EQ(blind.kind, "symbols_moved") << blind.reason;
  EXPECT_NE(blind.reason.find("other objects"), std::string::npos)
      << blind.reason;
}

// Every input mutated at random (a seeded generator: the same mutations
// each run): no crash, no read outside the inputs (the sanitizer build runs
// this test), and a patch never writes outside the output.
TEST_F(RelinkPatchTest, MutatedInputsNeverCrashOrWriteOutside) {
  Program p = counterProgram("-O2 -g");
  ASSERT_TRUE(build(p, "old.map"));
  std::string object = read("counter.o"), output = read("prog"),
              mapText = read("old.map");
  write("counter.c", edited(kCounter, "+ 11 +", "+ 13 +"));
  ASSERT_EQ(sh("clang-19 -O2 -g -c counter.c -o counter.o"), 0);
  std::string after = read("counter.o");
  size_t mapLines = mapText.find("counter.o:(");
  ASSERT_NE(mapLines, std::string::npos);
  std::mt19937_64 rng(seed(20261206));
  int patched = 0, refused = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string o = output, m = mapText, a = object, b = after;
    std::string *victims[] = {&o, &m, &a, &b};
    std::string &v = *victims[i % 4];
    for (uint64_t f = 0, flips = 1 + rng() % 8; f < flips; ++f) {
      // Mostly where it matters: ELF headers and tables near the start or
      // the end, the replaced object's lines of the map.
      uint64_t at = rng();
      if (&v == &m)
        at = mapLines + at % 4096;
      else if (at % 3 == 0)
        at = at % std::min<size_t>(v.size(), 4096);
      else if (at % 3 == 1)
        at = v.size() - 1 - at % std::min<size_t>(v.size(), 8192);
      v[at % v.size()] = static_cast<char>(rng());
    }
    auto map = LinkMap::parse(m, "counter.o");
    if (!map) {
      llvm::consumeError(map.takeError());
      continue;
    }
    tally(patch(o, *map, "counter.o", a, b), o.size(), patched, refused);
  }
  report(patched, refused);
}

// The moves' readers (the map's .eh_frame runs, the output's symbol
// tables, .eh_frame, .eh_frame_hdr and dynamic relocations, the other
// objects) against mutated inputs: no crash, no write outside the output.
TEST_F(RelinkMoveTest, MutatedMovesNeverCrashOrWriteOutside) {
  // Without and with debug sections (their room, strings of their own).
  mutateMoves("-O2", grown(), {25, 64});
  mutateMoves("-O2 -g", withLocal(), {50, 128});
}

void RelinkMoveTest::mutateMoves(const std::string &flags,
                                 const std::string &edit,
                                 const SlackPolicy &policy) {
  SCOPED_TRACE(flags);
  Program p = movingProgram(flags);
  ASSERT_TRUE(compilePadded(p, policy));
  ASSERT_TRUE(link(p, "old.map"));
  std::string object = read("grow.o"), output = read("prog"),
              mapText = read("old.map"), user = read("user.o");
  auto slots = slotsOf(llvm::MemoryBufferRef(object, "grow.o"), {});
  ASSERT_TRUE(static_cast<bool>(slots));
  p.files.front().second = edit;
  ASSERT_TRUE(compilePadded(p, policy, &*slots));
  std::string after = read("grow.o");
  std::mt19937_64 rng(seed(20261207));
  int patched = 0, refused = 0;
  for (int i = 0; i < 600; ++i) {
    std::string o = output, m = mapText, a = object, b = after, u = user;
    std::string *victims[] = {&o, &m, &a, &b, &u};
    std::string &v = *victims[i % 5];
    for (uint64_t f = 0, flips = 1 + rng() % 6; f < flips; ++f) {
      uint64_t at = rng();
      if (at % 2 == 0)
        at = v.size() - 1 - at % std::min<size_t>(v.size(), 16384);
      v[at % v.size()] = static_cast<char>(rng());
    }
    auto map = LinkMap::parse(m, "grow.o");
    auto all = LinkMap::parse(m);
    if (!map || !all) {
      llvm::consumeError(map.takeError());
      llvm::consumeError(all.takeError());
      continue;
    }
    PatchInputs in;
    in.oldOutput = llvm::MemoryBufferRef(o, "prog");
    in.map = &*map;
    in.objectName = "grow.o";
    in.oldObject = llvm::MemoryBufferRef(a, "old.o");
    in.newObject = llvm::MemoryBufferRef(b, "new.o");
    in.otherInputs = [&](const std::set<std::string> &,
                         std::vector<OtherInput> &out) {
      out.push_back({"user.o", u, &*all});
      return std::string();
    };
    tally(patchOutput(in), o.size(), patched, refused);
  }
  report(patched, refused);
}

} // namespace
} // namespace linkd::incremental
