// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/service/kernel_request.h"

#include "link/flavor.h"

#include <algorithm>
#include <set>

namespace linkd {

std::string blobViewPath(std::string_view name) {
  return name.front() == '/'
             ? std::string(name)
             : std::string(kKernelViewCwd) + "/" + std::string(name);
}

std::string checkKernelLink(const kernel::LinkMsg &r, uint64_t maxRequestBytes,
                            std::vector<Digest> &digests) {
  if (r.flavor < static_cast<uint8_t>(Flavor::Elf) ||
      r.flavor > static_cast<uint8_t>(Flavor::Wasm))
    return "unknown linker flavor " + std::to_string(r.flavor);
  for (const std::string &a : r.argv)
    if (a.find('\0') != std::string::npos)
      return "an argument holds a NUL byte";
  for (const auto &[k, v] : r.env) {
    auto allowed = flavorEnvironment(static_cast<Flavor>(r.flavor));
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
      return "environment variable " + k + " is not one LLD reads";
    if (v.find('\0') != std::string::npos)
      return "environment variable " + k + " holds a NUL byte";
  }
  uint64_t total = 0;
  std::set<std::string> names;
  for (const kernel::WireInput &in : r.inputs) {
    if (std::string e = kernel::checkInputName(in.name); !e.empty())
      return e;
    if (!names.insert(blobViewPath(in.name)).second)
      return "two inputs are named '" + in.name + "'";
    auto d = Digest::fromRaw(in.sha256);
    if (!d)
      return "input '" + in.name + "' has a malformed digest";
    digests.push_back(*d);
    total += in.size;
    if (total > maxRequestBytes || total < in.size)
      return "the inputs exceed the daemon's limit of " +
             std::to_string(maxRequestBytes) + " bytes";
  }
  return {};
}

} // namespace linkd
