// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The padder of an incremental first link against LLD: objects compiled by
// clang-19 and g++ from C and C++ (COMDAT groups, exceptions, TLS,
// -ffunction-sections, -g) are padded to their slots; each padded section
// has its slot's size and keeps its bytes, relocations and symbols; LLD
// links the padded objects into a program that prints what the original
// prints. A later version whose code grew fits the first version's slots;
// one that grew past them is refused by name.
#include "incremental/elf_object.h"
#include "incremental/padding.h"
#include "scratch_dir.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace linkd::incremental {
namespace {

const std::string kCounter = R"(
#include <stdio.h>
int g = 3;
static int counter;
__thread int tcount;
static const char *names[] = {"alpha", "beta", "gamma"};
int step(int x) {
  counter += x;
  ++tcount;
  return x * 7 + g + 11 + (int)names[x % 3][0];
}
void show(void) { printf("%s %d %d\n", names[counter % 3], counter, tcount); }
)";

const std::string kCxx = R"(
#include <stdexcept>
#include <string>
template <class T> T twice(T v) { return v + v; }
inline int shared(int x) { return x * 5; }
extern "C" int measure(int n) {
  try {
    if (n > 100)
      throw std::runtime_error("too big: " + std::to_string(n));
    return twice(n) + shared(n);
  } catch (const std::exception &e) {
    return -static_cast<int>(std::string(e.what()).size());
  }
}
)";

const std::string kMain = R"(
#include <stdio.h>
int step(int);
void show(void);
int measure(int);
int main(void) {
  int sum = 1000;
  for (int i = 0; i < 4; ++i)
    sum += step(i);
  printf("%d %d %d\n", sum, measure(7), measure(1000));
  show();
  return 0;
}
)";

class PaddingTest : public ScratchDirTest {
protected:
  // Pads `object` to `slots` into `out`; the error's text, or "".
  std::string pad(const std::string &object, const std::vector<Slot> &slots,
                  const std::string &out) {
    std::string bytes = read(object);
    auto padded = padObject(llvm::MemoryBufferRef(bytes, object), slots);
    if (!padded)
      return llvm::toString(padded.takeError());
    write(out, *padded);
    return "";
  }

  std::vector<Slot> slots(const std::string &object,
                          const SlackPolicy &policy) {
    std::string bytes = read(object);
    auto s = slotsOf(llvm::MemoryBufferRef(bytes, object), policy);
    EXPECT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
    return s ? *s : std::vector<Slot>{};
  }

  // What LLD sees of an object besides its sections' sizes: every symbol
  // (name, info, section name, value, size), every relocation by section.
  using Shape =
      std::tuple<std::vector<std::tuple<std::string, uint8_t, std::string,
                                        uint64_t, uint64_t>>,
                 std::map<std::string, std::vector<uint8_t>>>;
  Shape shape(const std::string &object) {
    std::string bytes = read(object);
    auto o = readElfObject(llvm::MemoryBufferRef(bytes, object));
    EXPECT_TRUE(static_cast<bool>(o));
    Shape s;
    if (!o) {
      llvm::consumeError(o.takeError());
      return s;
    }
    for (const auto &sym : o->symbols)
      // (A string's label becomes a section symbol: WhatCannotBePadded...)
      if (!llvm::StringRef(symbolName(*o, sym)).starts_with(".L") &&
          !isLabel(sym))
        std::get<0>(s).emplace_back(
            symbolName(*o, sym), sym.st_info,
            sym.st_shndx < o->names.size() ? o->names[sym.st_shndx] : "",
            sym.st_value, sym.st_size);
    for (size_t i = 0; i < o->sections.size(); ++i) {
      if (o->relocBytes[i].empty())
        continue;
      std::vector<uint8_t> &relocs = std::get<1>(s)[o->names[i]];
      // .eh_frame's follow its padded records: their number stays.
      if (o->names[i] == ".eh_frame")
        relocs.assign(o->relocs[i].size(), 0);
      else
        relocs.assign(o->relocBytes[i].begin(), o->relocBytes[i].end());
    }
    return s;
  }

