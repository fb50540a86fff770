# Fails when docs/ops.md differs from what the op table generates (ctest: ops_doc_is_current).
execute_process(COMMAND ${GEN} OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gen_ops_doc failed")
endif()
file(READ ${DOC} checked_in)
if(NOT generated STREQUAL checked_in)
  message(FATAL_ERROR "docs/ops.md is stale: run 'make docs' and commit it")
endif()
