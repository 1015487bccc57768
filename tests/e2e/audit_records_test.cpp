// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Link records that tell the truth. A record is made from
// LLD's map, which names each state symbol and its input but not whether it
// is a global or file-local: the link child reads that from the input (a
// global is one entity by its name wherever it is; a local pairs only with
// copies from a source of the same name). Before, every recorded symbol
// paired by its object's name, so a runtime's global in two DLLs came out
// clean whenever the two copies' objects were named differently: a one-step
// `clang++ a.cpp rt.cpp -shared` (driver temp objects /tmp/rt-XXXXXX.o),
// or a runtime object copied under another name.
//
// Fixtures use names of their own (a "Vendor::Accel" queue, render/physics
// DLLs, a game), not the Halide names of the other audit tests, and run the
// programs (wine for PE) to show that the state is really duplicated.
#include "audit_fixture.h"

#include <algorithm>
#include <sstream>

namespace linkd::e2e {
namespace {

constexpr const char *kAccel = R"(namespace Vendor { namespace Accel {
namespace Detail {
struct Queue { int device; };
Queue *current_queue = nullptr;          // a namespace global, not exported
}
static int accel_ready;                   // file-local
}}
extern "C" int accel_bind(int device) {
  static Vendor::Accel::Detail::Queue own; // function-local
  own.device = device;
  ++Vendor::Accel::accel_ready;
  if (!Vendor::Accel::Detail::current_queue)
    Vendor::Accel::Detail::current_queue = &own;
  return Vendor::Accel::Detail::current_queue->device;
}
)";
constexpr const char *kRender = R"(extern "C" int accel_bind(int);
extern "C" EXPORT int render_frame(int d) { return accel_bind(d); }
)";
constexpr const char *kPhysics = R"(extern "C" int accel_bind(int);
extern "C" EXPORT int physics_step(int d) { return accel_bind(d); }
)";
constexpr const char *kGame = R"(#include <cstdio>
extern "C" IMPORT int render_frame(int);
extern "C" IMPORT int physics_step(int);
int main() {
  render_frame(7);
  std::printf("physics sees device %d\n", physics_step(9));
}
)";
// One runtime: physics would see 7, the device render bound.
constexpr const char *kTwoRuntimes = "physics sees device 9\n";

class AuditRecords : public AuditE2eTest {
protected:
  void SetUp() override {
    unsetenv("LINKD_AUDIT_RECORD");
    E2eTest::SetUp();
    writeFile("accel_core.cpp", kAccel);
    writeFile("render.cpp", kRender);
    writeFile("physics.cpp", kPhysics);
    writeFile("game.cpp", kGame);
  }
  void TearDown() override {
    E2eTest::TearDown();
    unsetenv("LINKD_AUDIT_RECORD");
  }

  std::string mingw() const {
    return "clang++-19 --target=x86_64-w64-mingw32 --ld-path=" +
           binPath("ld.linkd") +
           " -DEXPORT='__declspec(dllexport)' "
           "-DIMPORT='__declspec(dllimport)' ";
  }
  // Both DLLs' copies of the runtime's three pieces of state.
  void expectAllThree(const RunResult &a) {
    EXPECT_EQ(a.exitCode, 1) << describe(a);
    // A global is named without a source (one entity by its name); the
    // locals with theirs, from the objects' .file records.
    const std::string copies = ", zero-initialised data, 2 copies at run time";
    expectIn(a, {"Vendor::Accel::Detail::current_queue" + copies,
                 "Vendor::Accel::accel_ready [accel_core]" + copies,
                 "accel_bind::own [accel_core]" + copies,
                 "./render.dll: a DLL's own copy",
                 "./physics.dll: a DLL's own copy"});
    EXPECT_EQ(a.out.find("incomplete"), std::string::npos) << a.out;
  }
};

