#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Checks the units with `systemd-analyze verify`, pointing ExecStart at the
# build's binary (the units name /usr/local/bin/linkd, the install path).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
linkd=${1:-$(cd "$here/../.." && pwd)/build/bin/linkd}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for u in linkd.service linkd.socket linkd-farm.service; do
  sed "s#/usr/local/bin/linkd#$linkd#g" "$here/$u" > "$tmp/$u"
done
cd "$tmp"
# The user manager wants a runtime directory.
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$tmp/run}
mkdir -p -m 0700 "$XDG_RUNTIME_DIR"
# verify exits 0 on unknown keys and bad values; any message is a failure.
out=$( (systemd-analyze verify --user linkd.socket linkd.service &&
        systemd-analyze verify linkd-farm.service) 2>&1) || { echo "$out"; exit 1; }
if [ -n "$out" ]; then echo "$out"; exit 1; fi
echo "units ok"
