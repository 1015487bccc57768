// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "incremental/link_map.h"

#include "llvm/ADT/StringExtras.h"

namespace linkd::incremental {

using namespace llvm;

namespace {

// The fixed header of a 64-bit map line: "%16llx %16llx %8llx %5lld ".
constexpr size_t kHeader = 16 + 1 + 16 + 1 + 8 + 1 + 5 + 1;

} // namespace

Expected<LinkMap> LinkMap::parse(StringRef text, StringRef onlyFile) {
  if (onlyFile.empty())
    return parse(text, [](StringRef) { return true; });
  return parse(text, [&](StringRef file) { return file == onlyFile; });
}

Expected<LinkMap> LinkMap::parse(StringRef text,
                                 function_ref<bool(StringRef)> keep) {
  LinkMap map;
  std::string output;
  size_t lineNo = 0;
  bool sawHeader = false;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    ++lineNo;
    if (!sawHeader) {
      if (!line.trim().starts_with("VMA"))
        return createStringError(inconvertibleErrorCode(),
                                 "not an LLD link map (line 1: no VMA/LMA "
                                 "header)");
      sawHeader = true;
      continue;
    }
    if (line.empty())
      continue;
    if (line.size() < kHeader)
      return createStringError(inconvertibleErrorCode(),
                               "link map line %zu is too short", lineNo);
    StringRef what = line.substr(kHeader);
    if (what.empty())
      continue; // a symbol assignment with no text (--defsym)
    size_t indent = what.find_first_not_of(' ');
    if (indent != 0 && indent != 8) // a symbol
      continue;
    what = what.substr(indent);
    size_t open = what.find(":(");
    if (indent == 8 && (open == StringRef::npos || !what.ends_with(")") ||
                        !keep(what.take_front(open))))
      continue;
    uint64_t vma = 0, size = 0;
    if (line.substr(0, 16).trim().getAsInteger(16, vma) ||
        line.substr(34, 8).trim().getAsInteger(16, size))
      return createStringError(inconvertibleErrorCode(),
                               "link map line %zu: unreadable address or "
                               "size",
                               lineNo);
    if (indent == 0) { // an output section (or a linker script command)
      output = what.str();
      continue;
    }
    // An .eh_frame piece: "a.o:(.eh_frame+0x10)".
    constexpr StringRef kEh = ":(.eh_frame+0x";
    if (size_t at = what.rfind(kEh); at != StringRef::npos) {
      uint64_t offset = 0;
      StringRef hex = what.drop_back().substr(at + kEh.size());
      if (!hex.getAsInteger(16, offset))
        map.ehPieces_[what.take_front(at).str()].push_back(
            EhPiece{offset, vma, size});
      continue;
    }
    if (what.contains("+0x"))
      continue; // a piece of another synthetic section
    map.files_.insert(what.take_front(open).str());
    map.inputs_[what.str()].push_back(Placement{output, vma, size});
  }
  if (!sawHeader)
    return createStringError(inconvertibleErrorCode(), "an empty link map");
  return map;
}

std::vector<EhPiece> LinkMap::ehPieces(StringRef file) const {
  auto found = ehPieces_.find(file);
  return found == ehPieces_.end() ? std::vector<EhPiece>{} : found->second;
}

std::vector<Placement> LinkMap::find(StringRef file, StringRef section) const {
  std::string key = (file + ":(" + section + ")").str();
  auto found = inputs_.find(key);
  if (found == inputs_.end())
    return {};
  return found->second;
}

} // namespace linkd::incremental
