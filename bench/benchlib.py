#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Helpers for bench/run.sh: argv extraction, timing data, tables.

Subcommands:
  linker-argv FILE   FILE holds the stderr of `clang++ -### ...`; prints the
                     linker argv (without argv[0] and without `-o X`), one
                     argument per line. Exits 1 if there is none.
  quote ARG...       prints the arguments as one POSIX-quoted command line
                     (what `hyperfine -N` splits back into an argv).
  time OUT NAME CMD  fallback timer when hyperfine is missing: runs CMD (a
                     POSIX-quoted string, no shell) once and writes a
                     hyperfine-like JSON file OUT (wall time and user/system
                     CPU of the command and its children).
  analyze DIR        DIR holds what run.sh's bench() recorded per command k:
                     k<k>.label, r<round>.k<k>.json (one run each),
                     k<k>.meta ("round settle_ms daemon_cpu_s" per timed
                     round) and k<k>.log (the daemon's log lines written
                     during the timed runs of that command). Prints one
                     "|"-separated line per command:
                       label median mean stddev min max runs client_cpu
                       daemon_cpu settle_ms daemon_links cache_counts
                       daemon_wall_ms daemon_queue_ms child_rss_kib
                       lookup_us
                     (times in seconds unless named _ms/_kib; medians over
                     the runs, except daemon_cpu: a mean, /proc counts in
                     clock ticks; daemon_* per run; "" when not applicable).
  summary FILE       FILE: tab-separated rows (workload, stock, linkd, ratio,
                     target, result); prints them as an aligned table.
  populate DB N VALUE_BYTES
                     inserts N synthetic manifests (actions rows, ns
                     'link-manifest', random 32-byte keys, random values of
                     about VALUE_BYTES bytes, checksum = SHA-256 of the value,
                     last_use a day or more in the past) and N blob rows
                     (random digests, 1-16 KiB, no files) into the store's
                     index DB, in one transaction. The daemon must be
                     stopped; the tables must exist. Prints the row counts.
  storeinfo DB       prints "actions blobs manifest_bytes db_mib usage_ms" for a
                     store's index DB: row counts, the largest manifest,
                     the file size, and how long the two queries the
                     daemon's maintenance pass runs every second under its
                     index lock (count and sum over blobs and actions) take
                     here (ms, median of 3 after one warm-up).
  remote DIR         DIR holds what run.sh's remote section recorded for one
                     tier: r<round>.stock.json and r<round>.hit.json (one
                     run each; round 0 is the warm-up), "hits" (one line
                     per timed hit: round links cache wall_ms lookup_us
                     settle_ms remote_hits_delta remote_bytes_delta
                     daemon_cpu_ms_to_reply daemon_cpu_ms_after
                     server_cpu_ms) and stock.settle (settle ms after each
                     stock run). Prints "stock_med stock_min stock_max n
                     hit_med hit_min hit_max n wall_ms lookup_us settle_ms
                     stock_settle_ms bytes_read remote_hits_min
                     cpu_to_reply cpu_after server_cpu" (medians; "-" if
                     none), then the timed hits' and stock's wall times in
                     ms, round by round, one line each.
  logstats FILE FIELD
                     FIELD=<number> from the daemon's " link id=" lines of
                     FILE: prints "n median p90 max" (or "0 - - -").
