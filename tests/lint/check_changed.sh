#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# clang-format and clang-tidy on the lines changed since .ci/lint-base, not on
# the whole tree: the tree predates the checks (a mass reformat would bury
# `git blame`), so only what is written from the base on must be clean.
# "Changed" is everything since the base: commits, the working tree
# (staged or not) and untracked C/C++ files git does not ignore.
#
#   tests/lint/check_changed.sh [--format|--tidy] <repo> <build>
#
#   --format  clang-format-19 (the repo's .clang-format) on the changed lines
#             of *.c *.cc *.cpp *.h, as `git clang-format --diff <base>` does;
#             fails printing the diff that would fix them.
#   --tidy    clang-tidy-19 (the repo's .clang-tidy) with a line filter of the
#             changed lines, on the changed sources that <build>'s
#             compile_commands.json knows; a changed header through its own
#             .cpp or else the first source including it. Fails on any
#             diagnostic.
#   (neither: both.)
#
# Generated files (build*/, *.pb.*) are never looked at. Each check prints one
# summary line; with nothing changed it runs no tool. Exit: 0 clean, 1
# findings, 2 misuse or a broken setup, 77 (CTest's skip) when <repo> is not
# a git checkout (a source tarball).
#
# Environment: CLANG_FORMAT (default clang-format-19), CLANG_TIDY (default
# clang-tidy-19), LINT_BASE (a commit instead of .ci/lint-base's), LINT_JOBS
# (parallel clang-tidy runs; default the number of CPUs).
set -euo pipefail

format=0
tidy=0
while (($#)); do
  case "$1" in
    --format) format=1 ;;
    --tidy) tidy=1 ;;
    -h|--help) sed -n '3,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check_changed.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