  // Section name -> (size, bytes).
  std::map<std::string, std::pair<uint64_t, std::string>>
  sections(const std::string &object) {
    std::string bytes = read(object);
    auto o = readElfObject(llvm::MemoryBufferRef(bytes, object));
    std::map<std::string, std::pair<uint64_t, std::string>> m;
    if (!o) {
      llvm::consumeError(o.takeError());
      return m;
    }
    for (size_t i = 0; i < o->sections.size(); ++i)
      m[o->names[i]] = {
          o->sections[i].sh_size,
          std::string(reinterpret_cast<const char *>(o->contents[i].data()),
                      o->contents[i].size())};
    return m;
  }

  // `driver` links `plain` and `padded` (objects) with LLD into programs
  // that print the same, `marker` among it.
  void runsAsPlain(const std::string &driver, const std::string &plain,
                   const std::string &padded, const std::string &marker) {
    ASSERT_EQ(sh(driver + " -fuse-ld=lld " + plain + " -o plain && " + driver +
                 " -fuse-ld=lld " + padded +
                 " -o padded && ./plain > plain.out && ./padded > padded.out"),
              0);
    EXPECT_NE(read("plain.out").find(marker), std::string::npos)
        << read("plain.out");
    EXPECT_EQ(read("padded.out"), read("plain.out"));
  }
};

TEST_F(PaddingTest, PaddedObjectsLinkAndRunAsTheirOriginals) {
  write("counter.c", kCounter);
  write("measure.cpp", kCxx);
  write("main.c", kMain);
  const SlackPolicy policy{25, 64};
  for (const char *flags :
       {"-O2", "-O2 -g", "-O1 -ffunction-sections -fdata-sections", "-O0"}) {
    SCOPED_TRACE(flags);
    std::string f = flags;
    ASSERT_EQ(sh("clang-19 " + f + " -c counter.c main.c && clang++-19 " + f +
                 " -c measure.cpp"),
              0);
    ASSERT_EQ(sh("clang++-19 -fuse-ld=lld counter.o measure.o main.o -o "
                 "plain && ./plain > plain.out"),
              0);
    for (const char *obj : {"counter.o", "measure.o", "main.o"}) {
      std::vector<Slot> s = slots(obj, policy);
      ASSERT_FALSE(s.empty()) << obj;
      std::string out = std::string("padded-") + obj;
      ASSERT_EQ(pad(obj, s, out), "") << obj;
      EXPECT_TRUE(shape(obj) == shape(out)) << obj
                                            << ": symbols or "
                                               "relocations changed";
      auto before = sections(obj), after = sections(out);
      EXPECT_EQ(before.size(), after.size()) << obj;
      for (const Slot &slot : s) {
        SCOPED_TRACE(std::string(obj) + " " + slot.section);
        const auto &[size, bytes] = before[slot.section];
        EXPECT_EQ(after[slot.section].first, slot.size);
        // Debug sections are padded as DWARF (DebugSectionsHaveRoom...),
        // .eh_frame record by record (AGrownUnwindRecord...).
        if (slot.section == ".eh_frame") {
          EXPECT_GT(slot.size, size);
          continue;
        }
        EXPECT_GE(slot.size, size + size / 4 + 64);
        if (slot.section.rfind(".debug_", 0) != 0)
          EXPECT_TRUE(after[slot.section].second.substr(0, bytes.size()) ==
                      bytes);
      }
      // Everything without a slot keeps its size and bytes.
      for (const auto &[name, sec] : before)
        if (name != ".rela.eh_frame" && name != ".symtab" &&
            std::none_of(s.begin(), s.end(),
                         [&](const Slot &x) { return x.section == name; }))
          EXPECT_TRUE(after[name] == sec) << obj << " " << name;
    }
    EXPECT_EQ(sh("clang++-19 -fuse-ld=lld padded-counter.o padded-measure.o "
                 "padded-main.o -o padded && ./padded > padded.out && cmp "
                 "plain.out padded.out"),
              0)
        << read("padded.out");
  }
  EXPECT_NE(read("plain.out").find("1493 49 -13\nalpha 6 4"), std::string::npos)
      << read("plain.out");
}

