#include "cache/link_litter.h"

#include "cache/access_log.h"

#include <sys/stat.h>
#include <unistd.h>

namespace linkd {
namespace {

bool looksTemporary(const std::string &path) {
  size_t slash = path.rfind('/');
  std::string_view base(path);
  base.remove_prefix(slash == std::string::npos ? 0 : slash + 1);
  size_t tmp = base.rfind(".tmp");
  return tmp != std::string_view::npos && tmp > 0 &&
         base.size() - (tmp + 4) >= 6;
}

} // namespace

std::vector<std::string> leftTemporaries(std::string_view records) {
  std::vector<std::string> out;
  for (const std::string &p : parseAccessLog(records).outputs)
    if (looksTemporary(p))
      out.push_back(p);
  return out;
}

size_t removeTemporaries(const std::vector<std::string> &paths) {
  size_t n = 0;
  for (const std::string &p : paths) {
    struct stat st{};
    if (lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        unlink(p.c_str()) == 0)
      ++n;
  }
  return n;
}

} // namespace linkd
