#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The Debian package: built from the build tree with CPack, its control data
# checked (name, dependencies that resolve on this Debian 12), installed with
# dpkg into a scratch root (its own dpkg database; nothing of this machine
# changes), and smoke-tested through the installed client: daemon
# autostart, a link byte-identical to stock LLD, a hit, gcc -B.
#   deb_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/common.sh"
work=$(mktemp -d /tmp/linkd-deb-test.XXXXXX)
trap 'stop_smoke_daemon; rm -rf "$work"' EXIT

(cd "$work" && cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/pkg" \
  >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack"; }
deb=$(ls "$work"/pkg/linkd_*.deb)
dpkg-deb --info "$deb" > "$work/info.txt"
grep -q '^ Package: linkd$' "$work/info.txt" || fail "package name"
depends=$(sed -n 's/^ Depends: //p' "$work/info.txt")
for lib in libllvm19 libspdlog libsqlite3 libzstd; do
  [[ $depends == *$lib* ]] || fail "Depends lacks $lib: $depends"
done
# Every dependency can be met from this Debian 12's archive (already
# installed here, or installable).
apt-get install --simulate -q "$deb" > "$work/apt.txt" 2>&1 ||
  { cat "$work/apt.txt"; fail "apt-get cannot install $deb"; }
dpkg-deb --contents "$deb" > "$work/contents.txt"
for f in ./usr/bin/linkd ./usr/bin/ld.linkd ./usr/lib/linkd/gcc/ld \
  ./usr/share/man/man1/linkd.1 ./usr/share/man/man5/linkd.conf.5 \
  ./usr/lib/systemd/user/linkd.service ./usr/share/doc/linkd/usage.md \
  ./usr/share/doc/linkd/copyright ./usr/share/doc/linkd/LICENSE \
  ./usr/lib/python3/dist-packages/linkd/__init__.py; do
  grep -q " $f\( \|$\)" "$work/contents.txt" || fail "package lacks $f"
done

# dpkg proper, into a root of its own.
root="$work/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
: > "$root/var/lib/dpkg/status"
dpkg --root="$root" --force-depends --force-script-chrootless \
  --log=/dev/null -i "$deb" > "$work/dpkg.txt" 2>&1 ||
  { cat "$work/dpkg.txt"; fail "dpkg -i"; }
dpkg --root="$root" -s linkd | grep -q '^Status: install ok installed' ||
  fail "dpkg does not list linkd as installed"
grep -q '^ExecStart=/usr/bin/linkd serve' "$root/usr/lib/systemd/user/linkd.service" ||
  fail "the packaged unit does not name /usr/bin/linkd"
file "$root/usr/bin/linkd-lld" | grep -q 'stripped' ||
  fail "binaries are not stripped"
file "$root/usr/bin/linkd-lld" | grep -q 'not stripped' &&
  fail "binaries are not stripped"

smoke_link "$root/usr/bin" "$root/usr/lib/linkd/gcc" "$work/smoke"
echo "deb ok: $(basename "$deb") $(du -h "$deb" | cut -f1)"