// The next version of an object pads to the first one's slots: the same
// section sizes, so LLD places every section where it placed the first.
TEST_F(PaddingTest, AGrownEditFitsTheFirstSlotsAndOneTooBigIsNamed) {
  write("counter.c", kCounter);
  write("main.c", "int measure(int n) { return n; }\n" + kMain);
  ASSERT_EQ(sh("clang-19 -O2 -c main.c -o main.o && clang-19 -O2 -c "
               "counter.c -o counter.o"),
            0);
  std::vector<Slot> first = slots("counter.o", SlackPolicy{25, 64});
  ASSERT_EQ(pad("counter.o", first, "counter.padded.o"), "");
  // A new statement: the code grows by some bytes.
  std::string grown = kCounter;
  grown.replace(grown.find("  ++tcount;"), 11,
                "  ++tcount;\n  if (x == 2)\n    g += x * x;");
  write("counter.c", grown);
  ASSERT_EQ(sh("clang-19 -O2 -c counter.c -o grown.o"), 0);
  auto plain = sections("counter.o"), bigger = sections("grown.o");
  ASSERT_GT(bigger[".text"].first, plain[".text"].first) << "no growth";
  ASSERT_EQ(pad("grown.o", first, "grown.padded.o"), "");
  auto a = sections("counter.padded.o"), b = sections("grown.padded.o");
  for (const Slot &slot : first)
    EXPECT_EQ(a[slot.section].first, b[slot.section].first) << slot.section;
  ASSERT_EQ(sh("clang-19 -fuse-ld=lld grown.padded.o main.o -o grown && "
               "./grown > grown.out && clang-19 -fuse-ld=lld grown.o main.o "
               "-o want && ./want > want.out && cmp grown.out want.out"),
            0);

  // Past the slot: refused, naming the object and the section.
  std::string huge = kCounter;
  std::string body;
  for (int i = 0; i < 200; ++i)
    body += "  if (x == " + std::to_string(i) +
            ") g += " + std::to_string(i * 7) + ";\n";
  huge.replace(huge.find("  ++tcount;"), 11, "  ++tcount;\n" + body);
  write("counter.c", huge);
  ASSERT_EQ(sh("clang-19 -O0 -c counter.c -o huge.o"), 0);
  std::string e = pad("huge.o", first, "huge.padded.o");
  EXPECT_NE(e.find("huge.o: section .text ("), std::string::npos) << e;
  EXPECT_NE(e.find("outgrew its slot"), std::string::npos) << e;
}

// A function with locals whose ranges and locations need lists, inlined
// code, strings: every DWARF 5 section clang and gcc write.
const std::string kDebugged = R"(
#include <stdio.h>
#include <string.h>
struct point { int x, y; const char *label; };
static inline int norm(struct point p) { return p.x * p.x + p.y * p.y; }
int walk(int n, const char *tag) {
  struct point at = {n, n + 1, tag};
  int total = 0;
  for (int i = 0; i < n; ++i) {
    at.x += i;
    total += norm(at) % 97;
  }
  return total + (int)strlen(at.label);
}
)";

const std::string kDebugMain = R"(
#include <stdio.h>
int walk(int, const char *);
int main(int argc, char **argv) {
  (void)argv;
  printf("%d\n", walk(argc + 4, "steps"));
  return 0;
}
)";

