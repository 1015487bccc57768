// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// `linkd-lld relink-check [--slack PERCENT,BYTES] OLD.o NEW.o`: whether an
// incremental relink could patch NEW.o into an output linked with OLD.o
// (lib/incremental/relink_check.h), for benches and for looking at one
// edit by hand. Exit 0 patchable, 1 a full link (the reason printed), 2 a
// usage or read error.
#pragma once

namespace linkd {

int cmdRelinkCheck(int argc, char **argv);

} // namespace linkd