TEST_F(AuditRecords, MingwOneStepDriverTempObjectsPair) {
  ASSERT_TRUE(haveTool(tools::wine));
  // Each DLL compiled and linked in one step: the driver links
  // /tmp/accel_core-XXXXXX.o, another name in each link.
  for (const std::string strip : {"", "-Wl,-s "}) {
    SCOPED_TRACE(strip);
    ASSERT_TRUE(exitedZero(run(mingw() + strip +
                               "-shared render.cpp accel_core.cpp -o "
                               "render.dll -Wl,--out-implib,librender.a")));
    ASSERT_TRUE(exitedZero(run(mingw() + strip +
                               "-shared physics.cpp accel_core.cpp -o "
                               "physics.dll -Wl,--out-implib,libphysics.a")));
    ASSERT_TRUE(exitedZero(
        run(mingw() + strip + "game.cpp -L. -lrender -lphysics -o game.exe")));
    waitForRecords(strip.empty() ? 3 : 6);
    EXPECT_EQ(runPe("./game.exe"), kTwoRuntimes);
    expectAllThree(audit("game.exe"));
  }
}

TEST_F(AuditRecords, MingwRuntimeObjectsOfOtherNamesPairByTheirGlobals) {
  ASSERT_TRUE(haveTool(tools::wine));
  // The runtime compiled once and copied under two names; the DLL objects
  // compiled by MinGW's own GCC with its defaults.
  ASSERT_TRUE(exitedZero(
      run("x86_64-w64-mingw32-g++ -O1 -c accel_core.cpp -o accel_core.o && "
          "cp accel_core.o gfx_runtime.o && mv accel_core.o sim_runtime.o && "
          "x86_64-w64-mingw32-g++ -O1 -DEXPORT='__declspec(dllexport)' -c "
          "render.cpp physics.cpp")));
  ASSERT_TRUE(exitedZero(run(mingw() + "-shared -s render.o gfx_runtime.o "
                                       "-o render.dll -Wl,--out-implib,"
                                       "librender.a")));
  ASSERT_TRUE(exitedZero(run(mingw() + "-shared -s physics.o sim_runtime.o "
                                       "-o physics.dll -Wl,--out-implib,"
                                       "libphysics.a")));
  ASSERT_TRUE(exitedZero(run(mingw() + "-s game.cpp -L. -lrender -lphysics -o "
                                       "game.exe")));
  waitForRecords(3);
  EXPECT_EQ(runPe("./game.exe"), kTwoRuntimes);
  RunResult a = audit("game.exe");
  // The objects' .file records name accel_core.cpp: all three pair.
  expectAllThree(a);
}

TEST_F(AuditRecords, LldLinkDllsOfRenamedObjectsPair) {
  // clang-cl objects (MSVC mangling: LLD's map prints "struct
  // Vendor::Accel::Detail::Queue * Vendor::Accel::Detail::current_queue")
  // under other names, lld-link /dll through lld-link.linkd.
  ASSERT_TRUE(exitedZero(
      run("clang-cl-19 --target=x86_64-pc-windows-msvc /O1 /c "
          "/Foaccel_a.obj accel_core.cpp && cp accel_a.obj accel_b.obj && "
          "clang-cl-19 --target=x86_64-pc-windows-msvc /O1 "
          "-DEXPORT='__declspec(dllexport)' /c render.cpp physics.cpp")));
  const std::string link =
      binPath("lld-link.linkd") + " /dll /noentry /nodefaultlib ";
  ASSERT_TRUE(exitedZero(run(link + "render.obj accel_a.obj /out:render.dll")));
  ASSERT_TRUE(
      exitedZero(run(link + "physics.obj accel_b.obj /out:physics.dll")));
  waitForRecords(2);
  RunResult a = audit("render.dll physics.dll");
  EXPECT_EQ(a.exitCode, 1) << describe(a);
  expectIn(a, {"Vendor::Accel::Detail::current_queue", "2 copies at run time",
               "render.dll", "physics.dll"});
}

