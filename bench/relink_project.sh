#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# bench/relink_project.sh [--keep] [BIN]: incremental relinks of a real
# project built with -g, edit by edit (docs/incremental.md).
#
# The project is git 2.39 from Debian's sources (`apt-get source git`,
# cached in $LINKD_BENCH_SRC, default /var/cache/linkd/src): its `git`
# program, built by its own Makefile with clang-19 -O2 -g (123 objects
# and 3 archives of 271 members, 15 MB; about 2 minutes on 2 cores). A scripted series of realistic
# edits, each on top of the last (a changed constant, a changed
# initializer, a new statement, a new local variable, a new function, a
# renamed function, a statement removed with its call to getenv), to
# files linked as objects (builtin/*.c) and to files
# linked from libgit.a; after each, make rebuilds what changed and the
# program is linked three ways, timed once each:
#   linkd  the Makefile's link command through the client with
#          -Wl,--linkd-incremental (a daemon of this run): patched, or a
#          full link and its reason (the daemon's log);
#   lld    the same command with stock ld.lld;
#   mold   the same command with mold (when installed).
# Every linkd output is compared with LLD's, byte for byte (a difference
# fails the bench), and runs (`git version`). Then the whole series again
# in verify mode (incremental_verify: LLD links in full beside each patch),
# whose differences must be 0. Prints a row per edit and the share patched
# and the median relink against lld and mold.
#
# --slack P%+B: the daemon pads the objects of each full link
# (incremental_slack, docs/incremental.md). linkd's output is then LLD's
# link of the padded objects: each is compared with stock LLD's link of
# the state's padded copies instead (and still timed against the stock
# link of the user's objects).
# --cflags FLAGS: the project's CFLAGS instead of -O2 -g (-O2 alone shows
# what the patch follows before debug sections had room).
# --direct: time each linker as clang-19 runs it (its command from
# `clang -###`: ld.linkd, ld.lld, ld.mold) instead of the whole driver,
# whose own start-up (about 20 ms here) every way pays alike.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
KEEP=0
DIRECT=0
SLACK=
CFLAGS="-O2 -g"
while [[ ${1:-} == --* ]]; do
  case $1 in
    --keep) KEEP=1; shift ;;
    --slack) SLACK=${2:?--slack P%+B}; shift 2 ;;
    --cflags) CFLAGS=${2:?--cflags FLAGS}; shift 2 ;;
    --direct) DIRECT=1; shift ;;
    *) echo "usage: bench/relink_project.sh [--keep] [--slack P%+B] [--cflags FLAGS] [--direct] [BIN]" >&2; exit 2 ;;
  esac
done
BIN=$(cd "${1:-$HERE/../build/bin}" && pwd)
LIB="$HERE/benchlib.py"
MOLD="${MOLD-$(command -v mold || true)}"
SRC="${LINKD_BENCH_SRC:-/var/cache/linkd/src}"
VERSION=2.39.5
T=$(mktemp -d /tmp/linkd-relink-project.XXXXXX)
die() { echo "relink_project: $*" >&2; exit 2; }
say() { echo "$*"; }
stop_daemon() { "$BIN/linkd" stop >/dev/null 2>&1 || true; }
trap 'stop_daemon; ((KEEP)) || rm -rf "$T"' EXIT
((KEEP)) && echo "keeping $T" >&2

MAKEVARS=(CC=clang-19 "CFLAGS=$CFLAGS" NO_CURL=1 NO_EXPAT=1 NO_GETTEXT=1
  NO_TCLTK=1 NO_PERL=1 NO_PYTHON=1 NO_OPENSSL=1)
# The tree, built once where every pass builds (the objects' debug info
# names the directory they were compiled in), and kept: each pass starts
# from a copy of it at the same place.
mkdir -p "$SRC"
if [[ ! -f $SRC/git_$VERSION.orig.tar.xz ]]; then
  (cd "$SRC" && apt-get source --download-only git >/dev/null 2>&1) ||
    die "cannot fetch git's sources (a deb-src entry and apt-get update)"
