# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

# What `cmake --install` puts where (any --prefix, DESTDIR honoured), and so
# what the Debian package holds (deploy/debian/package.cmake):
#
#   bin/                      linkd, linkd-lld, ld.linkd and the client's
#                             other names (symlinks to ld.linkd)
#   lib/linkd/gcc/            ld, ld.lld -> the client: `gcc -B` this
#                             directory, or put it in COMPILER_PATH (gcc and
#                             clang both search it; docs/usage.md)
#   share/man/man1, man5      linkd(1), ld.linkd(1), linkd.conf(5)
#   share/bash-completion/completions/linkd, share/zsh/vendor-completions/_linkd
#   lib/systemd/user/         linkd.service, linkd.socket (per-user daemon)
#   lib/systemd/system/       linkd-farm.service (a farm node)
#   share/doc/linkd/          README.md, docs/*.md, LICENSE, copyright
#                             (Debian's format), examples/ (the profile
#                             snippet and clang config that make linkd the
#                             default linker)
#
# The units and examples name the installed binaries: their /usr/local/bin
# and /usr/share/doc/linkd paths are rewritten for the prefix at install
# time (the prefix given to `cmake --install` may differ from the
# configured one). The liblinkd library and Python module have install
# rules of their own, next to their targets.
include(GNUInstallDirs)

set(LINKD_CLIENT_NAMES ld64.linkd lld-link.linkd wasm-ld.linkd ar.linkd
  ranlib.linkd lib.linkd)
set(LINKD_GCC_DIR lib/linkd/gcc)
set(LINKD_SYSTEMD_USER_DIR lib/systemd/user)
set(LINKD_SYSTEMD_SYSTEM_DIR lib/systemd/system)

install(TARGETS linkd linkd-lld ld.linkd RUNTIME
  DESTINATION ${CMAKE_INSTALL_BINDIR})

install(FILES docs/man/linkd.1 docs/man/ld.linkd.1
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES docs/man/linkd.conf.5 DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
install(FILES deploy/completion/linkd.bash
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
  RENAME linkd)
install(FILES deploy/completion/_linkd
  DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES README.md docs/usage.md docs/cache.md docs/shared-cache.md
  docs/farm.md docs/rewrite.md docs/protocol.md docs/design.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The licence, and Debian's machine-readable copyright file beside it
# (share/doc/<package>/copyright is where Debian policy wants it).
install(FILES LICENSE deploy/debian/copyright
  DESTINATION ${CMAKE_INSTALL_DOCDIR})

# Links, and files that name installed paths, are made at install time.
install(CODE "
  set(linkd_bindir \"${CMAKE_INSTALL_BINDIR}\")
  set(linkd_docdir \"${CMAKE_INSTALL_DOCDIR}\")
  set(linkd_gccdir \"${LINKD_GCC_DIR}\")
  set(linkd_names \"${LINKD_CLIENT_NAMES}\")
  set(linkd_src \"${CMAKE_CURRENT_SOURCE_DIR}\")
  set(linkd_user_units \"${LINKD_SYSTEMD_USER_DIR}\")
  set(linkd_system_units \"${LINKD_SYSTEMD_SYSTEM_DIR}\")
")
install(CODE [[
  set(root "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")
  foreach(name IN LISTS linkd_names)
    file(CREATE_LINK ld.linkd "${root}/${linkd_bindir}/${name}" SYMBOLIC)
  endforeach()
  file(MAKE_DIRECTORY "${root}/${linkd_gccdir}")
  file(RELATIVE_PATH client "${CMAKE_INSTALL_PREFIX}/${linkd_gccdir}"
       "${CMAKE_INSTALL_PREFIX}/${linkd_bindir}/ld.linkd")
  foreach(name ld ld.lld)
    file(CREATE_LINK "${client}" "${root}/${linkd_gccdir}/${name}" SYMBOLIC)
  endforeach()
  message(STATUS "Installing: ${root}/${linkd_gccdir}/{ld,ld.lld} -> ${client}")

  # Copies `from` to `to`, naming this prefix's binaries and docs.
  function(linkd_install_for_prefix from to)
    file(READ "${linkd_src}/${from}" text)
    string(REPLACE "/usr/local/bin/" "${CMAKE_INSTALL_PREFIX}/${linkd_bindir}/"
           text "${text}")
    string(REPLACE "/usr/share/doc/linkd/" "${CMAKE_INSTALL_PREFIX}/${linkd_docdir}/"
           text "${text}")
    string(REPLACE "@LINKD_GCC_DIR@" "${CMAKE_INSTALL_PREFIX}/${linkd_gccdir}"
           text "${text}")
    file(WRITE "${root}/${to}" "${text}")
    message(STATUS "Installing: ${root}/${to}")
  endfunction()
  linkd_install_for_prefix(deploy/systemd/linkd.service
                           ${linkd_user_units}/linkd.service)
  linkd_install_for_prefix(deploy/systemd/linkd.socket
                           ${linkd_user_units}/linkd.socket)
  linkd_install_for_prefix(deploy/systemd/linkd-farm.service
                           ${linkd_system_units}/linkd-farm.service)
  linkd_install_for_prefix(deploy/default-linker/linkd-profile.sh
                           ${linkd_docdir}/examples/linkd-profile.sh)
  linkd_install_for_prefix(deploy/default-linker/clang-linkd.cfg
                           ${linkd_docdir}/examples/clang-linkd.cfg)
]])
