#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Seed corpus for tests/fuzz/farm_node_fuzzer.cpp (run as
# `make_corpus.sh --farm DIR`): whole offloaded links in the fuzzer's frame
# format, kind (1 byte) | length (2 bytes, little-endian) | payload; an even
# kind is a serialized OffloadUp (protoc --encode from text), an odd kind a
# question of the link child (lib/child/sandbox_protocol.h).
set -euo pipefail

out=${1:?usage: make_farm_corpus.sh DIR}
repo=$(cd "$(dirname "$0")/../.." && pwd)
PROTOC=${PROTOC:-protoc}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# An input file the link reads, its digest as a protobuf text escape.
printf 'int main(void) { return 0; }\n' >"$work/a.o"
size=$(stat -c %s "$work/a.o")
esc() { sed 's/../\\x&/g' <<<"$1"; }
digest=$(esc "$(sha256sum "$work/a.o" | cut -c1-64)")
zstd -q -1 -c "$work/a.o" >"$work/a.o.zst"
# Text-format bytes of a file: every byte escaped.
bytes() { od -An -v -tx1 "$1" | tr -d ' \n' | sed 's/../\\x&/g'; }

up() { # TEXT -> serialized OffloadUp on stdout
  "$PROTOC" -I"$repo/proto" --encode=linkd.v1.OffloadUp linkd/v1/farm.proto <<<"$1"
}
frame() { # KIND FILE
  local n
  n=$(stat -c %s "$2")
  printf "\\x$(printf %02x "$1")\\x$(printf %02x $((n & 255)))\\x$(printf %02x $((n >> 8)))"
  cat "$2"
}
question() { # OP PATH [SECOND] -> a question file
  { printf '%s%s\0' "$1" "$2"; [[ $# -lt 3 ]] || printf '%s\0' "$3"; } >"$work/q"
  frame 1 "$work/q"
}
start() { # EXTRA-FACT-TEXT
  up "start {
  link { protocol_version: 1 flavor: FLAVOR_ELF cwd: \"/w\"
         argv: \"ld.lld\" argv: \"/w/a.o\" argv: \"-o\" argv: \"/w/a.out\" }
  facts { path: \"/w\" kind: DIRECTORY mode: 16877 }
  facts { path: \"/w/a.o\" kind: FILE digest: \"$digest\" size: $size
          mode: 33188 likely_read: true }
  $1
}" >"$work/start"
  frame 0 "$work/start"
}
blob() { # DATA-FILE COMPRESSED
  up "blob { digest: \"$digest\" offset: 0 data: \"$(bytes "$1")\"
             compressed: $2 last: true }" >"$work/blob"
  frame 2 "$work/blob"
}

# A link that reads its input (uploaded), writes, renames and chmods its
# output, and removes a temporary.
{
  start ""
  blob "$work/a.o" false
  question S /w/a.o
  question R /w/a.o
  question W /w/a.out.tmp1234567
  question N /w/a.out.tmp1234567 /w/a.out
  question H /w/a.out 493
  question W /w/a.map
  question U /w/a.map
  question S /w/a.out
} >"$out/link-plain"
# The upload compressed, and a path the node asks the client about.
{
  start "facts { path: \"/w/absent\" kind: ABSENT error: 2 }"
  blob "$work/a.o.zst" true
  question S /w/lib/libc.so
  up 'facts { facts { path: "/w/lib/libc.so" kind: ABSENT error: 2 } }' >"$work/f"
  frame 2 "$work/f"
  question S /w/absent
  question R /w/a.o
} >"$work/l" && mv "$work/l" "$out/link-compressed"
# Questions before the blob they need has arrived; a malformed question.
{
  start ""
  question R /w/a.o
  printf 'Zbad' >"$work/q"
  frame 1 "$work/q"
  blob "$work/a.o" false
  question R /w/a.o
} >"$out/link-waiting"
# A start the node refuses (a rewrite plan), and one with no facts.
up 'start { link { flavor: FLAVOR_ELF cwd: "/w" argv: "ld.lld"
                   rewrite_plan { } } }' >"$work/s"
frame 0 "$work/s" >"$out/refused-plan"
up 'start { link { flavor: FLAVOR_COFF cwd: "/w" argv: "lld-link" } }' >"$work/s"
{ frame 0 "$work/s"; question S /w/x.obj; } >"$out/coff-bare"
echo "$(ls "$out" | wc -l) files in $out"