fi
tree="$T/tree"
tar -C "$T" -xf "$SRC/git_$VERSION.orig.tar.xz"
mv "$T/git-$VERSION" "$tree"
make -C "$tree" -j"$(nproc)" git "${MAKEVARS[@]}" >/dev/null 2>&1 ||
  die "git does not build"
pristine="$T/pristine"
cp -a "$tree" "$pristine"

# Daemon of this run.
export LINKD_SOCKET="$T/run/linkd.sock" LINKD_STATE_DIR="$T/state"
export LINKD_CACHE_DIR="$T/cache" LINKD_CONFIG="$T/linkd.conf"
export LINKD_IDLE_TIMEOUT=900
unset LINKD_DISABLE LINKD_BIN LINKD_QUIET LINKD_NOCACHE LINKD_LOG \
  LINKD_INCREMENTAL LINKD_INCREMENTAL_VERIFY LINKD_REMOTE || true
stat_of() { "$BIN/linkd" stats --json | python3 -c \
  "import json,sys; print(json.load(sys.stdin).get('$1', 0))"; }

# The edits: file, text, replacement, what it is. Each applies to the tree
# as the ones before it left it.
cat >"$T/edits.py" <<'EOF'
import sys
EDITS = [
    ("builtin/log.c", "#define MAIL_DEFAULT_WRAP 72", "#define MAIL_DEFAULT_WRAP 76",
     "constant"),
    ("builtin/gc.c", "static int gc_auto_threshold = 6700;",
     "static int gc_auto_threshold = 6800;", "initializer"),
    ("builtin/log.c", "\treturn isatty(1) || pager_in_use();",
     "\tif (getenv(\"GIT_BENCH_NEVER_TTY\"))\n\t\treturn 0;\n"
     "\treturn isatty(1) || pager_in_use();", "new statement"),
    ("builtin/gc.c", "\tint i;\n\tfor (i = 0; i < pack_garbage.nr; i++)",
     "\tint i, n = pack_garbage.nr;\n\tfor (i = 0; i < n; i++)", "new local"),
    ("builtin/add.c", "static int ignore_add_errors, intent_to_add, ignore_missing;",
     "static int ignore_add_errors, intent_to_add, ignore_missing;\n"
     "int add_bench_hook(int x) { return x * 3 + 1; }", "new function"),
    ("builtin/gc.c", "clean_pack_garbage", "remove_pack_garbage", "renamed function"),
    ("help.c", "#define SIMILARITY_FLOOR 7", "#define SIMILARITY_FLOOR 8",
     "constant (libgit.a)"),
    ("strbuf.c",
     "\tsize_t len = a->len < b->len ? a->len: b->len;\n\tint cmp",
     "\tsize_t len = a->len < b->len ? a->len: b->len;\n\tint cmp;\n"
     "\tif (a == b)\n\t\treturn 0;\n\tcmp", "new statement (libgit.a)"),
    ("builtin/log.c", "#define FORMAT_PATCH_NAME_MAX_DEFAULT 64",
     "#define FORMAT_PATCH_NAME_MAX_DEFAULT 80", "constant"),
    ("builtin/log.c", "static int auto_number = 1;", "static int auto_number = 0;",
     "initializer"),
    ("builtin/log.c",
     "\tif (getenv(\"GIT_BENCH_NEVER_TTY\"))\n\t\treturn 0;\n"
     "\treturn isatty(1) || pager_in_use();",
     "\treturn isatty(1) || pager_in_use();", "removed statement"),
]
if sys.argv[1] == "count":
    print(len(EDITS))
elif sys.argv[1] == "label":
    print(EDITS[int(sys.argv[2])][3])
elif sys.argv[1] == "apply":
    path, old, new, _ = EDITS[int(sys.argv[2])]
    full = sys.argv[3] + "/" + path
    text = open(full).read()
    if old not in text:
        sys.exit(f"edit {sys.argv[2]}: {old!r} is not in {path}")
    # A rename is every occurrence; anything else the first.
    text = text.replace(old, new) if "renamed" in EDITS[int(sys.argv[2])][3] \
        else text.replace(old, new, 1)
    open(full, "w").write(text)
    target = "libgit.a" if not path.startswith("builtin/") else path[:-2] + ".o"
    print(target)