// Each DWARF section of an object gets room its readers skip
// (debug_room.h): llvm-dwarfdump verifies the padded objects and the
// program LLD links from them without an error, readelf dumps them
// without a warning, and gdb stops, names the locals and lists the lines
// as in the program linked from the originals; a later version with a new
// local, a new statement and a renamed function fits the first slots and
// reads as cleanly.
TEST_F(PaddingTest, DebugSectionsHaveRoomReadersSkip) {
  // gcc's location lists grow by a third with the edit below.
  const SlackPolicy policy{50, 64};
  struct Build {
    const char *cc;
    std::vector<const char *> slotted; // sections that must get room
    // gcc's location lists carry views (DW_AT_GNU_locviews), one pair per
    // entry; the filler's entry has none, and readelf says it cannot look
    // for holes then (gdb and llvm-dwarfdump read views as before).
    bool views = false;
  };
  const std::vector<Build> builds = {
      {"clang-19 -O2 -g",
       {".debug_info", ".debug_abbrev", ".debug_line", ".debug_str",
        ".debug_line_str", ".debug_str_offsets", ".debug_addr",
        ".debug_loclists"}},
      {"gcc -O2 -g",
       {".debug_info", ".debug_abbrev", ".debug_line", ".debug_str",
        ".debug_line_str", ".debug_loclists", ".debug_rnglists"},
       true},
      {"clang-19 -O1 -g -gdwarf-4",
       {".debug_info", ".debug_abbrev", ".debug_line", ".debug_str"}},
  };
  // gdb's view, addresses left out (the padded program's differ).
  const std::string gdb =
      "gdb -nx -batch -ex 'break walk' -ex run -ex 'info locals' -ex bt "
      "-ex 'info line walk' -ex 'info source' -ex 'ptype struct point' ";
  const std::string addresses = " 2>&1 | sed -E 's/0x[0-9a-f]+/ADDR/g; "
                                "s/[0-9]+ bytes/N bytes/g' ";
  for (const Build &b : builds) {
    SCOPED_TRACE(b.cc);
    std::string cc = b.cc;
    write("walk.c", kDebugged);
    write("main.c", kDebugMain);
    ASSERT_EQ(sh(cc + " -c walk.c main.c && clang-19 -fuse-ld=lld walk.o "
                      "main.o -o plain"),
              0);
    std::vector<Slot> first = slots("walk.o", policy);
    for (const char *name : b.slotted)
      EXPECT_TRUE(std::any_of(first.begin(), first.end(),
                              [&](const Slot &x) { return x.section == name; }))
          << name << " has no slot";
    ASSERT_EQ(pad("walk.o", first, "walk.padded.o"), "");
    std::vector<Slot> mains = slots("main.o", policy);
    ASSERT_EQ(pad("main.o", mains, "main.padded.o"), "");
    ASSERT_EQ(sh("clang-19 -fuse-ld=lld walk.padded.o main.padded.o -o "
                 "padded"),
              0);
    auto clean = [&](const std::string &file) {
      SCOPED_TRACE(file);
      EXPECT_EQ(sh("llvm-dwarfdump-19 --verify " + file + " > verify.out 2>&1"),
                0)
          << read("verify.out");
      EXPECT_EQ(
          sh("readelf --debug-dump " + file + " > /dev/null 2> readelf.err"),
          0);
      std::string warnings = read("readelf.err");
      const std::string views = "readelf: Warning: Hole and overlap "
                                "detection requires adjacent view lists "
                                "and loclists.\n";
      for (size_t at;
           b.views && (at = warnings.find(views)) != std::string::npos;)
        warnings.erase(at, views.size());
      EXPECT_EQ(warnings, "");
      EXPECT_EQ(sh("llvm-dwarfdump-19 --debug-info --debug-line " + file +
                   " > /dev/null 2> dump.err"),
                0);
      EXPECT_EQ(read("dump.err"), "");
    };
    // gdb says of the padded program what it says of the plain one,
    // `marker` among it.
    auto sameInGdb = [&](const std::string &plain, const std::string &padded,
                         const std::string &marker) {
      ASSERT_EQ(sh(gdb + "./" + plain + addresses + "> " + plain + ".gdb"), 0);
      ASSERT_EQ(sh(gdb + "./" + padded + addresses + "> " + padded + ".gdb"),
                0);
      EXPECT_NE(read(padded + ".gdb").find(marker), std::string::npos)
          << read(padded + ".gdb");
      EXPECT_EQ(read(padded + ".gdb"), read(plain + ".gdb"));
    };
    for (const char *file : {"walk.padded.o", "main.padded.o", "padded"})
      clean(file);
    sameInGdb("plain", "padded", "at walk.c:");

    // The next version: a new local, a new statement, a renamed function.
    std::string next = kDebugged;
    next.replace(next.find("norm"), 4, "norm_squared");
    next.replace(next.find("norm(at)"), 4, "norm_squared");
    next.replace(next.find("  return total"), 0,
                 "  int spread = at.y - at.x;\n  if (spread < 0)\n"
                 "    total += spread * 3;\n");
    write("walk.c", next);
    ASSERT_EQ(sh(cc + " -c walk.c -o walk2.o && clang-19 -fuse-ld=lld "
                      "walk2.o main.o -o plain2"),
              0);
    ASSERT_EQ(pad("walk2.o", first, "walk2.padded.o"), "");
    auto a = sections("walk.padded.o"), c = sections("walk2.padded.o");
    for (const Slot &slot : first)
      EXPECT_EQ(c[slot.section].first, a[slot.section].first) << slot.section;
    ASSERT_EQ(sh("clang-19 -fuse-ld=lld walk2.padded.o main.padded.o -o "
                 "padded2"),
              0);
    for (const char *file : {"walk2.padded.o", "padded2"})
      clean(file);
    sameInGdb("plain2", "padded2", "spread");
  }
}

