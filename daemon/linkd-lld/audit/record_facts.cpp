// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/audit/record_facts.h"

#include "daemon/linkd-lld/audit/module_reader.h"

#include <llvm/Demangle/Demangle.h>
#include <llvm/Object/Archive.h>
#include <llvm/Object/COFF.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

namespace linkd::audit {
namespace {

using namespace llvm;

struct Fact {
  char binding = 0; // 'g', 'l'; '?' where one object has the name both ways
  std::string source;
};

// Facts by the name LLD's map prints (demangled) and by the raw name.
using Facts = std::unordered_map<std::string, Fact>;

void note(Facts &facts, const std::set<std::string> &wanted, StringRef raw,
          char binding, const std::string &source) {
  auto put = [&](const std::string &name) {
    if (!wanted.count(name))
      return;
    auto [it, fresh] = facts.try_emplace(name, Fact{binding, source});
    if (!fresh && it->second.binding != binding)
      it->second.binding = '?';
  };
  put(raw.str());
  // LLD demangles Itanium names (and MinGW i386's "__Z" with its prefix).
  if (raw.starts_with("_Z") || raw.starts_with("?"))
    put(demangle(raw));
  else if (raw.starts_with("__Z"))
    put(demangle(raw.drop_front()));
}

template <class ELFT>
void elfFacts(const object::ELFObjectFile<ELFT> &obj,
              const std::set<std::string> &wanted, Facts &facts) {
  const auto &elf = obj.getELFFile();
  auto sections = elf.sections();
  if (!sections) {
    consumeError(sections.takeError());
    return;
  }
  for (const auto &sh : *sections) {
    if (sh.sh_type != ELF::SHT_SYMTAB)
      continue;
    auto syms = elf.symbols(&sh);
    auto strtab = elf.getStringTableForSymtab(sh, *sections);
    if (!syms || !strtab) {
      if (!syms)
        consumeError(syms.takeError());
      if (!strtab)
        consumeError(strtab.takeError());
      return;
    }
    std::string file; // the STT_FILE before a run of locals
    for (const auto &sym : *syms) {
      auto name = sym.getName(*strtab);
      if (!name) {
        consumeError(name.takeError());
        continue;
      }
      if (sym.getType() == ELF::STT_FILE) {
        file = name->str();
        continue;
      }
      if (sym.isUndefined() || sym.getType() == ELF::STT_SECTION ||
          sym.getType() == ELF::STT_FUNC || name->empty())
        continue;
      bool local = sym.getBinding() == ELF::STB_LOCAL;
      note(facts, wanted, *name, local ? 'l' : 'g', local ? file : "");
    }
    return;
  }
}

void coffFacts(const object::COFFObjectFile &obj,
               const std::set<std::string> &wanted, Facts &facts) {
  // The source file: the aux records of a ".file" symbol, wherever it is.
  std::string file;
  for (const object::SymbolRef &s : obj.symbols())
    if (std::optional<std::string> name =
            coffFileRecordName(obj, obj.getCOFFSymbol(s))) {
      file = std::move(*name);
      break;
    }
  for (const object::SymbolRef &s : obj.symbols()) {
    object::COFFSymbolRef sym = obj.getCOFFSymbol(s);
    if (sym.isUndefined() || sym.isFileRecord() || sym.isSectionDefinition() ||
        sym.isFunctionDefinition() || sym.getSectionNumber() <= 0)
      continue;
    bool external = sym.isExternal();
    if (!external && sym.getStorageClass() != COFF::IMAGE_SYM_CLASS_STATIC)
      continue;
    Expected<StringRef> name = obj.getSymbolName(sym);
    if (!name) {
      consumeError(name.takeError());
      continue;
    }
    note(facts, wanted, *name, external ? 'g' : 'l', external ? "" : file);
  }
}

void objectFacts(const object::Binary &bin, const std::set<std::string> &wanted,
                 Facts &facts) {
  if (const auto *o = dyn_cast<object::ELF64LEObjectFile>(&bin))
    elfFacts(*o, wanted, facts);
  else if (const auto *o = dyn_cast<object::ELF32LEObjectFile>(&bin))
    elfFacts(*o, wanted, facts);
  else if (const auto *o = dyn_cast<object::ELF64BEObjectFile>(&bin))
    elfFacts(*o, wanted, facts);
  else if (const auto *o = dyn_cast<object::ELF32BEObjectFile>(&bin))
    elfFacts(*o, wanted, facts);
  else if (const auto *o = dyn_cast<object::COFFObjectFile>(&bin))
    coffFacts(*o, wanted, facts);
}

// "archive(member)" -> {archive, member}; a plain path -> {path, ""}.
std::pair<std::string, std::string> splitInput(const std::string &input) {
  if (input.ends_with(")")) {
    size_t open = input.rfind('(');
    if (open != std::string::npos && open > 0)
      return {input.substr(0, open),
              input.substr(open + 1, input.size() - open - 2)};
  }
  return {input, ""};
}

// The facts of the inputs of one file: the object itself (member ""), or
// the named members of an archive, read in one pass over it (W1 links
// thousands of members of a few archives).
void fileFacts(
    const std::string &path,
    const std::map<std::string, const std::set<std::string> *> &members,
    std::map<std::string, Facts> &out) {
  // Regular files only, opened without blocking: an input LLD read from a
  // FIFO or a device is gone, and opening it again could wait forever.
  std::unique_ptr<MemoryBuffer> buf = readModuleFile(path, nullptr);
  if (!buf)
    return;
  auto bin = object::createBinary(buf->getMemBufferRef());
  if (!bin) {
    consumeError(bin.takeError());
    return;
  }
  auto *ar = dyn_cast<object::Archive>(bin->get());
  if (!ar) {
    if (auto it = members.find(""); it != members.end())
      objectFacts(**bin, *it->second, out[path]);
    return;
  }
  std::set<std::string> done;
  Error err = Error::success();
  for (const object::Archive::Child &c : ar->children(err)) {
    if (done.size() == members.size())
      break;
    auto name = c.getName();
    if (!name) {
      consumeError(name.takeError());
      continue;
    }
    auto it = members.find(name->str());
    if (it == members.end() || done.count(it->first))
      continue;
    auto child = c.getAsBinary();
    if (!child) {
      consumeError(child.takeError());
      continue;
    }
    Facts one;
    objectFacts(**child, *it->second, one);
    // Members of one name: the first that defines the names counts.
    if (!one.empty()) {
      out[path + "(" + it->first + ")"] = std::move(one);
      done.insert(it->first);
    }
  }
  consumeError(std::move(err));
}

} // namespace

void addInputFacts(std::vector<RecordedSymbol> &symbols) {
  std::map<std::string, std::set<std::string>> wanted; // input -> names
  for (const RecordedSymbol &s : symbols)
    if (s.kind != 'W' && !isToolchainInput(s.input))
      wanted[s.input].insert(s.name);
  // By file: an object, or an archive with the members wanted of it.
  std::map<std::string, std::map<std::string, const std::set<std::string> *>>
      byFile;
  for (const auto &[input, names] : wanted) {
    auto [file, member] = splitInput(input);
    byFile[file][member] = &names;
  }
  std::map<std::string, Facts> byInput;
  for (const auto &[file, members] : byFile)
    fileFacts(file, members, byInput);
  for (RecordedSymbol &s : symbols) {
    auto in = byInput.find(s.input);
    if (in == byInput.end())
      continue;
    auto f = in->second.find(s.name);
    if (f == in->second.end() || f->second.binding == '?')
      continue;
    s.binding = f->second.binding;
    s.source = f->second.source;
  }
}

} // namespace linkd::audit
