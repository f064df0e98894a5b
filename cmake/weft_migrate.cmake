# scripts/weft-migrate at build time (tests/migrate, bench): it needs a Python
# with libclang's bindings (Debian: python3-clang-16, which installs them for
# /usr/bin/python3, not for a pyenv python on PATH).
#   WEFT_MIGRATE_AVAILABLE   whether that Python imports clang.cindex
#   weft_migrate_source(IN OUT)  a custom command generating OUT from IN
set(WEFT_MIGRATE_PYTHON /usr/bin/python3 CACHE FILEPATH
    "Python interpreter with libclang's bindings, used to run scripts/weft-migrate")
set(WEFT_MIGRATE_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/../scripts/weft-migrate)
execute_process(COMMAND ${WEFT_MIGRATE_PYTHON} -c "import clang.cindex"
                RESULT_VARIABLE _weft_migrate_rc OUTPUT_QUIET ERROR_QUIET)
if(_weft_migrate_rc EQUAL 0)
  set(WEFT_MIGRATE_AVAILABLE ON)
else()
  set(WEFT_MIGRATE_AVAILABLE OFF)
  message(WARNING "weft: ${WEFT_MIGRATE_PYTHON} cannot import clang.cindex (install "
                  "python3-clang-16): scripts/weft-migrate cannot run, so the migration test "
                  "(migrate_demo) FAILS and weft-bench's migrate section is not measured")
endif()

function(weft_migrate_source in out)
  add_custom_command(OUTPUT ${out}
    COMMAND ${WEFT_MIGRATE_PYTHON} ${WEFT_MIGRATE_SCRIPT} -o ${out} ${in} -- -std=c++20
    DEPENDS ${in} ${WEFT_MIGRATE_SCRIPT}
    COMMENT "weft-migrate ${in}"
    VERBATIM)
endfunction()
