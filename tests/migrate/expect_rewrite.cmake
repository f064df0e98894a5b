# Runs weft-migrate on INPUT into OUTPUT; fails unless OUTPUT equals EXPECTED.
execute_process(COMMAND ${PYTHON} ${TOOL} -o ${OUTPUT} ${INPUT} -- -std=c++20
                RESULT_VARIABLE rc ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "weft-migrate failed (${rc}):\n${err}")
endif()
file(READ ${OUTPUT} got)
file(READ ${EXPECTED} want)
if(NOT got STREQUAL want)
  execute_process(COMMAND diff -u ${EXPECTED} ${OUTPUT})
  message(FATAL_ERROR "weft-migrate's output differs from ${EXPECTED} (diff above)")
endif()
message(STATUS "weft-migrate output as expected; its warnings:\n${err}")