if (($# != 2)); then
  echo "usage: check_changed.sh [--format|--tidy] <repo> <build>" >&2
  exit 2
fi
((format || tidy)) || { format=1; tidy=1; }
repo=$(cd "$1" && pwd -P)
build=$(cd "$2" 2>/dev/null && pwd -P || echo "$2")
CLANG_FORMAT=${CLANG_FORMAT:-clang-format-19}
CLANG_TIDY=${CLANG_TIDY:-clang-tidy-19}
njobs=${LINT_JOBS:-$(nproc)}

git() { command git -C "$repo" -c core.quotePath=false "$@"; }

if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check_changed: $repo is not a git checkout: nothing to compare, skipped"
  exit 77
fi

# The base: LINT_BASE, else the first line of .ci/lint-base that is not a
# comment. A branch that forked before it is compared from the fork point.
base=${LINT_BASE:-$(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' \
  "$repo/.ci/lint-base" | head -n1)}
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
  echo "check_changed: base commit '$base' (.ci/lint-base) is not in this" \
    "clone; a shallow clone needs the history back to it" >&2
  exit 2
fi
if ! base=$(git merge-base "$base" HEAD); then
  echo "check_changed: HEAD shares no history with base '$base'" >&2
  exit 2
fi
short=$(git rev-parse --short "$base")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The changed lines, one range a line: "<path>\t<first>\t<last>" (paths
# relative to the repo). `-U0` hunks give the new side's lines; a hunk that
# only deletes has none.
specs=('*.c' '*.cc' '*.cpp' '*.h'
  ':(exclude)*.pb.*' ':(exclude)build/**' ':(exclude)build-*/**')
git diff -U0 --no-color --no-ext-diff --no-textconv --find-renames \
    --diff-filter=d --src-prefix=a/ --dst-prefix=b/ "$base" -- "${specs[@]}" |
  awk -v OFS='\t' '
    /^\+\+\+ b\// { f = substr($0, 7); sub(/\t$/, "", f); next }
    /^@@ / {
      split(substr($3, 2), r, ",")
      n = (2 in r) ? r[2] + 0 : 1
      if (n > 0) print f, r[1], r[1] + n - 1
    }' >"$tmp/ranges"
while IFS= read -r -d '' f; do
  n=$(awk 'END { print NR }' "$repo/$f")
  ((n == 0)) || printf '%s\t1\t%s\n' "$f" "$n" >>"$tmp/ranges"
done < <(git ls-files -z --others --exclude-standard -- "${specs[@]}")

mapfile -t files < <(cut -f1 "$tmp/ranges" | sort -u)
lines=$(awk -F'\t' '{ n += $3 - $2 + 1 } END { print n + 0 }' "$tmp/ranges")

# "--lines=a:b" for each range of file $1.
line_args() {
  awk -F'\t' -v f="$1" '$1 == f { print "--lines=" $2 ":" $3 }' "$tmp/ranges"
}

check_format() {
  if ((${#files[@]} == 0)); then
    echo "format_changed_lines: 0 files, 0 lines changed since $short: OK"
    return 0
  fi
  local f bad=0 args
  for f in "${files[@]}"; do
    mapfile -t args < <(line_args "$f")
    if ! (cd "$repo" && "$CLANG_FORMAT" --style=file "${args[@]}" "$f") \
        >"$tmp/formatted"; then
      echo "check_changed: $CLANG_FORMAT failed on $f" >&2
      bad=$((bad + 1))
    elif ! diff -u --label "a/$f" --label "b/$f" "$repo/$f" "$tmp/formatted" \
        >>"$tmp/format.diff"; then
      bad=$((bad + 1))
    fi
  done
  local summary="format_changed_lines: ${#files[@]} files, $lines lines"
  summary+=" changed since $short"
  if ((bad)); then
    cat "$tmp/format.diff"
    echo "$summary: $bad files not formatted per .clang-format (apply the" \
      "diff above, or: git clang-format-19 $short)"
    return 1
  fi
  echo "$summary: OK"
}

# The translation units of compile_commands.json, relative to the repo (none
# generated). The file is CMake's: one `"file": "<absolute path>"` a line.
compile_db_sources() {
  local paths p
  mapfile -t paths < <(sed -n \
    's/^[[:space:]]*"file":[[:space:]]*"\(.*\)",\{0,1\}[[:space:]]*$/\1/p' \
    "$build/compile_commands.json" | sort -u)
  ((${#paths[@]})) || return 0
  realpath -m -- "${paths[@]}" | while IFS= read -r p; do
    if [[ "$p" == "$repo/"* && ! "$p" =~ (^|/)build[^/]*/|\.pb\. ]]; then
      printf '%s\n' "${p#"$repo"/}"
    fi
  done
}

# Header $1's own source (same name, .cpp/.cc/.c) if the database has it.
own_source() {
  local s
  for s in "${1%.h}.cpp" "${1%.h}.cc" "${1%.h}.c"; do
    if [[ -n "${indb[$s]:-}" ]]; then
      echo "$s"
      return
    fi
  done
}

# A translation unit that includes header $1: one already chosen, else any
# source of the compile database, by the quoted #include's path being a
# suffix of the header's (the include roots are the repo and lib/).
includer_of() {
  local h=$1 src inc
  for src in "${tus[@]}" "${db[@]}"; do
    while IFS= read -r inc; do
      if [[ "$h" == "$inc" || "$h" == */"$inc" ]]; then
        echo "$src"
        return
      fi
    done < <(sed -n \
      's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' \
      "$repo/$src")
  done
}

# The line filter: every changed file with its ranges, named by
# "/<path from the repo root>", which clang-tidy matches as a path suffix.
line_filter() {
  awk -F'\t' '
    {
      name = $1; gsub(/\\/, "\\\\", name); gsub(/"/, "\\\"", name)
      if (!(name in seen)) { seen[name] = 1; order[++n] = name }
      r[name] = r[name] (r[name] == "" ? "" : ",") "[" $2 "," $3 "]"
    }
    END {
      printf "["
      for (i = 1; i <= n; i++)
        printf "%s{\"name\":\"/%s\",\"lines\":[%s]}", (i > 1 ? "," : ""),
          order[i], r[order[i]]
      printf "]"
    }' "$tmp/ranges"
}

diagnostic=': (warning|error): '

# A translation unit's clang-tidy output without what was already shown for
# an earlier one (a changed header's lines, seen through each source that
# includes it: a diagnostic with its notes and source lines), nor the counts
# of what the filters hid. The shown diagnostics are kept in $tmp/seen.
dedup_diagnostics() {
  touch "$tmp/seen"
  awk -v re="$diagnostic" -v seen="$tmp/seen" '
    BEGIN { show = 1; while ((getline k <seen) > 0) done[k] = 1 }
    /^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$/ { next }
    $0 ~ re { show = !($0 in done); if (show) { done[$0] = 1; print >>seen } }
    show'
}

check_tidy() {
  if ((${#files[@]} == 0)); then
    echo "tidy_changed_lines: 0 files, 0 lines changed since $short: OK"
    return 0
  fi
  if [[ ! -f "$build/compile_commands.json" ]]; then
    echo "check_changed: no $build/compile_commands.json (configure with" \
      "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON)" >&2
    return 2
  fi
  mapfile -t db < <(compile_db_sources)
  local f t n
  for f in "${db[@]}"; do indb[$f]=1; done
  tus=()
  local headers=() skipped=()
  for f in "${files[@]}"; do
    if [[ -n "${indb[$f]:-}" ]]; then
      tus+=("$f")
    elif [[ "$f" == *.h ]]; then
      headers+=("$f")
    else
      skipped+=("$f")
    fi
  done
  declare -A chosen=()
  for t in "${tus[@]}"; do chosen[$t]=1; done
  for f in "${headers[@]}"; do
    t=$(own_source "$f")
    if [[ -z "$t" ]]; then t=$(includer_of "$f"); fi
    if [[ -z "$t" ]]; then
      skipped+=("$f")
    elif [[ -z "${chosen[$t]:-}" ]]; then
      chosen[$t]=1
      tus+=("$t")
    fi
  done

  local filter i=0 rc
  filter=$(line_filter)
  for t in "${tus[@]}"; do
    while (($(jobs -rp | wc -l) >= njobs)); do wait -n || true; done
    i=$((i + 1))
    # From the repo: clang-tidy takes HeaderFilterRegex from the .clang-tidy
    # found from the working directory (run elsewhere, as CTest does, it would
    # show nothing in headers).
    (
      cd "$repo"
      rc=0
      "$CLANG_TIDY" -p "$build" --quiet --line-filter="$filter" \
        "$repo/$t" >"$tmp/tidy.$i.log" 2>&1 || rc=$?
      echo "$rc" >"$tmp/tidy.$i.rc"
    ) &
  done
  wait
  local found=0 failed=0
  for ((i = 1; i <= ${#tus[@]}; i++)); do
    rc=$(cat "$tmp/tidy.$i.rc")
    dedup_diagnostics <"$tmp/tidy.$i.log" >"$tmp/tidy.$i.out"
    n=$(grep -Ec "$diagnostic" "$tmp/tidy.$i.out" || true)
    # A failed run without a diagnostic of its own: clang-tidy itself
    # failed (no compile command, a missing generated header...).
    if [[ "$rc" != 0 ]] && ! grep -Eq "$diagnostic" "$tmp/tidy.$i.log"; then
      failed=$((failed + 1))
      n=1
    fi
    if ((n)); then
      echo "== clang-tidy ${tus[i - 1]} (exit $rc)"
      cat "$tmp/tidy.$i.out"
      found=$((found + n))
    fi
  done
  local summary="tidy_changed_lines: ${#files[@]} files, $lines lines changed"
  summary+=" since $short, through ${#tus[@]} translation units"
  if ((${#skipped[@]})); then
    summary+="; not in compile_commands.json, skipped: ${skipped[*]}"
  fi
  if ((failed)); then
    echo "$summary: clang-tidy failed on $failed of them"
    return 1
  elif ((found)); then
    echo "$summary: $found diagnostics"
    return 1
  fi
  echo "$summary: OK"
}

# Each check in a subshell of its own: called from an `if` or `||`, its
# `set -e` would be off.
declare -A indb=()
status=0
run() {
  set +e
  ("check_$1")
  local rc=$?
  set -e
  if ((rc > status)); then status=$rc; fi
}
if ((format)); then run format; fi
if ((tidy)); then run tidy; fi
exit "$status"
