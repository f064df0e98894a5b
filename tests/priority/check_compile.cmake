# Runs the C++ compiler on one source (syntax only) and checks the outcome.
#
#   cmake -DCXX=<compiler> -DINCLUDE_DIR=<weft include dir> -DSOURCE=<file.cpp>
#         -DEXPECT=fail|pass [-DDEFINES=A;B] [-DMATCH=text;text] [-DANY_ERROR=ON]
#         -P check_compile.cmake
#
# EXPECT=pass: the compiler must exit with status 0.
# EXPECT=fail: the compiler must exit with a non-zero status, its output must
#   contain every MATCH string (plain substrings, not regexes), and every
#   error it reports must be a static assertion — so that a source that fails
#   for an unrelated reason (a typo, a missing include) does not count as a
#   pass. With ANY_ERROR=ON (for checks that rest on access control or
#   overload resolution, not on a static_assert) errors of any kind are
#   accepted, and the MATCH strings alone must identify the expected one.
cmake_minimum_required(VERSION 3.25)

foreach(var CXX INCLUDE_DIR SOURCE EXPECT)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "check_compile.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT EXPECT STREQUAL "fail" AND NOT EXPECT STREQUAL "pass")
  message(FATAL_ERROR "check_compile.cmake: EXPECT must be 'fail' or 'pass', not '${EXPECT}'")
endif()
if(EXPECT STREQUAL "fail" AND "${MATCH}" STREQUAL "")
  message(FATAL_ERROR "check_compile.cmake: EXPECT=fail needs at least one MATCH string")
endif()
if(NOT EXISTS "${SOURCE}")
  message(FATAL_ERROR "check_compile.cmake: no such source: ${SOURCE}")
endif()

set(args -std=c++20 -fsyntax-only "-I${INCLUDE_DIR}")
foreach(d IN LISTS DEFINES)
  list(APPEND args "-D${d}")
endforeach()
list(APPEND args "${SOURCE}")

string(REPLACE ";" " " shown "${args}")
message(STATUS "running: ${CXX} ${shown}")
execute_process(
  COMMAND "${CXX}" ${args}
  RESULT_VARIABLE status
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out
  TIMEOUT 240)
string(REGEX REPLACE "\n$" "" out "${out}")

if(EXPECT STREQUAL "pass")
  if(NOT status STREQUAL "0")
    message(FATAL_ERROR "expected ${SOURCE} to compile (defines: ${DEFINES}), "
                        "but the compiler exited with '${status}':\n${out}")
  endif()
  message(STATUS "compiled, as expected")
  return()
endif()

if(status STREQUAL "0")
  message(FATAL_ERROR "expected ${SOURCE} NOT to compile (defines: ${DEFINES}): the "
                      "priority-inversion check did not fire")
endif()
if(NOT status MATCHES "^[0-9]+$")
  # Not an exit status: the compiler could not be run, or timed out.
  message(FATAL_ERROR "the compiler did not run to completion ('${status}'):\n${out}")
endif()
foreach(m IN LISTS MATCH)
  string(FIND "${out}" "${m}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "${SOURCE} failed to compile (status ${status}), but not with the "
                        "expected diagnostic: '${m}' not found in:\n${out}")
  endif()
endforeach()
if(ANY_ERROR)
  message(STATUS "failed to compile with the expected diagnostic (status ${status})")
  return()
endif()
# The error lines become a CMake list: a ";" in a diagnostic would split one.
string(REPLACE ";" "," out_no_semicolons "${out}")
string(REGEX MATCHALL "[^\n]*error:[^\n]*" errors "${out_no_semicolons}")
foreach(e IN LISTS errors)
  if(NOT e MATCHES "static.assert")
    message(FATAL_ERROR "${SOURCE} failed to compile (status ${status}) with an unrelated "
                        "error besides the expected one:\n  ${e}\nfull output:\n${out}")
  endif()
endforeach()
message(STATUS "failed to compile with the expected diagnostic (status ${status})")