// Every size of room a later version can be left with: each filler
// (a DIE, list entries, line opcodes, zeros) takes exactly the room, and
// the padded object reads cleanly; a room of a byte or two that no filler
// fits is refused as outgrown, never written wrong.
TEST_F(PaddingTest, EveryRoomSizeReadsCleanly) {
  write("walk.c", kDebugged);
  for (const char *cc : {"clang-19 -O2 -g", "gcc -O2 -g"}) {
    SCOPED_TRACE(cc);
    ASSERT_EQ(sh(std::string(cc) + " -c walk.c -o walk.o"), 0);
    std::vector<Slot> sizes = slots("walk.o", SlackPolicy{});
    int refused = 0;
    for (uint64_t k = 0; k < 24; ++k) {
      SCOPED_TRACE(k);
      std::vector<Slot> s = sizes;
      for (Slot &slot : s) {
        if (slot.section.rfind(".debug_", 0) != 0)
          continue;
        uint64_t granule = slot.section == ".debug_addr"          ? 8
                           : slot.section == ".debug_str_offsets" ? 4
                                                                  : 1;
        // The filler's two abbreviations (17 bytes) come first.
        slot.size += (slot.section == ".debug_abbrev" ? 17 : 0) + k * granule;
      }
      std::string e = pad("walk.o", s, "walk.padded.o");
      if (!e.empty()) {
        EXPECT_NE(e.find("too little room for a filler"), std::string::npos)
            << e;
        EXPECT_LT(k, 4u) << e;
        ++refused;
        continue;
      }
      EXPECT_EQ(sh("llvm-dwarfdump-19 --verify walk.padded.o > verify.out "
                   "2>&1"),
                0)
          << read("verify.out");
      EXPECT_EQ(sh("readelf --debug-dump walk.padded.o 2>&1 >/dev/null | "
                   "grep -v 'requires adjacent view lists' > readelf.err; "
                   "test ! -s readelf.err"),
                0)
          << read("readelf.err");
    }
    EXPECT_LE(refused, 3);
  }
}

// A function that saves more registers after an edit has a longer unwind
// program: its FDE grows (32 to 48 bytes with clang-19 -O2 here). Padded
// with DW_CFA_nop, the first version's record has room for it; the
// padded program unwinds an exception through the function as the plain
// one does, and readelf and llvm-dwarfdump read the records without a
// word. An FDE that outgrew its slot is named.
TEST_F(PaddingTest, AGrownUnwindRecordFitsItsSlot) {
  const std::string v1 = R"(
extern int ext(int);
int twist(int x) { int a = ext(x); return a * x + 1; }
int steady(int x) { return ext(x) + 2; }
)";
  const std::string v2 = R"(
