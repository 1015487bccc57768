// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The incremental relink's steps as commands, for benches, tests and for
// looking at one edit by hand:
//   linkd-lld relink-check [--slack PERCENT,BYTES] OLD.o NEW.o
//     whether NEW.o could be patched into an output linked with OLD.o
//     (lib/incremental/relink_check.h);
//   linkd-lld relink-patch --map MAP [--object NAME] OLD_OUTPUT OLD.o NEW.o
//                          {-o NEW_OUTPUT | --in-place}
//     the patch itself (lib/incremental/patcher.h): OLD_OUTPUT, linked with
//     OLD.o and written with LLD's -Map MAP, with NEW.o in its place;
//     written to NEW_OUTPUT (a copy with the edits, renamed into place) or
//     over OLD_OUTPUT itself (only the bytes that change). NAME is the
//     object as the map names it (default: OLD.o's path).
// Exit 0 patchable or patched, 1 a full link is needed (the reason
// printed), 2 a usage or read error.
#pragma once

namespace linkd {

int cmdRelinkCheck(int argc, char **argv);
int cmdRelinkPatch(int argc, char **argv);

} // namespace linkd
