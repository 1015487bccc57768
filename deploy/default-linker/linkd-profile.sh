# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

# Makes linkd the linker of gcc and clang (any version) in the shells that
# read this file: copy it to /etc/profile.d/linkd.sh for every user of the
# machine, or source it from ~/.profile for one user.
#
# Both drivers look for `ld` (and, with -fuse-ld=lld, `ld.lld`) in the
# directories of COMPILER_PATH before their own, the way they look in -B
# directories; this one holds those two names for the linkd client.
# -fuse-ld=bfd, -fuse-ld=gold or -fuse-ld=mold still pick the stock linker;
# LINKD_DISABLE=1 keeps linkd in the path but links locally.
case ":${COMPILER_PATH:-}:" in
  *":@LINKD_GCC_DIR@:"*) ;;
  *) export COMPILER_PATH="@LINKD_GCC_DIR@${COMPILER_PATH:+:$COMPILER_PATH}" ;;
esac
