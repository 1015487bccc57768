// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Settings a client's environment asks for that this daemon does not follow.
//
// The daemon reads its settings (linkd.conf(5): cache_dir, max_size,
// base_dir, log_level, ...) once, when it starts, with the environment of
// the client that started it. A later client whose environment says
// otherwise (LINKD_LOG=debug, another LINKD_MAX_SIZE) would be silently
// ignored; instead it is told, once per setting and value for this daemon's
// lifetime, in a notice the client prints on its stderr before the link's
// own output. LINKD_NOCACHE, LINKD_LOG and LINKD_BASE_DIR are not among
// them: the first travels with each request, the second sets that request's
// log level, the third is sent with each request as its base_dir.
#include "daemon/linkd/service/link_service.h"

#include <algorithm>

namespace linkd {

void LinkService::noticeSettings(const v1::LinkRequest &req,
                                 ReplyStream &out) {
  std::string text;
  for (const auto &[var, value] : req.settings_env()) {
    if (var == "LINKD_LOG")
      continue; // applied to this request's own lines (request_log.h)
    if (var == "LINKD_BASE_DIR")
      continue; // the request's own base_dir (docs/cache.md)
    auto wanted = settingFromVariable(var, value);
    if (!wanted)
      continue; // the client's own mistake; not the daemon's to judge
    auto mine =
        std::find_if(config.settings.begin(), config.settings.end(),
                     [&](const Setting &s) { return s.key == wanted->key; });
    if (mine == config.settings.end() || mine->value == wanted->value)
      continue;
    {
      std::lock_guard lock(noticedMu);
      if (!noticedSettings.insert(var + "=" + value).second)
        continue;
    }
    // As the table prints it: masked where it is a secret (a remote key,
    // REAPI header values, a URL's password), which build logs keep.
    text += "linkd: warning: " + var + "=" + wanted->value +
            " differs from the running daemon's " + mine->key + " (" +
            (mine->value.empty() ? "none" : mine->value) + ", from " +
            mine->source +
            "); it takes effect when the daemon starts again (linkd stop)\n";
  }
  if (text.empty())
    return;
  v1::LinkReply reply;
  reply.set_notice(text);
  out.write(reply);
}

} // namespace linkd
