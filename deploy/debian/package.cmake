# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

# The Debian package, built from the tree with CPack's DEB generator from the
# install rules (deploy/install.cmake), for Debian 12:
#
#   cmake --build build && (cd build && cpack -G DEB)
#   apt-get install ./build/linkd_0.1.0_amd64.deb
#
# Installed under /usr. Depends: computed by dpkg-shlibdeps from the
# binaries (LLVM 19, spdlog, SQLite, zstd, curl, hiredis, OpenSSL; gRPC is
# linked in); binaries are stripped. tests/e2e/install/deb_test.sh builds it,
# installs it into a scratch root with dpkg and runs a link through it.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME linkd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "linkd maintainers <linkd@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "persistent link service: LLD 19 in a daemon, with a result cache")
set(CPACK_PACKAGE_DESCRIPTION
  "linkd replaces ld, ld64, link.exe, wasm-ld and ar with thin clients that
hand each job to a daemon running an embedded LLD 19. Outputs are
byte-identical to stock LLD; repeated links are answered from a
content-addressed cache; the link still happens locally when the daemon is
down.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr) # the prefix when CPACK_SET_DESTDIR is on
# The install rules write the prefix into the systemd units: run them with
# the real prefix and the staging directory as DESTDIR.
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Fast to build in the test suite; the package is still small once stripped.
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "clang-19 | gcc")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "lld-19")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "file:///usr/share/doc/linkd/README.md")
include(CPack)