TEST_F(AuditRecords, ElfHiddenCopiesOfOtherNamesAreFoundAfterStrip) {
  setenv("LINKD_AUDIT_RECORD", "1", 1); // ELF records: opt-in
  // The runtime hidden (as a runtime is built for embedding), each shared
  // object compiled and linked in one step by clang++'s default driver.
  const std::string cxx =
      "clang++-19 --ld-path=" + binPath("ld.linkd") +
      " -O1 -fPIC -DEXPORT='__attribute__((visibility(\"default\")))' "
      "-DIMPORT= ";
  writeFile("hidden.h", "#pragma GCC visibility push(hidden)\n");
  auto build = [&] {
    ASSERT_TRUE(exitedZero(
        run(cxx + "-shared render.cpp -include hidden.h accel_core.cpp -o "
                  "librender.so")));
    ASSERT_TRUE(exitedZero(
        run(cxx + "-shared physics.cpp -include hidden.h accel_core.cpp -o "
                  "libphysics.so")));
    ASSERT_TRUE(exitedZero(run(cxx + "game.cpp -L. -lrender -lphysics "
                                     "-Wl,-rpath,'$ORIGIN' -o game")));
  };
  build();
  waitForSettledResults(3);
  // Small links run one after another in a reusable worker: the records
  // of the later ones were made by a process that had linked before.
  EXPECT_GE(std::stoi(run("grep -c ' reused=' " + stateDir + "/linkd.log").out),
            1);
  ASSERT_TRUE(exitedZero(run("strip librender.so libphysics.so")));
  RunResult r = run("./game");
  EXPECT_EQ(r.out, kTwoRuntimes) << describe(r);
  auto check = [&] {
    RunResult a = audit("./game");
    EXPECT_EQ(a.exitCode, 1) << describe(a);
    expectIn(a, {"Vendor::Accel::Detail::current_queue, zero-initialised "
                 "data, 2 copies at run time",
                 "Vendor::Accel::accel_ready [accel_core]",
                 "libphysics.so (ELF, DT_NEEDED of ./game (DT_RUNPATH "
                 "$ORIGIN); linkd link record, found by its elf-build-id)"});
  };
  check();
  // Built again from the same sources: the driver's temp names differ, the
  // key does not (name tokens), so the links hit; the records found are
  // the first links'.
  auto before = cacheStats();
  ASSERT_TRUE(exitedZero(run("rm -f librender.so libphysics.so game")));
  build();
  auto after = cacheStats();
  EXPECT_EQ(after["hits"] - before["hits"], 3);
  ASSERT_TRUE(exitedZero(run("strip librender.so libphysics.so")));
  check();
}

TEST_F(AuditRecords, ARecordThatNamesNoStateOfWrittenDataIsIncomplete) {
  // A DLL whose runtime keeps its state in data without a symbol (an
  // assembly file's local label): the map names nothing, yet the object
  // put bytes in .data. "Clean" would be a guess.
  writeFile("counter.s", R"(  .data
.Lticks:
  .long 0
  .text
  .globl counter_tick
counter_tick:
  movl .Lticks(%rip), %eax
  incl %eax
  movl %eax, .Lticks(%rip)
  ret
)");
  writeFile("tick.cpp", "extern \"C\" int counter_tick();\n"
                        "extern \"C\" EXPORT int tick() { return "
                        "counter_tick(); }\n");
  ASSERT_TRUE(exitedZero(run(mingw() + "-shared -s tick.cpp counter.s -o "
                                       "tick.dll")));
  waitForRecords(1);
  RunResult a = audit("tick.dll");
  EXPECT_EQ(a.exitCode, 3) << describe(a);
  expectIn(a, {"incomplete", "its link record names no state, yet",
               "put 4 bytes in writable sections"});
  // The same DLL with a named counter is inspected, and clean.
  writeFile("counter2.c", "static int ticks;\n"
                          "int counter_tick(void) { return ++ticks; }\n");
  ASSERT_TRUE(exitedZero(run(mingw() + "-shared -s tick.cpp -x c counter2.c "
                                       "-o tick.dll")));
  waitForRecords(2);
  RunResult b = audit("tick.dll");
  EXPECT_EQ(b.exitCode, 0) << describe(b);
}

// --- Separate debug files ---------------------------------

