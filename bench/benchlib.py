#!/usr/bin/env python3
"""Helpers for bench/run.sh (argv extraction, hyperfine JSON, tables).

Subcommands:
  linker-argv FILE      FILE holds the stderr of `clang++ -### ...`; prints the
                        linker argv (without argv[0] and without `-o X`) one
                        argument per line, NUL-free. Exits 1 if not found.
  quote ARG...          prints the arguments as one POSIX-quoted command line
                        (what `hyperfine -N` splits back into argv).
  stats JSON            prints "<label>\t<median_s>\t<mean_s>\t<stddev_s>\t<min_s>\t<max_s>\t<runs>\t<cpu_median_s>"
                        for every result in a hyperfine --export-json file.
  time OUT RUNS WARMUP NAME CMD [NAME CMD]...
                        fallback timer when hyperfine is missing: runs each
                        command (POSIX-quoted string, no shell) and writes a
                        hyperfine-like JSON file OUT.
  merge OUT JSON...     merges hyperfine JSON files (one per interleaved round)
                        into OUT: per command (in first-seen order) all times,
                        with median/mean/stddev/min/max recomputed.
  summary FILE          FILE: tab-separated rows (workload, stock, linkd, ratio,
                        target, result); prints them as an aligned table.
"""
import json
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
        out = []
        skip = False
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


def stats(path):
    with open(path) as f:
        data = json.load(f)
    for r in data["results"]:
        times = r.get("times") or []
        med = r.get("median")
        if med is None and times:
            med = statistics.median(times)
        print("\t".join(str(x) for x in (
            r.get("command", "?"), med, r.get("mean"), r.get("stddev") or 0.0,
            r.get("min"), r.get("max"), len(times),
            r.get("cpu_median") if r.get("cpu_median") is not None else "")))
    return 0


def timecmd(out, runs, warmup, pairs):
    import subprocess
    import time
    results = []
    for name, cmd in pairs:
        argv = shlex.split(cmd)
        times = []
        for i in range(warmup + runs):
            t0 = time.perf_counter()
            rc = subprocess.run(argv, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL).returncode
            dt = time.perf_counter() - t0
            if rc != 0:
                print("benchlib: command failed (rc=%d): %s" % (rc, name),
                      file=sys.stderr)
                return 1
            if i >= warmup:
                times.append(dt)
        mean = statistics.mean(times)
        results.append({
            "command": name, "mean": mean, "median": statistics.median(times),
            "stddev": statistics.stdev(times) if len(times) > 1 else 0.0,
            "min": min(times), "max": max(times), "times": times})
    with open(out, "w") as f:
        json.dump({"results": results}, f)
    return 0


def merge(out, paths):
    order = []
    times = {}
    cpu = {}
    for p in paths:
        with open(p) as f:
            for r in json.load(f)["results"]:
                name = r["command"]
                if name not in times:
                    order.append(name)
                    times[name] = []
                    cpu[name] = []
                t = r.get("times") or []
                times[name].extend(t)
                # hyperfine: mean user/system CPU (of the command and its
                # waited-for children) per run
                if r.get("user") is not None and r.get("system") is not None:
                    cpu[name].extend([r["user"] + r["system"]] * len(t))
    results = []
    for name in order:
        t = times[name]
        results.append({
            "command": name, "median": statistics.median(t),
            "mean": statistics.mean(t),
            "stddev": statistics.stdev(t) if len(t) > 1 else 0.0,
            "min": min(t), "max": max(t), "times": t,
            "cpu_median": statistics.median(cpu[name]) if cpu[name] else None})
    with open(out, "w") as f:
        json.dump({"results": results}, f, indent=1)
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
    widths = [max(len(r[i]) if i < len(r) else 0 for r in allrows) for i in range(len(head))]

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


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "linker-argv" and len(args) == 1:
        return linker_argv(args[0])
    if cmd == "quote":
        return quote(args)
    if cmd == "stats" and len(args) == 1:
        return stats(args[0])
    if cmd == "time" and len(args) >= 5 and len(args) % 2 == 1:
        rest = args[3:]
        return timecmd(args[0], int(args[1]), int(args[2]),
                       list(zip(rest[0::2], rest[1::2])))
    if cmd == "merge" and len(args) >= 2:
        return merge(args[0], args[1:])
    if cmd == "summary" and len(args) == 1:
        return summary(args[0])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
