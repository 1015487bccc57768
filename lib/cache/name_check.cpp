// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "cache/name_check.h"
#include "util/clock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstring>
#include <memory>
#include <numeric>

namespace linkd {
namespace {

// Length of the common prefix of `a` and `b`.
size_t commonPrefix(std::string_view a, std::string_view b) {
  size_t n = std::min(a.size(), b.size()), i = 0;
  while (i < n && a[i] == b[i])
    ++i;
  return i;
}

bool startsLikeLinkerScriptWithSections(int fd) {
  char head[4];
  if (pread(fd, head, 4, 0) != 4)
    return false;
  auto is = [&](const char *m) { return std::memcmp(head, m, 4) == 0; };
  if (is("\x7f" "ELF") || is("!<ar") || is("!<th") || is("\0asm"))
    return false;
  std::string text(64 << 10, '\0');
  ssize_t n = pread(fd, text.data(), text.size(), 0);
  if (n <= 0)
    return false;
  text.resize(static_cast<size_t>(n));
  return text.find("SECTIONS") != std::string::npos;
}

bool isBitcode(int fd) {
  unsigned char head[4];
  if (pread(fd, head, 4, 0) != 4)
    return false;
  return (head[0] == 'B' && head[1] == 'C' && head[2] == 0xc0 &&
          head[3] == 0xde) ||
         (head[0] == 0xde && head[1] == 0xc0 && head[2] == 0x17 &&
          head[3] == 0x0b);
}

void requireAllInputs(const PathMapper &names, NameCheck &out,
                      const std::string &why) {
  for (const LeftOutName &n : names.names())
    if (n.role != NameRole::Cwd && n.role != NameRole::BaseDir) {
      out.exact[n.id] = true;
      out.whyById.emplace(n.id, why);
    }
  if (out.why.empty())
    out.why = why;
}

// Names that were not what the key took them for.
void checkRoles(const PathMapper &names, const AccessLog &log,
                NameCheck &out) {
  for (const LeftOutName &n : names.names()) {
    bool ok = true;
    if (n.role == NameRole::Input)
      ok = log.read.count(n.absolute) > 0 || log.existing.count(n.absolute) > 0;
    else if (n.role == NameRole::Output)
      ok = log.outputs.count(n.absolute) > 0;
    if (!ok) {
      out.exact.emplace(n.id, false); // a value: its spelling is what counts
      out.whyById.emplace(n.id, "not a file of the link: " + n.spelling);
      if (out.why.empty())
        out.why = "not a file of the link: " + n.spelling;
    }
  }
}

// Inputs whose content makes other inputs' names matter.
void checkInputKinds(const PathMapper &names, const AccessLog &log,
                     NameCheck &out) {
  for (const LeftOutName &n : names.names()) {
    if (n.role != NameRole::Input || !log.read.count(n.absolute))
      continue;
    const InputFds::Held *h =
        log.inputFds ? log.inputFds->find(n.absolute) : nullptr;
    int held = h ? h->fd : -1;
    int fd = held >= 0 ? held
                       : ::open(n.absolute.c_str(), O_RDONLY | O_CLOEXEC |
                                                        O_NONBLOCK);
    if (fd < 0) {
      requireAllInputs(names, out, "input gone before it was checked: " +
                                       n.spelling);
      continue;
    }
    bool script = startsLikeLinkerScriptWithSections(fd);
    bool bitcode = !script && isBitcode(fd);
    if (held < 0)
      ::close(fd);
    if (script)
      requireAllInputs(names, out, "linker script with SECTIONS: " + n.spelling);
    else if (bitcode)
      requireAllInputs(names, out, "LLVM bitcode input: " + n.spelling);
  }
}

uint64_t threadCpuMicros() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000 +
         static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

} // namespace

OutputScan::OutputScan(const PathMapper &names) {
  if (!names.active())
    return;
  for (const LeftOutName &n : names.names()) {
    pats.push_back({n.absolute, n.id, true});
    if (n.spelling != n.absolute)
      pats.push_back({n.spelling, n.id, false});
    if (!n.embeddedAs.empty() && n.embeddedAs != n.spelling)
      pats.push_back({n.embeddedAs, n.id, false});
  }
  std::vector<std::string> texts;
  for (const Pattern &p : pats)
    texts.push_back(p.text);
  scan = std::make_unique<PatternScan>(std::move(texts));
  found.assign(pats.size(), false);
}

OutputScan::~OutputScan() = default;

std::function<void(std::string_view)> OutputScan::startOutput() {
  tail.clear();
  if (!scan)
    return {};
  return [this](std::string_view piece) { feed(piece); };
}

void OutputScan::feed(std::string_view piece) {
  if (!scan || piece.empty())
    return;
  auto begin = std::chrono::steady_clock::now();
  uint64_t cpuBegin = threadCpuMicros();
  bytes += piece.size();
  size_t keep = scan->longest() > 0 ? scan->longest() - 1 : 0;
  // A match that starts in the tail ends within the piece's first `keep`
  // bytes; one that starts in the piece is found in the piece.
  if (!tail.empty()) {
    std::string seam = tail;
    seam.append(piece.substr(0, keep));
    scan->scan(seam, found);
  }
  scan->scan(piece, found);
  if (piece.size() >= keep)
    tail.assign(piece.substr(piece.size() - keep));
  else {
    tail.append(piece);
    tail.erase(0, tail.size() > keep ? tail.size() - keep : 0);
  }
  micros += microsSince(begin);
  cpuMicros += threadCpuMicros() - cpuBegin;
}

PatternScan::PatternScan(std::vector<std::string> in) {
  std::erase_if(in, [](const std::string &s) { return s.empty(); });
  std::vector<size_t> order(in.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return in[a] < in[b]; });
  for (size_t i : order) {
    patterns.push_back(in[i]);
    original.push_back(i);
    maxLen = std::max(maxLen, in[i].size());
  }
  for (const std::string &p : patterns)
    if (firstBytes.empty() ||
        firstBytes.back() != static_cast<unsigned char>(p[0]))
      firstBytes.push_back(static_cast<unsigned char>(p[0]));
}

