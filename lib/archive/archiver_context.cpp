// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "archive/archiver_context.h"

#include "archive/ar_help.h"

#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

#include <unistd.h>

namespace linkd::archive {

ArchiverContext::ArchiverContext(std::string toolName, llvm::raw_ostream &out,
                                 llvm::raw_ostream &err)
    : out(out), err(err), tool(std::move(toolName)) {}

void ArchiverContext::error(const llvm::Twine &message) {
  llvm::WithColor::error(err, tool) << message << "\n";
}

void ArchiverContext::fail(const llvm::Twine &message) {
  if (inScript)
    llvm::WithColor::error(err, tool)
        << "script line " << scriptLine << ": " << message << "\n";
  else
    error(message);
  exit(1);
}

void ArchiverContext::badUsage(const llvm::Twine &message) {
  error(message);
  printHelp();
  exit(1);
}

void ArchiverContext::warn(const llvm::Twine &message) {
  llvm::WithColor::warning(err, tool) << message << "\n";
}

void ArchiverContext::check(llvm::Error e, const llvm::Twine &context) {
  if (!e)
    return;
  // The first message decides (llvm-ar exits inside the handler).
  std::string message;
  llvm::handleAllErrors(std::move(e), [&](const llvm::ErrorInfoBase &info) {
    if (message.empty())
      message = info.message();
  });
  std::string where = context.str();
  if (where.empty())
    fail(message);
  fail(where + ": " + message);
}

void ArchiverContext::check(std::error_code ec, const llvm::Twine &context) {
  if (!ec)
    return;
  std::string where = context.str();
  if (where.empty())
    fail(ec.message());
  fail(where + ": " + ec.message());
}

void ArchiverContext::exit(int status) {
  out.flush();
  err.flush();
  _exit(status);
}

void ArchiverContext::printHelp() {
  llvm::StringRef stem = llvm::sys::path::stem(tool);
  if (stem.contains_insensitive("ranlib"))
    printRanlibHelp(out, stem);
  else if (stem.contains_insensitive("ar"))
    printArHelp(out, stem);
}

llvm::object::Archive &ArchiverContext::readLibrary(const llvm::Twine &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  check(buffer.getError(), "could not open library " + path);
  libraryBuffers.push_back(std::move(*buffer));
  auto archive =
      llvm::object::Archive::create(libraryBuffers.back()->getMemBufferRef());
  // llvm-ar reports the error code's message here, not the error's own text.
  if (!archive)
    check(llvm::errorToErrorCode(archive.takeError()),
          "could not parse library");
  libraries.push_back(std::move(*archive));
  return *libraries.back();
}

} // namespace linkd::archive
