#include "daemon/linkd-lld/lld_entry.h"

#include "daemon/linkd-lld/client_stderr.h"
#include "lld/Common/Driver.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <unistd.h>

LLD_HAS_DRIVER(elf)
LLD_HAS_DRIVER(coff)
LLD_HAS_DRIVER(mingw)
LLD_HAS_DRIVER(macho)
LLD_HAS_DRIVER(wasm)

namespace lld {
// Defined in lld/Common/DriverDispatcher.cpp and used by the stock `lld`
// executable, but not declared in an installed header. Unlike lldMain it
// supports exitEarly, the code path (and the speed) of the stock tool.
int unsafeLldMain(llvm::ArrayRef<const char *> args,
                  llvm::raw_ostream &stdoutOS, llvm::raw_ostream &stderrOS,
                  llvm::ArrayRef<DriverDef> drivers, bool exitEarly);
// lld/Common/Version.h includes a Version.inc that Debian does not ship.
std::string getLLDVersion();
} // namespace lld

namespace linkd {

void runLldAndExit(const LldInvocation &inv) {
  std::string progName = lldProgramName(inv.argv.at(0), inv.flavor);
  std::vector<const char *> args;
  args.reserve(inv.argv.size() + 2);
  args.push_back(progName.c_str());
  args.push_back("-flavor");
  std::string flavorArg(lldFlavorArgument(inv.flavor));
  args.push_back(flavorArg.c_str());
  for (size_t i = 1; i < inv.argv.size(); ++i)
    args.push_back(inv.argv[i].c_str());

  // Stock lld writes diagnostics to llvm::errs() (fd 2, unbuffered) and
  // normal output to llvm::outs() (fd 1). Only the colour decision differs
  // when fd 2 is our pipe rather than the user's terminal.
  // `colored` lives on this frame, which LLD never returns through.
  llvm::raw_ostream *err = &llvm::errs();
  std::optional<ClientStderr> colored;
  if (inv.stderrIsColorTty && !isatty(STDERR_FILENO))
    err = &colored.emplace(true);
  int rc = lld::unsafeLldMain(args, llvm::outs(), *err, LLD_ALL_DRIVERS,
                              /*exitEarly=*/true);
  // Not reached for a valid flavor: exitEarly exits the process.
  llvm::outs().flush();
  err->flush();
  _exit(rc);
}

std::string lldVersionString() { return lld::getLLDVersion(); }

} // namespace linkd