EOF
N=$(python3 "$T/edits.py" count)

# The stock link command with each padded object and archive replaced by the state's
# copy (the manifest's input lines: path, identity, copy), writing
# git.oracle.
cat >"$T/oracle.py" <<'EOF'
import glob, os, shlex, sys
script, states = open(sys.argv[1]).read(), sys.argv[2]
manifests = [m for m in glob.glob(states + "/*/manifest")]
if len(manifests) != 1:
    sys.exit(f"{len(manifests)} states")
state = os.path.dirname(manifests[0])
copies = {}
for line in open(manifests[0]):
    f = line.rstrip("\n").split("\t")
    if f[0] == "input" and f[-1].endswith((".padded.o", ".padded.a")):
        copies[f[1]] = state + "/" + f[-1]
if not copies:
    sys.exit("nothing padded")
cd, _, command = script.partition(" && ")
words = [copies.get(w, w) for w in shlex.split(command)]
words = ["git.oracle" if w == "git.lld" else w for w in words]
print(cd + " && " + shlex.join(words))
EOF

# One pass over the series in a fresh copy of the tree: `verify` 0 or 1.
pass() { # VERIFY
  local verify=$1
  rm -rf "$tree"
  cp -a "$pristine" "$tree"
  stop_daemon
  if ((verify)); then
    echo "incremental_verify = true" >"$LINKD_CONFIG"
  else
    : >"$LINKD_CONFIG"
  fi
  [[ -n $SLACK ]] && echo "incremental_slack = $SLACK" >>"$LINKD_CONFIG"
  # The Makefile's own link command for git.
  rm -f "$tree/git"
  local link
  link=$(make -C "$tree" V=1 git "${MAKEVARS[@]}" 2>/dev/null |
    python3 -c 'import sys; print(sys.stdin.read().replace("\\\n", " "))' |
    grep -- ' -o git ' | tail -1)
  [[ -n $link ]] || die "no link command for git"
  link=${link/ -o git / -o @OUT@ }
  # Each way as a script (the command holds the Makefile's quoting).
  printf 'cd %q && %s\n' "$tree" \
    "${link/clang-19 /clang-19 -fuse-ld=lld --ld-path=$BIN/ld.linkd -Wl,--linkd-incremental }" |
    sed 's/@OUT@/git.inc/' >"$T/link.linkd.sh"
  printf 'cd %q && %s\n' "$tree" "${link/clang-19 /clang-19 -fuse-ld=lld }" |
    sed 's/@OUT@/git.lld/' >"$T/link.lld.sh"
  printf 'cd %q && %s\n' "$tree" "${link/clang-19 /clang-19 -fuse-ld=mold }" |
    sed 's/@OUT@/git.mold/' >"$T/link.mold.sh"
  local ways=(linkd lld)
  [[ -n $MOLD ]] && ways+=(mold)
  # What is timed: the driver's command, or (--direct) the linker's.
  local way
  for way in "${ways[@]}"; do
    if ((DIRECT)); then
      local ld
      ld=$(sed 's/clang-19 /clang-19 -### /' "$T/link.$way.sh" | sh 2>&1 | tail -1)
      [[ $ld == *' "-o" '* ]] || die "no linker command from clang -### for $way"
      printf 'cd %q && %s\n' "$tree" "$ld" >"$T/run.$way.sh"
    else
      cp "$T/link.$way.sh" "$T/run.$way.sh"
    fi
  done
  sh "$T/run.linkd.sh" || die "the first link failed"
  for ((e = 0; e < N; e++)); do
    target=$(python3 "$T/edits.py" apply "$e" "$tree")
    make -C "$tree" "$target" "${MAKEVARS[@]}" >/dev/null 2>&1 || die "edit $e does not build"
    local before
    before=$(grep -c 'incremental: ' "$T/state/linkd.log" || true)
    for way in "${ways[@]}"; do
      python3 "$LIB" time "$T/p$verify.e$e.$way.json" "$way" "sh $T/run.$way.sh" ||
        die "edit $e: the link through $way failed"
    done
    local expected="$tree/git.lld"
    if [[ -n $SLACK ]]; then # LLD's link of the padded copies
      python3 "$T/oracle.py" "$T/link.lld.sh" "$T/state/incremental" \
        >"$T/link.oracle.sh" || die "edit $e: no padded state to compare with"
      sh "$T/link.oracle.sh" || die "edit $e: LLD's link of the padded copies failed"
      expected="$tree/git.oracle"
    fi
    cmp -s "$tree/git.inc" "$expected" ||
      die "edit $e ($(python3 "$T/edits.py" label "$e")): linkd's output differs from LLD's"
    "$tree/git.inc" version >/dev/null || die "edit $e: the program does not run"
    line=$(grep 'incremental: ' "$T/state/linkd.log" | tail -n +$((before + 1)) | tail -1)
    line=${line#*incremental: \"}
    echo "${line%\"}" >"$T/p$verify.e$e.outcome"
  done
}

((DIRECT)) && say "timed       each linker as clang-19 runs it (--direct)"
say "project     git $VERSION, $CFLAGS: $(ls "$pristine"/builtin/*.o | wc -l) objects, " \
  "$(ar t "$pristine/libgit.a" | wc -l) + $(ar t "$pristine/xdiff/lib.a" | wc -l) + " \
  "$(ar t "$pristine/reftable/libreftable.a" | wc -l) archive members, " \
  "$(stat -c %s "$pristine/git") bytes"
pass 0
pass 1
verified=$(stat_of incremental_verified) differ=$(stat_of incremental_verify_differences)
((differ == 0)) || die "verify mode: $differ differences"

python3 - "$T" "$N" "$verified" <<'EOF'
import json, statistics, subprocess, sys
d, n, verified = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def t(p, e, k):
    try:
        return json.load(open(f"{d}/p{p}.e{e}.{k}.json"))["results"][0]["mean"]
    except FileNotFoundError:
        return None
rows, patched, ratios_lld, ratios_mold = [], 0, [], []
print(f"{'edit':28s} {'linkd':>8s} {'lld':>8s} {'mold':>8s}  outcome")
for e in range(n):
    label = subprocess.run(["python3", f"{d}/edits.py", "label", str(e)],
                           capture_output=True, text=True).stdout.strip()
    outcome = open(f"{d}/p0.e{e}.outcome").read().strip()
    a, b, m = t(0, e, "linkd"), t(0, e, "lld"), t(0, e, "mold")
    patched += outcome.startswith("patched")
    ratios_lld.append(a / b)
    if m:
        ratios_mold.append(a / m)
    short = outcome.split(" micros=")[0] if outcome.startswith("patched") else \
        outcome.split(" reason=")[0] + " (" + outcome.split(" reason=")[-1][:60] + ")"
    print(f"{label:28s} {a*1000:7.0f}ms {b*1000:7.0f}ms "
          f"{(m or 0)*1000:7.0f}ms  {short}")
links = [t(0, e, "linkd") for e in range(n)]
print(f"patched     {patched} of {n} edits ({100*patched//n}%); "
      f"verify pass: {verified} patches checked against LLD, 0 differences")
print(f"median      linkd {statistics.median(links)*1000:.0f} ms, "
      f"lld {statistics.median([t(0,e,'lld') for e in range(n)])*1000:.0f} ms"
      + (f", mold {statistics.median([t(0,e,'mold') for e in range(n)])*1000:.0f} ms"
         if ratios_mold else ""))
print(f"ratio       linkd/lld median {statistics.median(ratios_lld):.3f}"
      + (f", linkd/mold median {statistics.median(ratios_mold):.3f}" if ratios_mold else ""))
EOF
