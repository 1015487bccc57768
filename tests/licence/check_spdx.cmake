# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

# Every source file of the tree carries the project's licence line
# (LICENSE: Apache-2.0 WITH LLVM-exception, LLD's and IREE's) in its first
# three lines, so a file copied out of the tree keeps its terms. The files
# are git's list when the tree is a checkout (what lands), else every file
# under the tree but build output and hidden folders. Exempt: LICENSE itself,
# prose (*.md), and upstream files kept verbatim with their own licence
# headers (proto/third_party/, Apache-2.0: its README.md says whence).
#
#   cmake -DSOURCE_DIR=<repo> -P check_spdx.cmake
cmake_minimum_required(VERSION 3.25)

set(spdx "SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception")
find_program(GIT git)
set(files "")
if(GIT AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" ls-files
    OUTPUT_VARIABLE listed RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "git ls-files failed in ${SOURCE_DIR}")
  endif()
  string(REPLACE "\n" ";" files "${listed}")
else()
  file(GLOB_RECURSE files RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/*")
  list(FILTER files EXCLUDE REGEX "^(build[^/]*|\\.[^/]*)/")
endif()

set(missing "")
set(checked 0)
foreach(f IN LISTS files)
  if(f STREQUAL "" OR f MATCHES "(^|/)LICENSE$" OR f MATCHES "\\.md$" OR
     f MATCHES "^proto/third_party/")
    continue()
  endif()
  if(NOT EXISTS "${SOURCE_DIR}/${f}" OR IS_SYMLINK "${SOURCE_DIR}/${f}")
    continue() # deleted in the work tree but not yet in git's index
  endif()
  file(STRINGS "${SOURCE_DIR}/${f}" head LIMIT_COUNT 3)
  string(FIND "${head}" "${spdx}" at)
  if(at EQUAL -1)
    string(APPEND missing "  ${f}\n")
  endif()
  math(EXPR checked "${checked} + 1")
endforeach()

if(NOT EXISTS "${SOURCE_DIR}/LICENSE")
  string(APPEND missing "  LICENSE (the licence text itself)\n")
endif()
if(checked LESS 100)
  message(FATAL_ERROR "only ${checked} files found under ${SOURCE_DIR}: not the tree")
endif()
if(missing)
  message(FATAL_ERROR "files without the line '${spdx}' in their first three lines:\n${missing}")
endif()
message(STATUS "${checked} files carry the licence line")
