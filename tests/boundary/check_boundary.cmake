# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

# The process boundary, checked on the sources (docs/design.md, "Processes"):
# nothing built into `linkd` or the thin client includes an LLVM, LLD or
# Clang header, and nothing built into `linkd-lld` includes a gRPC header,
# directly or through any header of this tree it includes.
#
#   cmake -DSOURCE_DIR=<repo> -DLISTS=<dir> -P check_boundary.cmake
# LISTS holds no_llvm.txt and no_grpc.txt, one source path a line, written
# at configure time from the targets' SOURCES (tests/CMakeLists.txt).
cmake_minimum_required(VERSION 3.25)

set(failures "")

# Follows the quoted includes of `file` that resolve inside the tree; a
# forbidden include anywhere on the way is a failure naming the chain.
function(scan file chain forbidden)
  get_property(seen GLOBAL PROPERTY boundary_seen_${forbidden_tag})
  if(file IN_LIST seen)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY boundary_seen_${forbidden_tag} "${file}")
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  get_filename_component(here "${file}" DIRECTORY)
  file(RELATIVE_PATH rel "${SOURCE_DIR}" "${file}")
  if(chain STREQUAL "")
    set(chain "${rel}")
  else()
    set(chain "${chain} -> ${rel}")
  endif()
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*$" "\\1" inc "${line}")
    if(inc MATCHES "${forbidden}")
      set_property(GLOBAL APPEND_STRING PROPERTY boundary_failures
        "  ${chain} includes <${inc}>\n")
    endif()
    foreach(root "${here}" "${SOURCE_DIR}/lib" "${SOURCE_DIR}")
      if(EXISTS "${root}/${inc}" AND NOT IS_DIRECTORY "${root}/${inc}")
        get_filename_component(next "${root}/${inc}" REALPATH)
        scan("${next}" "${chain}" "${forbidden}")
        break()
      endif()
    endforeach()
  endforeach()
endfunction()

function(check list forbidden what)
  set(forbidden_tag "${what}")
  file(STRINGS "${LISTS}/${list}" sources)
  list(LENGTH sources n)
  if(n EQUAL 0)
    message(FATAL_ERROR "boundary check: ${LISTS}/${list} names no sources")
  endif()
  foreach(src IN LISTS sources)
    if(NOT EXISTS "${src}")
      message(FATAL_ERROR "boundary check: no such source ${src}")
    endif()
    get_filename_component(src "${src}" REALPATH)
    scan("${src}" "" "${forbidden}")
  endforeach()
  message(STATUS "${what}: ${n} sources checked")
endfunction()

check(no_llvm.txt "^(llvm|llvm-c|lld|clang|clang-c)/" "linkd and the client: no LLVM")
check(no_grpc.txt "^(grpc|grpcpp|grpc\\+\\+)/|\\.grpc\\.pb\\.h$" "linkd-lld: no gRPC")

get_property(failures GLOBAL PROPERTY boundary_failures)
if(failures)
  message(FATAL_ERROR "the process boundary is crossed:\n${failures}")
endif()