void PatternScan::scan(std::string_view data, std::vector<bool> &found) const {
  for (unsigned char b : firstBytes) {
    auto lo = std::lower_bound(
        patterns.begin(), patterns.end(), b,
        [](const std::string &p, unsigned char c) {
          return static_cast<unsigned char>(p[0]) < c;
        });
    auto hi = std::upper_bound(
        lo, patterns.end(), b, [](unsigned char c, const std::string &p) {
          return c < static_cast<unsigned char>(p[0]);
        });
    size_t minLen = SIZE_MAX;
    bool second[256] = {};
    bool single = false;
    for (auto it = lo; it != hi; ++it) {
      minLen = std::min(minLen, it->size());
      if (it->size() == 1)
        single = true;
      else
        second[static_cast<unsigned char>((*it)[1])] = true;
    }
    const char *p = data.data(), *end = data.data() + data.size();
    while ((p = static_cast<const char *>(
                std::memchr(p, b, static_cast<size_t>(end - p))))) {
      std::string_view text(p, static_cast<size_t>(end - p));
      ++p;
      if (!single && (text.size() < 2 ||
                      !second[static_cast<unsigned char>(text[1])]))
        continue;
      // Patterns that are prefixes of `text` sort at or before it; walking
      // back, the common prefix only shrinks.
      std::string_view window = text.substr(0, maxLen);
      auto ub = std::upper_bound(lo, hi, window,
                                 [](std::string_view w, const std::string &s) {
                                   return w < std::string_view(s);
                                 });
      for (auto it = ub; it != lo;) {
        --it;
        size_t common = commonPrefix(*it, window);
        if (common == it->size())
          found[original[static_cast<size_t>(it - patterns.begin())]] = true;
        if (common < minLen)
          break;
      }
    }
  }
}

NameCheck checkNames(const PathMapper &names, const AccessLog &log,
                     const OutputScan &outputs, const std::string &stdoutData,
                     const std::string &stderrData) {
  auto begin = std::chrono::steady_clock::now();
  uint64_t cpuBegin = threadCpuMicros();
  NameCheck out;
  if (!names.active()) {
    out.stdoutStored = stdoutData;
    out.stderrStored = stderrData;
    return out;
  }
  checkRoles(names, log, out);
  checkInputKinds(names, log, out);
  for (size_t i = 0; i < outputs.pats.size(); ++i)
    if (outputs.found[i]) {
      out.exact[outputs.pats[i].id] |= outputs.pats[i].absolute;
      out.whyById.emplace(outputs.pats[i].id,
                          "an output contains " + outputs.pats[i].text);
      if (out.why.empty())
        out.why = "an output contains " + outputs.pats[i].text;
    }
  std::set<std::string> embedded;
  out.stdoutStored = names.toStoredText(stdoutData, &embedded);
  out.stderrStored = names.toStoredText(stderrData, &embedded);
  for (const std::string &id : embedded) {
    out.exact[id] = true;
    out.whyById.emplace(id, "a diagnostic contains it inside a longer word");
    if (out.why.empty())
      out.why = "a diagnostic contains a name inside a longer word";
  }
  out.scannedBytes = outputs.bytes;
  out.micros = microsSince(begin) + outputs.micros;
  out.cpuMicros = threadCpuMicros() - cpuBegin + outputs.cpuMicros;
  return out;
}

} // namespace linkd