TEST_F(AuditRecords, StrippedElfLibrariesAreReadFromTheirDebugFiles) {
  // Shared objects from elsewhere (GNU ld, no linkd record), packaged the
  // Debian way: debug info split off, the library stripped and linked to
  // its debug file.
  const std::string cxx =
      "g++ -O1 -g -fPIC -DEXPORT='__attribute__((visibility(\"default\")))' "
      "-DIMPORT= ";
  writeFile("hidden.h", "#pragma GCC visibility push(hidden)\n");
  ASSERT_TRUE(exitedZero(run(
      cxx +
      "-shared render.cpp -include hidden.h accel_core.cpp -o "
      "librender.so && " +
      cxx +
      "-shared physics.cpp -include hidden.h accel_core.cpp -o "
      "libphysics.so && " +
      cxx + "game.cpp -L. -lrender -lphysics -Wl,-rpath,'$ORIGIN' -o game")));
  // Another build of the physics library: its debug file is not ours.
  ASSERT_TRUE(exitedZero(
      run(cxx + "-Wl,--build-id=0x0123abcd -shared physics.cpp -include "
                "hidden.h accel_core.cpp -o other.so && "
                "objcopy --only-keep-debug other.so "
                "other.debug")));
  for (const char *lib : {"librender", "libphysics"})
    ASSERT_TRUE(
        exitedZero(run(std::string("objcopy --only-keep-debug ") + lib +
                       ".so " + lib + ".so.debug && strip --strip-all " + lib +
                       ".so && objcopy "
                       "--add-gnu-debuglink=" +
                       lib + ".so.debug " + lib + ".so")));
  EXPECT_EQ(run("./game").out, kTwoRuntimes);
  auto found = [&](const RunResult &a) {
    EXPECT_EQ(a.exitCode, 1) << describe(a);
    expectIn(a, {"Vendor::Accel::Detail::current_queue",
                 "Vendor::Accel::accel_ready",
                 "librender.so: local symbol: this module's own copy",
                 "libphysics.so: local symbol: this module's own copy"});
  };
  // Next to the module, by its .gnu_debuglink.
  RunResult a = audit("./game");
  found(a);
  expectIn(a, {"librender.so (ELF, DT_NEEDED of ./game (DT_RUNPATH "
               "$ORIGIN); separate debug file " +
               path("librender.so.debug") + ")"});
  // In a .build-id tree under a --search directory.
  std::string id = run("readelf -n libphysics.so | sed -n "
                       "'s/.*Build ID: //p'")
                       .out;
  while (!id.empty() && id.back() == '\n')
    id.pop_back();
  ASSERT_GT(id.size(), 2u);
  ASSERT_TRUE(exitedZero(run("mkdir -p syms/.build-id/" + id.substr(0, 2) +
                             " && mv libphysics.so.debug syms/.build-id/" +
                             id.substr(0, 2) + "/" + id.substr(2) + ".debug")));
  EXPECT_EQ(audit("./game").exitCode, 3); // not found: incomplete
  a = audit("./game --search syms");
  found(a);
  expectIn(a, {"separate debug file syms/.build-id/" + id.substr(0, 2)});
  // In debuginfod's client cache.
  ASSERT_TRUE(exitedZero(
      run("mkdir -p dcache/" + id + " && mv syms/.build-id/" + id.substr(0, 2) +
          "/" + id.substr(2) + ".debug dcache/" + id + "/debuginfo")));
  a = run("DEBUGINFOD_CACHE_PATH=" + path("dcache") + " " + binPath("linkd") +
          " audit ./game");
  found(a);
  expectIn(a,
           {"separate debug file " + path("dcache") + "/" + id + "/debuginfo"});
  // Another build's debug file under the name the link names: named, not
  // used, and the audit is incomplete.
  ASSERT_TRUE(exitedZero(run("cp other.debug libphysics.so.debug")));
  a = audit("./game");
  EXPECT_EQ(a.exitCode, 3) << describe(a);
  EXPECT_NE(a.err.find("libphysics.so: debug file not used: " +
                       path("libphysics.so.debug") +
                       ": another module's debug file (build-id "),
            std::string::npos)
      << a.err;
}

// --- PDBs
// ---------------------------------------------------

