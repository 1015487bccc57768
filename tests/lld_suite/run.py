#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""LLD 19's own lit suite as linkd's drop-in gate.

The promise is that a build never changes because linkd is in the path: the
authoritative statement of what LLD does is LLD's own test suite. This runner
takes `lld/test` of the very LLD the daemon embeds (Debian's
llvm-toolchain-19 source package), configures LLD's unmodified lit.cfg.py
with the stock LLVM 19 tools, and runs ELF, COFF, MachO, wasm and MinGW:

  stock     stock LLD under every linker name (the baseline of this run)
  cold      linkd's clients under every name, `lld -flavor` included, with
            a fresh cache in a fixed scratch directory (misses)
  warm      the same again, same paths: served by hits
  record    a fresh daemon with LINKD_AUDIT_RECORD=1 (a state record for
            every link it can apply to)

No stock linker is reachable in the linkd passes: PATH holds the tool
directory and the system's programs without any linker. The gate fails on a
test that passes on stock and not in one of the linkd passes, on a warm pass
that was not served by hits, and on any link that fell back to a local run.

  run.py [--build DIR] [--work DIR] [--jobs N] [--passes a,b] [--filter RE]
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLVM_BIN = "/usr/lib/llvm-19/bin"
LIT = "/usr/lib/llvm-19/build/utils/lit/lit.py"
SOURCE_PACKAGE = "llvm-toolchain-19"
SUITES = ["ELF", "COFF", "MachO", "wasm", "MinGW"]
RECORD_SUITES = ["ELF", "COFF", "MinGW"]
# Every name a linker answers to; in the linkd passes each is a client.
LINKER_NAMES = ["ld.lld", "lld-link", "ld64.lld", "wasm-ld", "lld"]
CLIENT_OF = {"ld.lld": "ld.linkd", "lld-link": "lld-link.linkd",
             "ld64.lld": "ld64.linkd", "wasm-ld": "wasm-ld.linkd",
             "lld": "ld.linkd"}
# System programs that are linkers, kept off PATH in every pass.
LINKER_RE = re.compile(r"^(ld|ld\..*|lld.*|ld64.*|wasm-ld.*|.*-ld|.*-ld\..*|gold|mold)$")


