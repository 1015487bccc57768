// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/farm_client/output_policy.h"

#include "link/response_files.h"

#include <sys/stat.h>

#include <cstdio>

namespace linkd {

OutputPolicy::OutputPolicy(const v1::LinkRequest &req)
    : umask(req.umask() & 0777) {
  std::vector<std::string> argv(req.argv().begin(), req.argv().end());
  auto flavor = static_cast<Flavor>(req.flavor());
  auto env = req.env().find("LLD_REPRODUCE");
  allowed = linkOutputs(flavor, expandResponseFiles(argv, req.cwd()).args,
                        req.cwd(), env == req.env().end() ? "" : env->second);
}

OutputPolicy::Admitted OutputPolicy::admit(const std::string &path,
                                           uint32_t mode) const {
  Admitted a;
  std::string tidy = tidyPath(path);
  if (tidy.empty() || path.find('\0') != std::string::npos) {
    a.refusal = "an output path that is not absolute: " + path;
    return a;
  }
  if (!allowed.allows(tidy)) {
    a.refusal = "an output the link does not write: " + path;
    return a;
  }
  // Written by renaming a new file over it: never over a device, a FIFO or
  // a socket (`-Map=/dev/null`), whatever the node says.
  if (struct stat st{}; ::lstat(tidy.c_str(), &st) == 0 &&
                        !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
    a.refusal = "an output that is not a regular file here: " + path;
    return a;
  }
  if (mode & 07000) {
    char octal[16];
    std::snprintf(octal, sizeof(octal), "%o", mode);
    a.refusal = "output " + path + " with mode " + octal +
                " (setuid, setgid or sticky)";
    return a;
  }
  a.path = tidy;
  a.mode = mode & 0777 & ~umask;
  return a;
}

} // namespace linkd
