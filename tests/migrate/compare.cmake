# Runs STD_EXE and WEFT_EXE (the same program before and after
# scripts/weft-migrate); fails unless both exit 0 and print the same lines.
foreach(kind STD WEFT)
  execute_process(COMMAND ${${kind}_EXE} OUTPUT_VARIABLE out_${kind} ERROR_VARIABLE err_${kind}
                  RESULT_VARIABLE rc_${kind} TIMEOUT 60)
  if(NOT rc_${kind} EQUAL 0)
    message(FATAL_ERROR "${${kind}_EXE} failed (${rc_${kind}}):\n${out_${kind}}\n${err_${kind}}")
  endif()
endforeach()
if(NOT out_STD STREQUAL out_WEFT)
  message(FATAL_ERROR "outputs differ\n--- std:\n${out_STD}\n--- weft (migrated):\n${out_WEFT}")
endif()
message(STATUS "same output before and after weft-migrate:\n${out_STD}")