def log(msg):
    print(f"lld-suite: {msg}", flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


# --- the suite's sources -----------------------------------------------------

def source_tree(cache):
    """lld/test of Debian's llvm-toolchain-19 (no Debian patch touches it),
    downloaded once into `cache` and extracted beside it."""
    version = subprocess.run(
        ["dpkg-query", "-W", "-f=${source:Version}", "lld-19"],
        capture_output=True, text=True, check=True).stdout.strip()
    upstream = version.split(":")[-1].split("-")[0]
    root = os.path.join(cache, f"{SOURCE_PACKAGE}_{upstream}")
    if os.path.isfile(os.path.join(root, "lld/test/lit.cfg.py")):
        return root, version
    os.makedirs(cache, exist_ok=True)
    tarball = os.path.join(cache, f"{SOURCE_PACKAGE}_{upstream}.orig.tar.xz")
    if not os.path.exists(tarball):
        ensure_deb_src()
        log(f"downloading {SOURCE_PACKAGE} {version} (source package)")
        run(["apt-get", "source", "--download-only", "-q",
             f"{SOURCE_PACKAGE}={version}"], cwd=cache,
            stdout=subprocess.DEVNULL)
    log(f"extracting lld/test from {os.path.basename(tarball)}")
    tmp = root + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    run(["tar", "-xJf", tarball, "-C", tmp, "--strip-components=1",
         "--wildcards", "*/lld/test/*"])
    os.rename(tmp, root)
    return root, version


def ensure_deb_src():
    """A deb-src entry for the suites the system's deb entries name."""
    out = subprocess.run(["apt-get", "indextargets", "--format", "$(IDENTIFIER)"],
                         capture_output=True, text=True).stdout
    if "Sources" in out.split():
        return
    sources = "/etc/apt/sources.list.d/debian.sources"
    if not os.path.exists(sources):
        sys.exit("lld-suite: no deb-src entry and no debian.sources to copy one from")
    text = open(sources).read()
    src = re.sub(r"(?m)^Types:\s*deb\s*$", "Types: deb-src", text)
    with open("/etc/apt/sources.list.d/linkd-deb-src.sources", "w") as f:
        f.write(src)
    run(["apt-get", "update", "-q"], stdout=subprocess.DEVNULL)


# --- a pass's tools ------------------------------------------------------------

def tools_dir(work, name, build_bin):
    """Every LLVM 19 tool but the linkers, and the pass's linkers: stock
    LLD's, or linkd's clients (build_bin)."""
    d = os.path.join(work, "tools", name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for tool in os.listdir(LLVM_BIN):
        if tool not in LINKER_NAMES:
            os.symlink(os.path.join(LLVM_BIN, tool), os.path.join(d, tool))
    for tool in LINKER_NAMES:
        target = (os.path.join(LLVM_BIN, tool) if build_bin is None
                  else os.path.join(build_bin, CLIENT_OF[tool]))
        os.symlink(target, os.path.join(d, tool))
    return d


def system_bin(work):
    """/usr/bin and /bin without any linker: what tests run besides LLVM's
    tools (sh, cp, tar, sed, python3, ...)."""
    d = os.path.join(work, "tools", "system")
    if os.path.isdir(d):
        return d
    tmp = d + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for src in ["/usr/local/bin", "/usr/bin", "/bin"]:
        for tool in sorted(os.listdir(src)):
            dst = os.path.join(tmp, tool)
            if LINKER_RE.match(tool) or os.path.lexists(dst):
                continue
            os.symlink(os.path.join(src, tool), dst)
    os.rename(tmp, d)
    return d


def write_site_config(obj_root, source_root, tools, env):
    os.makedirs(os.path.join(obj_root, "test"), exist_ok=True)
    template = open(os.path.join(REPO, "tests/lld_suite/lit.site.cfg.py.in")).read()
    pass_env = "\n".join(f"config.environment[{k!r}] = {v!r}"
                         for k, v in sorted(env.items()))
    text = (template.replace("@SOURCE_ROOT@", source_root)
            .replace("@OBJ_ROOT@", obj_root)
            .replace("@TOOLS_DIR@", tools)
            .replace("@PYTHON@", sys.executable)
            .replace("@PASS_ENVIRONMENT@", pass_env))
    # lit finds the site configuration in the test directory of the object
    # root, and maps it to the source tree through lit's config_map.
    path = os.path.join(obj_root, "test", "lit.site.cfg.py")
    with open(path, "w") as f:
        f.write(text)
    return path


# --- the daemon of a linkd pass -------------------------------------------------

class Daemon:
    """A linkd daemon of the pass's own: its socket, cache and log under the
    pass's scratch directory, started before and stopped after the pass."""

    def __init__(self, build_bin, root, extra_env):
        self.linkd = os.path.join(build_bin, "linkd")
        self.root = root
        self.env = {
            "LINKD_SOCKET": os.path.join(root, "run", "linkd.sock"),
            "LINKD_CACHE_DIR": os.path.join(root, "cache"),
            "LINKD_STATE_DIR": os.path.join(root, "state"),
            "LINKD_CONFIG": os.path.join(root, "linkd.conf"),
            **extra_env,
        }
        for k in ("run", "cache", "state"):
            os.makedirs(os.path.join(root, k), mode=0o700, exist_ok=True)
        os.chmod(os.path.join(root, "run"), 0o700)
        open(self.env["LINKD_CONFIG"], "a").close()
        self.proc = None

    def environ(self):
        e = {k: v for k, v in os.environ.items() if not k.startswith("LINKD_")}
        e.update(self.env)
        return e

    def start(self, jobs):
        log_path = os.path.join(self.root, "state", "serve.out")
        self.proc = subprocess.Popen(
            [self.linkd, "serve", "--socket", self.env["LINKD_SOCKET"],
             "--jobs", str(jobs), "--idle-timeout", "0"],
            env=self.environ(), stdout=open(log_path, "a"),
            stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.status() is not None:
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        sys.exit(f"lld-suite: the daemon did not start (see {log_path})")

    def status(self):
        r = subprocess.run([self.linkd, "status", "--json"], env=self.environ(),
                           capture_output=True, text=True)
        return json.loads(r.stdout) if r.returncode == 0 else None

    def stats(self):
        r = subprocess.run([self.linkd, "stats", "--json"], env=self.environ(),
                           capture_output=True, text=True, check=True)
        return json.loads(r.stdout)

    def stop(self):
        if self.proc is None:
            return
        subprocess.run([self.linkd, "stop"], env=self.environ(),
                       capture_output=True)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def fell_back(self):
        """The client's marker of a fallback (client/fallback.cpp) next to
        the socket."""
        run_dir = os.path.dirname(self.env["LINKD_SOCKET"])
        return [f for f in os.listdir(run_dir) if "fallback" in f]


# --- a pass ------------------------------------------------------------------------

def run_lit(name, work, source_root, tools, env, jobs, filt, suites=SUITES):
    obj_root = os.path.join(work, name, "obj")
    site = write_site_config(obj_root, source_root, tools, env)
    results = os.path.join(work, name, "results.json")
    test_dir = os.path.join(source_root, "lld", "test")
    # As LLVM's generated llvm-lit does: lit's config_map points the source
    # tree's lit.cfg.py at this pass's site configuration.
    config_map = {os.path.normcase(os.path.join(test_dir, "lit.cfg.py")): site}
    driver = ("import sys; sys.path.insert(0, sys.argv.pop(1)); "
              "import json; from lit.main import main; "
              "main({'config_map': json.loads(sys.argv.pop(1))})")
    cmd = [sys.executable, "-c", driver, os.path.dirname(LIT),
           json.dumps(config_map), "-q", "-j", str(jobs), "--order=lexical",
           "--output", results, "--timeout", "300"]
    if filt:
        cmd += ["--filter", filt]
    cmd += [os.path.join(test_dir, s) for s in suites]
    # lit's own PATH: the tool directory first (use_lld prepends it), then
    # the system's programs without linkers.
    lit_env = dict(os.environ)
    lit_env["PATH"] = system_bin(work)
    for k in list(lit_env):
        if k.startswith("LINKD_"):
            del lit_env[k]
    # A pass's results are this run's: none left from an earlier one, and
    # lit's own failure (a configuration it could not load) is the gate's.
    if os.path.exists(results):
        os.remove(results)
    t0 = time.time()
    rc = subprocess.run(cmd, env=lit_env, stdout=subprocess.DEVNULL).returncode
    seconds = time.time() - t0
    if rc not in (0, 1) or not os.path.exists(results):
        sys.exit(f"lld-suite: lit failed in the {name} pass (exit status {rc})")
    data = json.load(open(results))
    codes = {t["name"].split(" :: ", 1)[1]: t["code"] for t in data["tests"]}
    return codes, seconds


def release(work, name, passes):
    later = passes[passes.index(name) + 1:]
    doomed = []
    if name == "stock":
        doomed.append(os.path.join(work, "stock", "obj"))
    if name in ("cold", "warm") and "warm" not in later:
        doomed += [os.path.join(work, "linkd", "obj"),
                   os.path.join(work, "daemon-cache", "cache")]
    if name == "record":
        doomed += [os.path.join(work, "record", "obj"),
                   os.path.join(work, "daemon-record", "cache")]
    for d in doomed:
        shutil.rmtree(d, ignore_errors=True)


def passed(codes):
    return {t for t, c in codes.items() if c in ("PASS", "XFAIL")}


def per_suite(tests):
    counts = {s: 0 for s in SUITES}
    for t in tests:
        counts[t.split("/", 1)[0]] += 1
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--work", default=None,
                    help="scratch directory (default BUILD/lld-suite)")
    ap.add_argument("--cache", default=os.environ.get(
        "LINKD_LLD_SUITE_CACHE", "/var/cache/linkd/lld-suite"),
        help="where the source package is kept between runs")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--passes", default="stock,cold,warm,record")
    ap.add_argument("--filter", default=None, help="lit --filter")
    ap.add_argument("--keep", action="store_true",
                    help="keep each pass's lit outputs and daemon cache")
    args = ap.parse_args()

    build_bin = os.path.join(os.path.abspath(args.build), "bin")
    work = os.path.abspath(args.work or os.path.join(args.build, "lld-suite"))
    os.makedirs(work, exist_ok=True)
    source_root, version = source_tree(args.cache)
    log(f"lld/test of {SOURCE_PACKAGE} {version}; scratch {work}")
    passes = args.passes.split(",")

    results, seconds, problems = {}, {}, []
    stock_tools = tools_dir(work, "stock", None)
    linkd_tools = tools_dir(work, "linkd", build_bin)
    cache_daemon = Daemon(build_bin, os.path.join(work, "daemon-cache"), {})
    if "cold" in passes:
        shutil.rmtree(os.path.join(work, "daemon-cache", "cache"), ignore_errors=True)
        cache_daemon = Daemon(build_bin, os.path.join(work, "daemon-cache"), {})
    stats = {}
    for name in passes:
        if name == "stock":
            results[name], seconds[name] = run_lit(
                name, work, source_root, stock_tools, {}, args.jobs, args.filter)
        else:
            daemon = cache_daemon
            if name == "record":
                root = os.path.join(work, "daemon-record")
                shutil.rmtree(root, ignore_errors=True)
                daemon = Daemon(build_bin, root, {"LINKD_AUDIT_RECORD": "1"})
            daemon.start(args.jobs)
            before = daemon.stats()
            try:
                # cold and warm share one scratch directory: same paths, so
                # the warm pass's links are the cold pass's keys.
                scratch = "linkd" if name in ("cold", "warm") else name
                # No Mach-O or Wasm link gets a record: the record pass
                # runs the suites where one can apply.
                suites = RECORD_SUITES if name == "record" else SUITES
                results[name], seconds[name] = run_lit(
                    scratch, work, source_root, linkd_tools, daemon.env,
                    args.jobs, args.filter, suites)
                after = daemon.stats()
            finally:
                daemon.stop()
            stats[name] = {k: after.get(k, 0) - before.get(k, 0)
                           for k in after if isinstance(after.get(k), int)}
            if daemon.fell_back():
                problems.append(f"{name}: a link fell back to a local run "
                                f"(marker {daemon.fell_back()} in the run directory)")
        log(f"{name}: {len(passed(results[name]))} of {len(results[name])} "
            f"passed in {seconds[name]:.0f} s")
        # What a pass leaves takes gigabytes (lit's outputs: ~4 GB a pass;
        # the cold pass's cache: ~7 GB): each goes as soon as no later pass
        # needs it, so the run peaks near 12 GB, not 25.
        if not args.keep:
            release(work, name, passes)

    stock_results = os.path.join(work, "stock", "results.json")
    if "stock" not in results and os.path.exists(stock_results):
        log(f"baseline: the stock pass of an earlier run ({stock_results})")
        data = json.load(open(stock_results))
        results = {"stock": {t["name"].split(" :: ", 1)[1]: t["code"]
                             for t in data["tests"]}, **results}
    report(results, stats, problems, bool(args.filter))
    return 1 if problems else 0


def report(results, stats, problems, filtered):
    base = passed(results["stock"]) if "stock" in results else None
    for name, codes in results.items():
        p = passed(codes)
        counts = per_suite(p)
        line = "  ".join(f"{s} {counts[s]}" for s in SUITES)
        log(f"{name:7s} passed: {len(p):5d}  ({line})")
        if base is None or name == "stock":
            continue
        # A pass compares the tests of its suites (the record pass runs
        # three); one that did not run at all is lost too (but for those a
        # --filter left out).
        suites = RECORD_SUITES if name == "record" else SUITES
        lost = sorted(t for t in base - p if t.split("/", 1)[0] in suites
                      and (not filtered or t in codes))
        for t in lost:
            problems.append(f"{name}: {t} passes on stock LLD, "
                            f"{codes.get(t, 'MISSING')} through linkd")
    if "record" in stats and stats["record"].get("audit_records_stored", 0) == 0:
        problems.append("record: no link got a state record: the pass did "
                        "not test the map option it exists for")
    for name, s in stats.items():
        keys = ["requests", "hits", "misses", "results_stored", "uncacheable",
                "errors", "audit_records_stored"]
        log(f"{name:7s} daemon: " + " ".join(f"{k}={s.get(k, 0)}" for k in keys))
    if "cold" in stats and "warm" in stats:
        # The links the cold pass stored hit the second time, but for those
        # whose inputs differ between runs of the suite (archives with
        # dates, files a test removes): 95 % of them at least (measured:
        # 5081 hits of 4993 stored and 9 such misses).
        cold, warm = stats["cold"], stats["warm"]
        stored = cold.get("results_stored", 0)
        if warm.get("hits", 0) < 0.95 * stored or stored == 0:
            problems.append(
                f"warm: {warm.get('hits', 0)} hits after a cold pass that "
                f"stored {stored} results: the same links did not hit")
    for p in problems:
        print(f"lld-suite: FAIL {p}")
    if not problems:
        log("drop-in gate: every test that passes on stock LLD passes through linkd")


if __name__ == "__main__":
    sys.exit(main())
