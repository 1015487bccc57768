#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Seed corpus for tests/fuzz/kernel_wire_fuzzer.cpp: streams of kernel-wire
# frames (lib/kernel/kernel_wire.h: u32 length, type byte, payload) as
# liblinkd and the daemon send them, encoded here (nothing binary is
# committed): a Link naming real inputs (a gfx90a object compiled here when
# clang-19 can, else a stand-in) with LLD's environment, the daemon's Need,
# the Blob uploads, a Result with outputs, Health and its reply, an Error,
# and a whole exchange in one stream.
#
#   tests/fuzz/make_corpus.sh --kernel DIR   (or this script with DIR)
set -euo pipefail
out=${1:?usage: make_kernel_corpus.sh DIR}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '__attribute__((visibility("default"))) int slot;\n'\
'__attribute__((amdgpu_kernel)) void k(int *p) { *p = slot; }\n' > "$work/k.c"
if ! clang-19 --target=amdgcn-amd-amdhsa -mcpu=gfx90a -nogpulib -c \
    "$work/k.c" -o "$work/k.o" 2>/dev/null; then
  printf '\177ELF stand-in object' > "$work/k.o"
fi
python3 - "$out" "$work/k.o" <<'PY'
import hashlib, os, struct, sys

out, obj = sys.argv[1], open(sys.argv[2], 'rb').read()
u8 = lambda v: struct.pack('<B', v)
u32 = lambda v: struct.pack('<I', v & 0xffffffff)
u64 = lambda v: struct.pack('<Q', v)
s = lambda b: u32(len(b)) + b
d = lambda b: u64(len(b)) + b
frame = lambda p: u32(len(p)) + p

def link(argv, env, inputs, flavor=1, flags=0, timeout=0):
    p = b'L' + u32(1) + u8(flavor) + u32(flags) + u32(timeout)
    p += u32(len(argv)) + b''.join(s(a) for a in argv)
    p += u32(len(env)) + b''.join(s(k) + s(v) for k, v in env)
    p += u32(len(inputs))
    for name, data in inputs:
        p += s(name) + s(hashlib.sha256(data).digest()) + u64(len(data))
    return p

def need(idx): return b'N' + u32(len(idx)) + b''.join(u32(i) for i in idx)
def blob(i, data): return b'B' + u32(i) + d(data)
def result(rc, sig, hit, up, so, se, outs):
    p = b'R' + u32(rc) + u32(sig) + u8(hit) + u32(up) + d(so) + d(se)
    p += u32(len(outs))
    for name, mode, data in outs:
        p += s(name) + u32(mode) + d(data)
    return p
def health_reply(v, lld, *n): return b'h' + s(v) + s(lld) + b''.join(u64(x) for x in n)
def error(m): return b'E' + s(m)

lib = b'int f(void){return 1;}\n'
inputs = [(b'k.o', obj), (b'sub/lib.o', lib), (b'/abs/x.o', b'')]
argv = [b'ld.lld', b'-shared', b'k.o', b'sub/lib.o', b'-o', b'k.hsaco']
seeds = {
    'link': [link(argv, [(b'LLD_VERSION', b'IREE')], inputs)],
    'link-coff': [link([b'lld-link', b'/out:a.exe', b'a.obj'], [(b'LIB', b'C:\\lib')],
                       [(b'a.obj', b'\x64\x86')], flavor=2, flags=1, timeout=5000)],
    'link-bad-name': [link(argv, [], [(b'../x.o', lib), (b'a//b', lib)])],
    'need': [need([0, 2, 1])],
    'blobs': [blob(0, obj), blob(1, lib), blob(2, b'')],
    'result': [result(0, 0, 1, 2, b'out\n', b'ld.lld: warning: x\n',
                      [(b'k.hsaco', 0o755, obj), (b'k.map', 0o644, b'map')])],
    'result-signal': [result(139, 11, 0, 0, b'', b'', [])],
    'health': [b'H', health_reply(b'0.1.0', b'LLD 19.1.7', 1, 2, 3, 4)],
    'error': [error(b'input k.o does not match its digest')],
    'exchange': [link(argv, [], inputs), need([0, 1, 2]), blob(0, obj),
                 blob(1, lib), blob(2, b''),
                 result(0, 0, 0, 3, b'', b'', [(b'k.hsaco', 0o755, obj)])],
}
for name, frames in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(b''.join(frame(p) for p in frames))
PY
echo "wrote $(ls "$out" | wc -l) seeds to $out"
