// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "audit/module_id.h"

#include <cstdint>
#include <cstring>

namespace linkd::audit {

namespace {

// Reads of a file we did not write: every offset checked against the bytes.
struct Bytes {
  std::string_view b;
  bool big = false;

  bool has(uint64_t off, uint64_t n) const {
    return off <= b.size() && n <= b.size() - off;
  }
  uint64_t get(uint64_t off, unsigned n) const {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; ++i) {
      auto c = static_cast<unsigned char>(b[off + (big ? i : n - 1 - i)]);
      v = (v << 8) | c;
    }
    return v;
  }
  bool read(uint64_t off, unsigned n, uint64_t &v) const {
    if (!has(off, n))
      return false;
    v = get(off, n);
    return true;
  }
};

std::string hex(std::string_view s) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

// NT_GNU_BUILD_ID in a PT_NOTE segment: notes stay in their segment when
// `strip` removes the section headers' other tables.
std::string elfBuildId(std::string_view data) {
  Bytes f{data};
  if (!f.has(0, 0x40) || data[4] < 1 || data[4] > 2)
    return {};
  bool is64 = data[4] == 2;
  f.big = data[5] == 2;
  uint64_t phoff = 0, phentsize = 0, phnum = 0;
  if (!f.read(is64 ? 0x20 : 0x1c, is64 ? 8 : 4, phoff) ||
      !f.read(is64 ? 0x36 : 0x2a, 2, phentsize) ||
      !f.read(is64 ? 0x38 : 0x2c, 2, phnum) ||
      phentsize < (is64 ? 0x38u : 0x20u))
    return {};
  for (uint64_t i = 0; i < phnum; ++i) {
    uint64_t ph = phoff + i * phentsize, type = 0, off = 0, size = 0;
    if (!f.read(ph, 4, type) || type != 4 /*PT_NOTE*/ ||
        !f.read(ph + (is64 ? 8 : 4), is64 ? 8 : 4, off) ||
        !f.read(ph + (is64 ? 0x20 : 0x10), is64 ? 8 : 4, size) ||
        !f.has(off, size))
      continue;
    for (uint64_t at = off; at + 12 <= off + size;) {
      uint64_t namesz = f.get(at, 4), descsz = f.get(at + 4, 4),
               ntype = f.get(at + 8, 4);
      uint64_t name = at + 12, desc = name + ((namesz + 3) & ~3ull);
      uint64_t next = desc + ((descsz + 3) & ~3ull);
      if (namesz > size || descsz > size || next > off + size)
        break;
      if (ntype == 3 /*NT_GNU_BUILD_ID*/ && namesz == 4 &&
          data.substr(name, 4) == std::string_view("GNU\0", 4) && descsz > 0)
        return "elf-build-id:" + hex(data.substr(desc, descsz));
      at = next;
    }
  }
  return {};
}

// The CodeView record ("RSDS", GUID, age) of the debug directory: lld
// writes one for --build-id (the MinGW driver's default) and /debug,
// without debug info too.
std::string peBuildId(std::string_view data) {
  Bytes f{data};
  uint64_t pe = 0;
  if (!f.has(0, 0x40) || data.substr(0, 2) != "MZ" || !f.read(0x3c, 4, pe) ||
      !f.has(pe, 24) || data.substr(pe, 4) != std::string_view("PE\0\0", 4))
    return {};
  uint64_t coff = pe + 4, nsec = f.get(coff + 2, 2),
           optSize = f.get(coff + 16, 2), opt = coff + 20, magic = 0;
  if (!f.read(opt, 2, magic) || (magic != 0x10b && magic != 0x20b))
    return {};
  uint64_t dirs = opt + (magic == 0x20b ? 112 : 96), count = 0;
  if (!f.read(opt + (magic == 0x20b ? 108 : 92), 4, count) || count <= 6 ||
      !f.has(dirs + 6 * 8, 8) || dirs + 7 * 8 > opt + optSize)
    return {};
  uint64_t rva = f.get(dirs + 6 * 8, 4), size = f.get(dirs + 6 * 8 + 4, 4);
  uint64_t sections = opt + optSize, dirOff = UINT64_MAX;
  for (uint64_t i = 0; i < nsec && f.has(sections + i * 40, 40); ++i) {
    uint64_t s = sections + i * 40, va = f.get(s + 12, 4),
             raw = f.get(s + 16, 4), ptr = f.get(s + 20, 4);
    if (rva >= va && rva - va < raw)
      dirOff = ptr + (rva - va);
  }
  if (dirOff == UINT64_MAX || !f.has(dirOff, size))
    return {};
  for (uint64_t e = dirOff; e + 28 <= dirOff + size; e += 28) {
    uint64_t type = f.get(e + 12, 4), len = f.get(e + 16, 4),
             ptr = f.get(e + 24, 4);
    if (type != 2 /*IMAGE_DEBUG_TYPE_CODEVIEW*/ || len < 24 ||
        !f.has(ptr, 24) || data.substr(ptr, 4) != "RSDS")
      continue;
    return "pe-codeview:" + hex(data.substr(ptr + 4, 16)) + "-" +
           std::to_string(f.get(ptr + 20, 4));
  }
  return {};
}

} // namespace

std::string moduleBuildId(std::string_view bytes) {
  if (bytes.substr(0, 4) == "\x7f"
                            "ELF")
    return elfBuildId(bytes);
  return peBuildId(bytes);
}

} // namespace linkd::audit
