# Compares the TableGen-generated references with their copies in docs/.
# Usage: cmake -DBUILD=<build dir> -DSOURCE=<source dir> -P CompareDocs.cmake
set(pairs "passes/Passes.md=docs/passes.md")
foreach(family Elementwise Linalg Shape Indexing Reduction Control Sequence Kernel Composite Parallel)
  list(APPEND pairs "dialects/sluice/Sluice${family}Ops.md=docs/dialect/Sluice${family}Ops.md")
endforeach()
set(stale "")
foreach(pair ${pairs})
  string(REPLACE "=" ";" parts "${pair}")
  list(GET parts 0 generated)
  list(GET parts 1 committed)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files
                  ${BUILD}/${generated} ${SOURCE}/${committed}
                  RESULT_VARIABLE different)
  if(different)
    list(APPEND stale ${committed})
  endif()
endforeach()
if(stale)
  message(FATAL_ERROR "stale generated docs: ${stale} (run scripts/gen-docs.sh --no-coverage)")
endif()
message(STATUS "generated docs are up to date")