TEST_F(AuditRecords, LldLinkDebugDllsAreReadFromTheirPdbs) {
  // MSVC-style DLLs with PDBs (/debug): linkd keeps no record of such a
  // link (the PDB holds the command line), as with DLLs link.exe made.
  writeFile("tls_index.cpp", "extern \"C\" unsigned _tls_index = 0;\n");
  writeFile("accel_tls.cpp", "thread_local int accel_tls_counter;\n"
                             "extern \"C\" int accel_tick() { return "
                             "++accel_tls_counter; }\n");
  ASSERT_TRUE(exitedZero(
      run("clang-cl-19 --target=x86_64-pc-windows-msvc /O1 /Z7 "
          "-DEXPORT='__declspec(dllexport)' /c accel_core.cpp render.cpp "
          "physics.cpp tls_index.cpp accel_tls.cpp")));
  const std::string link =
      binPath("lld-link.linkd") + " /dll /noentry /nodefaultlib ";
  const std::string objs = " accel_core.obj accel_tls.obj tls_index.obj ";
  auto both = [&](const std::string &flags, const std::string &dir) {
    ASSERT_TRUE(exitedZero(
        run("mkdir -p " + dir + " && " + link + flags + " render.obj" + objs +
            "/out:" + dir + "/render.dll && " + link + flags + " physics.obj" +
            objs + "/out:" + dir + "/physics.dll")));
  };
  both("/debug", "pdb");
  both("", "rec"); // the same links with records, for comparison
  waitForRecords(2);
  ASSERT_TRUE(exists("pdb/render.pdb"));
  auto copies = [](const RunResult &a) {
    std::vector<std::string> lines;
    std::istringstream in(a.out);
    for (std::string l; std::getline(in, l);)
      if (l.find("copies at run time") != std::string::npos)
        lines.push_back(l.substr(0, l.find(',')));
    return lines;
  };
  RunResult fromPdb = audit("pdb/render.dll pdb/physics.dll");
  EXPECT_EQ(fromPdb.exitCode, 1) << describe(fromPdb);
  expectIn(fromPdb,
           {"pdb/render.dll (PE, program; PDB " + path("pdb/render.pdb") + ")",
            "pdb/physics.dll: a DLL's own copy: a PE module shares a "
            "definition only by importing it (its PDB)"});
  RunResult fromRecords = audit("rec/render.dll rec/physics.dll");
  EXPECT_EQ(fromRecords.exitCode, 1) << describe(fromRecords);
  // The PDBs and the records say the same: the same state, by name.
  const std::vector<std::string> want = {
      "  Vendor::Accel::accel_ready [accel_core]",
      "  Vendor::Accel::Detail::current_queue", "  accel_tls_counter",
      "  accel_bind::own [accel_core]"};
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(copies(fromPdb)), sorted(want)) << fromPdb.out;
  EXPECT_EQ(sorted(copies(fromRecords)), sorted(want)) << fromRecords.out;
  // One module known from its record, the other from its PDB: they pair.
  ASSERT_TRUE(exitedZero(run("mkdir -p mix && cp rec/render.dll mix/ && cp "
                             "pdb/physics.dll pdb/physics.pdb mix/")));
  RunResult mixed = audit("mix/render.dll mix/physics.dll");
  EXPECT_EQ(sorted(copies(mixed)), sorted(want)) << mixed.out;
  expectIn(mixed, {"mix/render.dll (PE, program; linkd link record",
                   "mix/physics.dll (PE, named on the command line; PDB "});
  // In a --search directory.
  ASSERT_TRUE(exitedZero(run("mkdir -p syms && mv pdb/physics.pdb syms/")));
  EXPECT_EQ(audit("pdb/render.dll pdb/physics.dll").exitCode, 3);
  RunResult searched = audit("pdb/render.dll pdb/physics.dll --search syms");
  EXPECT_EQ(sorted(copies(searched)), sorted(want)) << searched.out;
  // Another build's PDB beside a rebuilt DLL: named, not used, incomplete.
  ASSERT_TRUE(exitedZero(run("mv syms/physics.pdb pdb/ && " + link +
                             "/debug /pdb:other.pdb physics.obj" + objs +
                             "/out:pdb/physics.dll && rm -f other.pdb")));
  RunResult stale = audit("pdb/render.dll pdb/physics.dll");
  EXPECT_EQ(stale.exitCode, 3) << describe(stale);
  EXPECT_NE(stale.err.find("physics.dll: PDB not used: "), std::string::npos)
      << stale.err;
  EXPECT_NE(stale.err.find("another build's PDB (GUID-age "), std::string::npos)
      << stale.err;
}

} // namespace
} // namespace linkd::e2e
