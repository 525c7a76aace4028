# sinter_add_verify_test(): a CTest case that runs `sinter verify` on a model (docs/ci.md).
#
#   include(SinterVerify)        # or include(path/to/SinterVerify.cmake)
#   sinter_add_verify_test(
#     NAME     verify.tiny_cnn                 # the CTest name (required)
#     MODEL    ${CMAKE_SOURCE_DIR}/models/tiny_cnn.onnx   # the ONNX model (required)
#     [GOLDEN  ${CMAKE_SOURCE_DIR}/golden/tiny_cnn]       # compare with a golden folder; without it
#                                              # the truth is the reference evaluator (or ARGS')
#     [TARGET  cpu]                            # --target (default cpu: CI machines have no GPU)
#     [ARTIFACT ${CMAKE_BINARY_DIR}/tiny_cnn.so]  # verify this artifact instead of compiling
#     [SINTER  /opt/sinter/bin/sinter]         # the CLI (default: the `sinter` target of this
#                                              # build, else find_package(sinter)'s, else
#                                              # find_program(sinter))
#     [ARGS    --dim batch=1 --rtol 1e-3]      # anything else verify takes
#     [LABELS  models])                        # CTest labels besides "sinter-verify"
#
# The case passes when verify exits 0 (every output within tolerance); it fails on 3 (outputs
# diverge), 1 (a user error: a missing model, a golden folder of another model) and 2. It writes
# JUnit XML to ${CMAKE_CURRENT_BINARY_DIR}/NAME.junit.xml for CI systems to show.
function(sinter_add_verify_test)
  cmake_parse_arguments(PARSE_ARGV 0 VERIFY "" "NAME;MODEL;GOLDEN;TARGET;ARTIFACT;SINTER" "ARGS;LABELS")
  if(VERIFY_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "sinter_add_verify_test: unknown arguments ${VERIFY_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT VERIFY_NAME OR NOT VERIFY_MODEL)
    message(FATAL_ERROR "sinter_add_verify_test needs NAME and MODEL")
  endif()
  if(NOT VERIFY_SINTER)
    if(TARGET sinter)
      set(VERIFY_SINTER $<TARGET_FILE:sinter>)
    elseif(sinter_EXECUTABLE) # from find_package(sinter)
      set(VERIFY_SINTER ${sinter_EXECUTABLE})
    else()
      find_program(SINTER_EXECUTABLE sinter REQUIRED)
      set(VERIFY_SINTER ${SINTER_EXECUTABLE})
    endif()
  endif()
  set(command ${VERIFY_SINTER} verify ${VERIFY_MODEL})
  if(VERIFY_ARTIFACT)
    list(APPEND command ${VERIFY_ARTIFACT})
  else()
    if(NOT VERIFY_TARGET)
      set(VERIFY_TARGET cpu)
    endif()
    list(APPEND command --target ${VERIFY_TARGET})
  endif()
  if(VERIFY_GOLDEN)
    list(APPEND command --golden ${VERIFY_GOLDEN})
  endif()
  string(REGEX REPLACE "[^A-Za-z0-9_.-]" "_" report_name "${VERIFY_NAME}")
  list(APPEND command --junit ${CMAKE_CURRENT_BINARY_DIR}/${report_name}.junit.xml ${VERIFY_ARGS})
  add_test(NAME ${VERIFY_NAME} COMMAND ${command})
  set_tests_properties(${VERIFY_NAME} PROPERTIES LABELS "sinter-verify;${VERIFY_LABELS}")
endfunction()