"""
import glob
import json
import os
import re
import shlex
import statistics
import sys


def linker_argv(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    for line in reversed(lines):
        line = line.strip()
        if not line.startswith('"'):
            continue
        argv = shlex.split(line)
        if not argv or not argv[0].endswith(("ld.lld", "/ld", "ld.gold", "mold")):
            continue
        out, skip = [], False
        for a in argv[1:]:
            if skip:
                skip = False
                continue
            if a == "-o":
                skip = True
                continue
            out.append(a)
        for a in out:
            print(a)
        return 0
    print("benchlib: no linker command in " + path, file=sys.stderr)
    return 1


def quote(args):
    print(" ".join(shlex.quote(a) for a in args))
    return 0


def timecmd(out, name, cmd):
    import resource
    import subprocess
    import time
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    rc = subprocess.run(shlex.split(cmd), stdout=subprocess.DEVNULL).returncode
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc != 0:
        print("benchlib: command failed (rc=%d): %s" % (rc, name), file=sys.stderr)
        return 1
    with open(out, "w") as f:
        json.dump({"results": [{
            "command": name, "mean": dt, "median": dt, "stddev": 0.0,
            "min": dt, "max": dt, "times": [dt],
            "user": after.ru_utime - before.ru_utime,
            "system": after.ru_stime - before.ru_stime}]}, f)
    return 0


def med(xs):
    return statistics.median(xs) if xs else None


LOG_FIELD = re.compile(r"(\w+)=([^\s\"]+)")


def analyze(d):
    ks = sorted(int(re.search(r"k(\d+)\.label$", p).group(1))
                for p in glob.glob(os.path.join(d, "k*.label")))
    for k in ks:
        with open(os.path.join(d, "k%d.label" % k)) as f:
            label = f.read().strip()
        times, cpu = [], []
        for p in sorted(glob.glob(os.path.join(d, "r*.k%d.json" % k))):
            if re.search(r"/r0\.k", p):
                continue  # the warm-up round
            with open(p) as f:
                for r in json.load(f)["results"]:
                    t = r.get("times") or [r["mean"]]
                    times.extend(t)
                    if r.get("user") is not None and r.get("system") is not None:
                        cpu.append(r["user"] + r["system"])
        settle, dcpu = [], []
        mp = os.path.join(d, "k%d.meta" % k)
        if os.path.exists(mp):
            with open(mp) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 3:
                        settle.append(float(parts[1]))
                        dcpu.append(float(parts[2]))
        counts, walls, queues, rss, lookups = {}, [], [], [], []
        lp = os.path.join(d, "k%d.log" % k)
        if os.path.exists(lp):
            with open(lp, errors="replace") as f:
                for line in f:
                    if " link id=" not in line:
                        continue
                    m = dict(LOG_FIELD.findall(line))
                    if "wall_ms" not in m:
                        continue
                    c = m.get("cache", "?")
                    counts[c] = counts.get(c, 0) + 1
                    walls.append(float(m["wall_ms"]))
                    if "queue_ms" in m:
                        queues.append(float(m["queue_ms"]))
                    if "rss_kib" in m:
                        rss.append(float(m["rss_kib"]))
                    if "lookup_us" in m:
                        lookups.append(float(m["lookup_us"]))
        n = len(times)
        nlinks = sum(counts.values())
        row = [
            label, med(times), statistics.mean(times) if times else None,
            statistics.stdev(times) if n > 1 else 0.0,
            min(times) if times else None, max(times) if times else None, n,
            # daemon CPU comes from /proc in clock ticks (10 ms): a mean,
            # not a median, of the per-run deltas
            med(cpu), statistics.mean(dcpu) if dcpu else None, med(settle),
            (nlinks / n) if n else None,
            ",".join("%s:%d" % kv for kv in sorted(counts.items())),
            med(walls), med(queues), med(rss), med(lookups)]
        print("|".join("" if v is None else str(v).replace("|", "/") for v in row))
    return 0


def populate(db, n, value_bytes):
    import hashlib
    import random
    import sqlite3
    import time
    n, value_bytes = int(n), int(value_bytes)
    rnd = random.Random(20261130 + n)
    now = int(time.time())
    # Keys in ascending order: appends to the B-trees instead of random page
    # splits (5x faster); nothing to crash-protect, so no sync.
    keys = sorted(rnd.randbytes(32) for _ in range(n))
    digests = sorted(rnd.randbytes(32) for _ in range(n))
    con = sqlite3.connect(db, timeout=30)
    con.execute("PRAGMA journal_mode=OFF")  # no second copy via the WAL; WAL again below
    con.execute("PRAGMA synchronous=OFF")
    con.execute("PRAGMA cache_size=-65536")
    with con:  # one transaction
        def actions():
            lo, hi = value_bytes - value_bytes // 4, value_bytes + value_bytes // 4
            for k in keys:
                v = rnd.randbytes(rnd.randint(lo, hi))
                yield ("link-manifest", k, v, hashlib.sha256(v).digest(),
                       now - 86400 - rnd.randrange(30 * 86400))

        def blobs():
            for d in digests:
                size = rnd.randrange(1024, 16385)
                yield (d, size, size // 3, now - 86400 - rnd.randrange(30 * 86400))
        con.executemany("INSERT INTO actions(ns, key, value, checksum, last_use) VALUES(?, ?, ?, ?, ?)",
                        actions())
        con.executemany("INSERT INTO blobs(digest, size, stored, last_use) VALUES(?, ?, ?, ?)", blobs())
    con.execute("PRAGMA journal_mode=WAL")
    a = con.execute("SELECT count(*) FROM actions").fetchone()[0]
    b = con.execute("SELECT count(*) FROM blobs").fetchone()[0]
    con.close()
    print("%d %d" % (a, b))
    return 0


def storeinfo(db):
    import sqlite3
    import time
    con = sqlite3.connect(db, timeout=30)
    a = con.execute("SELECT count(*) FROM actions").fetchone()[0]
    b = con.execute("SELECT count(*) FROM blobs").fetchone()[0]
    mb = con.execute("SELECT coalesce(max(length(value)), 0) FROM actions "
                     "WHERE ns = 'link-manifest'").fetchone()[0]
    ts = []
    for _ in range(4):  # same queries as LocalStore::usage()
        t0 = time.perf_counter()
        con.execute("SELECT count(*), coalesce(sum(stored), 0) FROM blobs").fetchone()
        con.execute("SELECT count(*), coalesce(sum(length(value)), 0) FROM actions").fetchone()
        ts.append((time.perf_counter() - t0) * 1000)
    con.close()
    size = sum(os.path.getsize(db + ext) for ext in ("", "-wal") if os.path.exists(db + ext))
    print("%d %d %d %.1f %.1f" % (a, b, mb, size / 1048576.0, med(ts[1:])))
    return 0


def remote(d):
    def times(kind):
        ts = []
        paths = glob.glob(os.path.join(d, "r*.%s.json" % kind))
        for p in sorted(paths, key=lambda p: int(re.search(r"/r(\d+)\.", p).group(1))):
            if re.search(r"/r0\.", p):
                continue  # the warm-up round
            with open(p) as f:
                for r in json.load(f)["results"]:
                    ts.extend(r.get("times") or [r["mean"]])
        return ts

    def col(rows, i):
        out = []
        for r in rows:
            try:
                out.append(float(r[i]))
            except (IndexError, ValueError):
                pass
        return out

    rows = []
    hp = os.path.join(d, "hits")
    if os.path.exists(hp):
        with open(hp) as f:
            rows = [line.split() for line in f if line.strip()]
    sp = os.path.join(d, "stock.settle")
    ssettle = []
    if os.path.exists(sp):
        with open(sp) as f:
            ssettle = [float(x) for x in f.read().split()]
    s, h = times("stock"), times("hit")
    dh = col(rows, 6)
    vals = [med(s), min(s) if s else None, max(s) if s else None, len(s),
            med(h), min(h) if h else None, max(h) if h else None, len(h),
            med(col(rows, 3)), med(col(rows, 4)), med(col(rows, 5)),
            med(ssettle), med(col(rows, 7)), min(dh) if dh else None,
            med(col(rows, 8)), med(col(rows, 9)), med(col(rows, 10))]
    print(" ".join("-" if v is None else ("%g" % v if isinstance(v, float) else str(v))
                   for v in vals))
    print(" ".join("%.0f" % (t * 1000) for t in h) or "-")
    print(" ".join("%.0f" % (t * 1000) for t in s) or "-")
    return 0


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def logstats(path, field):
    vals = []
    with open(path, errors="replace") as f:
        for line in f:
            if " link id=" not in line:
                continue
            m = dict(LOG_FIELD.findall(line))
            if field in m:
                try:
                    vals.append(float(m[field]))
                except ValueError:
                    pass
    if not vals:
        print("0 - - -")
    else:
        print("%d %g %g %g" % (len(vals), med(vals), pct(vals, 90), max(vals)))
    return 0


def summary(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                rows.append(line.split("\t"))
    head = ["workload", "stock median", "linkd median", "ratio", "target", "result"]
    allrows = [head] + rows
    widths = [max(len(r[i]) if i < len(r) else 0 for r in allrows)
              for i in range(len(head))]

    def fmt(r):
        cells = []
        for i, w in enumerate(widths):
            c = r[i] if i < len(r) else ""
            cells.append(c.ljust(w) if i == 0 else c.rjust(w))
        return "| " + " | ".join(cells) + " |"

    print(fmt(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(fmt(r))
    return 0


def phases(client, obj, out, n, log):
    """A small link's phases: the client's own times (LINKD_CLIENT_TIMES,
    client/phase_times.h), the daemon's log line of each link (every *_ms
    field it has: wall, queue, and the link child's own phases), and the
    spawn and exit around the client as this process sees them."""
    import os
    import tempfile
    import time
    times = tempfile.mktemp(prefix="linkd-phases.")
    env = dict(os.environ, LINKD_CLIENT_TIMES=times)
    argv = [client, "--linkd-no-cache", obj, "-o", out]
    outer = []
    with open(log) as f:
        f.seek(0, 2)
        start = f.tell()
    for _ in range(int(n)):
        t0 = time.monotonic_ns()
        pid = os.posix_spawn(client, argv, env)
        _, st = os.waitpid(pid, 0)
        t1 = time.monotonic_ns()
        if st != 0:
            print("benchlib: phases: the link failed", file=sys.stderr)
            return 1
        outer.append((t0, t1))
    with open(times) as f:
        inner = [list(map(int, line.split())) for line in f]
    os.unlink(times)
    if len(inner) != len(outer):
        print("benchlib: phases: %d of %d links went through the daemon"
              % (len(inner), len(outer)), file=sys.stderr)
        return 1
    fields = {}
    with open(log) as f:
        f.seek(start)
        for line in f:
            if " link id=" not in line:
                continue
            for k, v in LOG_FIELD.findall(line):
                if k.endswith("_ms"):
                    try:
                        fields.setdefault(k, []).append(float(v))
                    except ValueError:
                        pass
    ms = lambda xs: "%.2f" % (med(xs) / 1e6)
    rows = [
        ("client start (spawn to main)", [i[0] - o[0] for i, o in zip(inner, outer)]),
        ("connect", [i[1] - i[0] for i in inner]),
        ("request (build, send)", [i[2] - i[1] for i in inner]),
        ("daemon (send to first reply)", [i[3] - i[2] for i in inner]),
        ("reply (first reply to LinkDone)", [i[4] - i[3] for i in inner]),
        ("exit (LinkDone to reaped)", [o[1] - i[4] for i, o in zip(inner, outer)]),
        ("total (spawn to reaped)", [o[1] - o[0] for o in outer]),
    ]
    for name, xs in rows:
        print("%s\t%s" % (name, ms(xs)))
    for k in sorted(fields):
        print("daemon log %s\t%.2f" % (k, med(fields[k])))
    return 0


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "linker-argv" and len(args) == 1:
        return linker_argv(args[0])
    if cmd == "quote":
        return quote(args)
    if cmd == "time" and len(args) == 3:
        return timecmd(*args)
    if cmd == "analyze" and len(args) == 1:
        return analyze(args[0])
    if cmd == "populate" and len(args) == 3:
        return populate(*args)
    if cmd == "storeinfo" and len(args) == 1:
        return storeinfo(*args)
    if cmd == "remote" and len(args) == 1:
        return remote(*args)
    if cmd == "logstats" and len(args) == 2:
        return logstats(*args)
    if cmd == "summary" and len(args) == 1:
        return summary(args[0])
    if cmd == "phases" and len(args) == 5:
        return phases(*args)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