extern int ext(int);
int twist(int x) { int a = ext(x), b = ext(a + x); return a * x + ext(b) * b + 1; }
int steady(int x) { return ext(x) + 2; }
)";
  write("ext.cpp", R"(
#include <stdexcept>
extern "C" int ext(int x) {
  if (x > 40)
    throw std::runtime_error("too far");
  return x + 3;
}
)");
  write("main.cpp", R"(
#include <cstdio>
#include <stdexcept>
extern "C" int twist(int), steady(int);
int main() {
  for (int x : {1, 5, 30}) {
    try {
      std::printf("%d %d\n", twist(x), steady(x));
    } catch (const std::exception &e) {
      std::printf("caught %s at %d\n", e.what(), x);
    }
  }
}
)");
  ASSERT_EQ(sh("clang++-19 -O2 -c ext.cpp main.cpp"), 0);
  write("twist.c", v1);
  ASSERT_EQ(sh("clang-19 -O2 -c twist.c -o v1.o"), 0);
  write("twist.c", v2);
  ASSERT_EQ(sh("clang-19 -O2 -c twist.c -o v2.o"), 0);
  ASSERT_GT(sections("v2.o")[".eh_frame"].first,
            sections("v1.o")[".eh_frame"].first)
      << "the edit did not grow an FDE";
  std::vector<Slot> first = slots("v1.o", SlackPolicy{25, 64});
  ASSERT_EQ(pad("v1.o", first, "v1.padded.o"), "");
  ASSERT_EQ(pad("v2.o", first, "v2.padded.o"), "");
  EXPECT_EQ(sections("v2.padded.o")[".eh_frame"].first,
            sections("v1.padded.o")[".eh_frame"].first);
  runsAsPlain("clang++-19", "v2.o ext.o main.o", "v2.padded.o ext.o main.o",
              "caught too far at 30");
  for (const char *file : {"v2.padded.o", "padded"}) {
    SCOPED_TRACE(file);
    EXPECT_EQ(sh(std::string("readelf --debug-dump=frames ") + file +
                 " > /dev/null 2> readelf.err && llvm-dwarfdump-19 "
                 "--eh-frame " +
                 file + " > /dev/null 2> dump.err"),
              0);
    EXPECT_EQ(read("readelf.err") + read("dump.err"), "");
  }

  // Past the room: six more saved registers.
  write("twist.c", R"(
extern int ext(int);
int twist(int x) {
  int a = ext(x), b = ext(a), c = ext(b), d = ext(c), e = ext(d), f = ext(e);
  return a * b + c * d + e * f + ext(a + b + c + d + e + f) * x;
}
int steady(int x) { return ext(x) + 2; }
)");
  ASSERT_EQ(sh("clang-19 -O2 -c twist.c -o v3.o"), 0);
  std::vector<Slot> records;
  for (const Slot &slot : first)
    if (slot.section == ".eh_frame") // (its code outgrew .text too)
      records.push_back(slot);
  std::string e = pad("v3.o", records, "v3.padded.o");
  EXPECT_NE(e.find("v3.o: section .eh_frame FDE 1 ("), std::string::npos) << e;
  EXPECT_NE(e.find("outgrew its slot"), std::string::npos) << e;
}

