# cmake -DDIR=... -DNOTE=... -DKEY=... -DCORE=... -DEMU=... -DDEVICE=... -DKTESTS=... -P runtime_cache_store.cmake
# Stores the emulation runtime's archives in DIR (runtime_cache.cmake): copied into a private folder
# beside it, then renamed into place, so DIR is complete or absent. A DIR already there is left alone;
# a cache that cannot be written (read-only home) only costs the reuse: the build goes on.
if(EXISTS "${DIR}/key.txt")
  return()
endif()
string(RANDOM LENGTH 12 tag)
set(tmp "${DIR}.partial-${tag}")
execute_process(COMMAND "${CMAKE_COMMAND}" -E make_directory "${tmp}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(rc EQUAL 0)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E copy "${CORE}" "${EMU}" "${DEVICE}" "${KTESTS}" "${KEY}" "${tmp}/"
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
endif()
if(rc EQUAL 0)
  file(RENAME "${tmp}/runtime-cache.key" "${tmp}/key.txt" RESULT rc)
endif()
if(rc EQUAL 0)
  file(RENAME "${tmp}" "${DIR}" RESULT rc)
endif()
if(rc EQUAL 0)
  file(WRITE "${NOTE}" "emulation runtime: built once and stored in ${DIR}: later handouts reuse it\n")
else()
  file(REMOVE_RECURSE "${tmp}")
  if(NOT EXISTS "${DIR}/key.txt")
    file(WRITE "${NOTE}" "emulation runtime: could not store it in ${DIR} (${rc}): every handout builds its own\n")
  endif()
endif()
