// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Whether this process has read LLVM bitcode: every bitcode input of LLD's
// ELF driver (a file, an archive member, a fat-LTO object's section) becomes
// an lto::InputFile, and the executable defines lto::InputFile::create so
// that LLD's call comes here first (then goes on to libLLVM's, found with
// RTLD_NEXT), as access_recorder.h does for libc's calls.
//
// Why: LTO leaves state in the process that no later link should inherit
// (LLVM's codegen options and registries). A reusable worker
// (link_worker.h) that ran an LTO link is not reused. Process-global by
// necessity, like the other hooks of a link child.
#pragma once

namespace linkd {

bool sawBitcode();

} // namespace linkd