TEST_F(PaddingTest, WhatCannotBePaddedIsAnError) {
  write("counter.c", kCounter);
  ASSERT_EQ(sh("clang-19 -O2 -c counter.c"), 0);
  std::vector<Slot> s = slots("counter.o", SlackPolicy{25, 64});
  // Uninitialised data has room as data does (a variable whose
  // initializer became zero moves from .data to .bss); .eh_frame has it in
  // its records; strings LLD would merge across objects have it as the
  // object's own: no longer mergeable, their labels section symbols.
  bool bss = false, records = false, strings = false;
  for (const Slot &slot : s) {
    bss = bss || slot.section == ".bss";
    records = records || (slot.section == ".eh_frame" && !slot.records.empty());
    strings = strings || slot.section.rfind(".rodata.str", 0) == 0;
  }
  EXPECT_TRUE(bss);
  EXPECT_TRUE(records);
  EXPECT_TRUE(strings);
  ASSERT_EQ(pad("counter.o", s, "padded.o"), "");
  std::string padded = read("padded.o");
  auto o = readElfObject(llvm::MemoryBufferRef(padded, "padded.o"));
  ASSERT_TRUE(static_cast<bool>(o)) << llvm::toString(o.takeError());
  int labels = 0;
  for (size_t i = 0; i < o->sections.size(); ++i)
    if (o->names[i].rfind(".rodata.str", 0) == 0)
      EXPECT_FALSE(o->sections[i].sh_flags & llvm::ELF::SHF_MERGE);
  for (const auto &sym : o->symbols) {
    EXPECT_FALSE(sym.getBinding() == llvm::ELF::STB_LOCAL &&
                 sym.getType() != llvm::ELF::STT_SECTION &&
                 llvm::StringRef(symbolName(*o, sym)).starts_with(".L"))
        << symbolName(*o, sym) << " is still a label";
    labels += isLabel(sym);
  }
  EXPECT_GT(labels, 0);
  EXPECT_NE(pad("counter.o", {{".nothing", 64, 0, {}}}, "x.o")
                .find("no section "
                      ".nothing"),
            std::string::npos);
  EXPECT_NE(pad("counter.o", {{".eh_frame", 4096, 0, {}}}, "x.o")
                .find("cannot be padded"),
            std::string::npos);
  write("junk.o", std::string("\x7f"
                              "ELF garbage",
                              12));
  EXPECT_FALSE(pad("junk.o", {}, "x.o").empty());
  // No slack: the slots are the sizes, and every section of the padded
  // object is the same (its strings no longer mergeable, their labels
  // section symbols: the symbol table's bytes differ).
  std::vector<Slot> none = slots("counter.o", SlackPolicy{});
  ASSERT_EQ(pad("counter.o", none, "same.o"), "");
  auto same = sections("same.o"), original = sections("counter.o");
  same.erase(".symtab");
  original.erase(".symtab");
  EXPECT_TRUE(same == original);
  write("plain.c", "int plain(int x) { return x + 1; }\n");
  ASSERT_EQ(sh("clang-19 -O2 -c plain.c"), 0);
  ASSERT_EQ(pad("plain.o", slots("plain.o", SlackPolicy{}), "plain.padded.o"),
            "");
  EXPECT_EQ(read("plain.padded.o"), read("plain.o")); // nothing to merge
}

// Sections whose pieces from all objects make one thing get no room: code
// fragments (.init), arrays the runtime calls (.ctors, .init_array), ones
// a program walks from __start_ to __stop_ (a C identifier's name), and
// metadata ordered with code (-fpatchable-function-entry's). Room in any
// of them would be run or called; the padded program runs as the original.
TEST_F(PaddingTest, SectionsJoinedAcrossObjectsKeepTheirSize) {
  write("joined.c", R"(
#include <stdio.h>
typedef void (*hook)(void);
static void early(void) { puts("early"); }
static void legacy(void) { puts("legacy"); }
static hook ctor_slot __attribute__((section(".ctors"), used)) = legacy;
static hook init_slot __attribute__((section(".init_array"), used)) = early;
static int one __attribute__((section("linkd_set"), used)) = 17;
static int two __attribute__((section("linkd_set"), used)) = 25;
extern int __start_linkd_set[], __stop_linkd_set[];
int total(void) {
  int t = 0;
  for (int *p = __start_linkd_set; p < __stop_linkd_set; ++p)
    t += *p;
  return t;
}
__asm__(".section .init,\"ax\",@progbits\n nop\n .text");
)");
  write("main.c", R"(
#include <stdio.h>
int total(void);
int main(void) { printf("%d\n", total()); return 0; }
)");
  ASSERT_EQ(sh("clang-19 -O2 -fpatchable-function-entry=2 -c joined.c "
               "main.c"),
            0);
  std::vector<Slot> s = slots("joined.o", SlackPolicy{25, 64});
  bool text = false;
  for (const Slot &slot : s) {
    text = text || slot.section == ".text";
    for (const char *joined : {".init", ".ctors", ".init_array", "linkd_set",
                               "__patchable_function_entries"})
      EXPECT_NE(slot.section, joined);
  }
  EXPECT_TRUE(text); // its own code still gets room
  EXPECT_NE(pad("joined.o", {{"linkd_set", 64, 0, {}}}, "x.o")
                .find("cannot be padded"),
            std::string::npos);
  ASSERT_EQ(pad("joined.o", s, "joined.padded.o"), "");
  // (Whether .ctors runs is the C runtime's affair: the same either way.)
  runsAsPlain("clang-19", "joined.o main.o", "joined.padded.o main.o",
              "early\n42\n");
}

