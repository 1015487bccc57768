#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# `cmake --install` into a DESTDIR with a prefix of its own: every file is
# there, the units and examples name that prefix, the man pages cover
# `linkd --help`, `ld.linkd --linkd-help` and every key `linkd config`
# prints, and a link through the installed client (clang --ld-path, gcc -B
# and COMPILER_PATH) is byte-identical to stock LLD, then a hit.
#   install_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
work=$(mktemp -d /tmp/linkd-install-test.XXXXXX)
trap 'stop_smoke_daemon; rm -rf "$work"' EXIT

prefix=/opt/linkd-test
DESTDIR="$work/dest" cmake --install "$build" --prefix "$prefix" >/dev/null
root="$work/dest$prefix"

for f in bin/linkd bin/linkd-lld bin/ld.linkd bin/ld64.linkd \
  bin/lld-link.linkd bin/wasm-ld.linkd bin/ar.linkd bin/ranlib.linkd \
  bin/lib.linkd lib/linkd/gcc/ld lib/linkd/gcc/ld.lld \
  share/man/man1/linkd.1 share/man/man1/ld.linkd.1 share/man/man5/linkd.conf.5 \
  share/bash-completion/completions/linkd share/zsh/vendor-completions/_linkd \
  lib/systemd/user/linkd.service lib/systemd/user/linkd.socket \
  lib/systemd/system/linkd-farm.service \
  share/doc/linkd/README.md share/doc/linkd/usage.md share/doc/linkd/cache.md \
  share/doc/linkd/LICENSE share/doc/linkd/copyright \
  share/doc/linkd/examples/linkd-profile.sh share/doc/linkd/examples/clang-linkd.cfg; do
  [ -e "$root/$f" ] || fail "not installed: $f"
done
# The Python module where the interpreter looks for this prefix (its
# sysconfig purelib), importable from there with the library beside it.
purelib=$(python3 "$here/../../../deploy/python_purelib.py" "$prefix")
[ -e "$work/dest$purelib/linkd/__init__.py" ] ||
  fail "the Python module is not in $purelib: $(cd "$work/dest" && find . -name __init__.py -path '*linkd*')"
[ "$(PYTHONPATH="$work/dest$purelib" LINKD_LIBRARY="$root/lib/liblinkd.so.1" \
  python3 -c 'import linkd; print(linkd.version())')" = "$(sed -n 's/^project(linkd VERSION \([0-9.]*\).*/\1/p' "$here/../../../CMakeLists.txt")" ] ||
  fail "the installed module does not import"
[ -f "$root/lib/liblinkd.so.1" ] && [ ! -L "$root/lib/liblinkd.so.1" ] ||
  fail "liblinkd.so.1 is not the library file"
[ "$(readlink -f "$root/lib/linkd/gcc/ld")" = "$(readlink -f "$root/bin/ld.linkd")" ] ||
  fail "gcc/ld does not lead to the client"
[ "$(readlink "$root/lib/linkd/gcc/ld")" = ../../../bin/ld.linkd ] ||
  fail "gcc/ld is not a relative link: $(readlink "$root/lib/linkd/gcc/ld")"
grep -q "^ExecStart=$prefix/bin/linkd serve" "$root/lib/systemd/user/linkd.service" ||
  fail "linkd.service does not name $prefix/bin/linkd"
grep -q "file://$prefix/share/doc/linkd/usage.md" "$root/lib/systemd/user/linkd.service" ||
  fail "linkd.service's Documentation= is not the installed usage.md"
grep -q "^ExecStart=$prefix/bin/linkd serve" "$root/lib/systemd/system/linkd-farm.service" ||
  fail "linkd-farm.service does not name $prefix/bin/linkd"
grep -q "COMPILER_PATH=\"$prefix/lib/linkd/gcc" "$root/share/doc/linkd/examples/linkd-profile.sh" ||
  fail "profile snippet does not name $prefix/lib/linkd/gcc"
grep -q -- "--ld-path=$prefix/bin/ld.linkd" "$root/share/doc/linkd/examples/clang-linkd.cfg" ||
  fail "clang config does not name $prefix/bin/ld.linkd"
if command -v systemd-analyze >/dev/null; then
  # Verified where the files are now (the DESTDIR), not where they will be.
  mkdir -p "$work/units"
  for u in user/linkd.socket user/linkd.service; do
    sed "s#$prefix/#$root/#g" "$root/lib/systemd/$u" > "$work/units/${u#user/}"
  done
  out=$(cd "$work/units" && XDG_RUNTIME_DIR=$work \
    systemd-analyze verify --user linkd.socket linkd.service 2>&1) || true
  [ -z "$out" ] || fail "systemd-analyze verify: $out"
fi

# The man pages against the binaries. Roff escapes taken out first.
page_text() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\(em/--/g' "$1"; }
page_text "$root/share/man/man1/linkd.1" > "$work/linkd.1.txt"
help=$("$root/bin/linkd" --help)
commands=$(printf '%s\n' "$help" | sed -n 's/^  \([a-z][a-z-]*\).*/\1/p')
[ "$(printf '%s\n' "$commands" | wc -l)" -ge 10 ] || fail "few commands in --help"
for c in $commands; do
  grep -q "^\.B $c\b" "$work/linkd.1.txt" || fail "linkd.1 has no command $c"
done
for o in $(printf '%s\n' "$help" | grep -o -- '--[a-z][a-z0-9-]*\|-[A-Za-z]\b' | sort -u); do
  grep -q -- "$o\b" "$work/linkd.1.txt" || fail "linkd.1 does not mention $o"
done
page_text "$root/share/man/man1/ld.linkd.1" > "$work/ld.linkd.1.txt"
for o in $("$root/bin/ld.linkd" --linkd-help | grep -o -- '--linkd-[a-z-]*' | sort -u); do
  grep -q -- "$o" "$work/ld.linkd.1.txt" || fail "ld.linkd.1 does not mention $o"
done
page_text "$root/share/man/man5/linkd.conf.5" > "$work/linkd.conf.5.txt"
keys=$(LINKD_SOCKET="$work/none/linkd.sock" LINKD_CONFIG=/dev/null \
  "$root/bin/linkd" config | sed -n 's/^\([a-z_]*\) = .*/\1/p')
[ "$(printf '%s\n' "$keys" | wc -l)" -ge 20 ] || fail "few keys from linkd config"
for k in $keys; do
  grep -q "^\.BR* \(.* \)\?$k\b" "$work/linkd.conf.5.txt" || fail "linkd.conf.5 has no key $k"
done
if command -v man >/dev/null; then
  for p in man1/linkd.1 man1/ld.linkd.1 man5/linkd.conf.5; do
    out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$root/share/man/$p" 2>&1 >/dev/null)
    [ -z "$out" ] || fail "man $p: $out"
  done
fi

# Completion loads and completes a command.
bash -c "source '$root/share/bash-completion/completions/linkd'
  COMP_WORDS=(linkd con); COMP_CWORD=1; _linkd; [ \"\${COMPREPLY[*]}\" = config ]" ||
  fail "bash completion"

smoke_link "$root/bin" "$root/lib/linkd/gcc" "$work/smoke"
echo "install ok"