// Hostile objects: random bytes changed in a real one. The padder refuses
// or pads; whatever it writes is an object LLVM reads again, never a
// crash (the sanitizer build runs this too).
TEST_F(PaddingTest, MutatedObjectsNeverCrash) {
  write("counter.c", kCounter);
  ASSERT_EQ(sh("clang-19 -O2 -g -c counter.c"), 0);
  const std::string original = read("counter.o");
  std::vector<Slot> s = slots("counter.o", SlackPolicy{25, 64});
  // LINKD_TEST_SEED searches wider by hand.
  const char *seed = std::getenv("LINKD_TEST_SEED");
  std::mt19937 rng(seed ? static_cast<unsigned>(std::strtoul(seed, nullptr, 10))
                        : 20261207u);
  // The bytes of its DWARF sections and .eh_frame, which the padder parses.
  std::vector<std::pair<uint64_t, uint64_t>> parsed; // offset, size
  {
    auto o = readElfObject(llvm::MemoryBufferRef(original, "counter.o"));
    ASSERT_TRUE(static_cast<bool>(o)) << llvm::toString(o.takeError());
    for (size_t i = 0; i < o->sections.size(); ++i)
      if ((o->names[i].rfind(".debug_", 0) == 0 ||
           o->names[i] == ".eh_frame") &&
          o->sections[i].sh_size > 0)
        parsed.emplace_back(o->sections[i].sh_offset, o->sections[i].sh_size);
    ASSERT_GT(parsed.size(), 5u);
  }
  int padded = 0, refused = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string bytes = original;
    int changes = 1 + static_cast<int>(rng() % 4);
    for (int c = 0; c < changes; ++c) {
      // The headers (where the offsets and sizes are), the section
      // headers at the end, anywhere, or what the padder parses.
      size_t at = 0;
      switch (rng() % 4) {
      case 0:
        at = rng() % 64;
        break;
      case 1:
        at = bytes.size() - 1 - rng() % 1024;
        break;
      case 2:
        at = rng() % bytes.size();
        break;
      default: {
        const auto &[offset, size] = parsed[rng() % parsed.size()];
        at = offset + rng() % size;
      }
      }
      bytes[at] = static_cast<char>(rng());
    }
    llvm::MemoryBufferRef ref(bytes, "mutated.o");
    auto out = padObject(ref, s);
    if (!out) {
      llvm::consumeError(out.takeError());
      ++refused;
      continue;
    }
    ++padded;
    auto again = readElfObject(llvm::MemoryBufferRef(*out, "padded.o"));
    if (!again)
      llvm::consumeError(again.takeError());
    auto slotted = slotsOf(ref, SlackPolicy{10, 8});
    if (!slotted)
      llvm::consumeError(slotted.takeError());
  }
  std::printf("[ mutated  ] %d padded, %d refused\n", padded, refused);
  EXPECT_GT(padded + refused, 0);
}

} // namespace
} // namespace linkd::incremental
