# The emulation runtime built once per machine (the student handout's `make test`).
#
# scangrade_core, scangrade_emu, scangrade_device_emu and scangrade_kernel_tests_emu (the kernel tests'
# body) take most of a fresh build's time and are the same in every handout. With SCANGRADE_RUNTIME_CACHE=<dir> (the handout's Makefile sets
# ${XDG_CACHE_HOME:-~/.cache}/scangrade), a build that finds them in <dir>/emulation-runtime-<key>/
# links those archives (IMPORTED targets of the same names) instead of compiling them; a build that
# does not compiles them and stores them there (scangrade_runtime_store: copied to a private folder,
# renamed into place, so a half-written entry is never seen). <key> hashes everything the archives
# are made from: the contents of harness/src, harness/include, harness/emulation/src and include,
# harness/tests/kernel_tests.cpp, the
# CMake files that set their flags, the compiler (its path, version and the compiler proper's bytes),
# the flags and build type, CMake's version, the CUDA toolkit's runtime header (SCANGRADE_CUDA=ON) and
# the nlohmann/json, GoogleTest and Boost headers. Any change gives another key: a stale archive is never linked.
# Every input is a configure dependency, so editing one re-runs CMake and recomputes the key. What was
# done is written to <build>/runtime-cache.note; tools/student_test.py prints it once.
#
# Defines scangrade_runtime_library(NAME SOURCES...) and SCANGRADE_RT_PUBLIC / SCANGRADE_RT_PRIVATE
# (PUBLIC / PRIVATE, or INTERFACE for an IMPORTED archive) for the usage requirements that follow.
# Empty SCANGRADE_RUNTIME_CACHE (the default, the project's own builds): nothing changes.
set(SCANGRADE_RUNTIME_CACHE "" CACHE PATH "Folder where the emulation runtime is built once and reused (empty: off)")
set(scangrade_runtime_cached OFF)
set(scangrade_runtime_dir "")
set(SCANGRADE_RT_PUBLIC PUBLIC)
set(SCANGRADE_RT_PRIVATE PRIVATE)
set(SCANGRADE_RUNTIME_LIBRARIES scangrade_core scangrade_emu scangrade_device_emu scangrade_kernel_tests_emu)
set(scangrade_runtime_note "${CMAKE_BINARY_DIR}/runtime-cache.note")

if(SCANGRADE_RUNTIME_CACHE AND SCANGRADE_EMULATION)
  file(GLOB_RECURSE scangrade_rt_inputs CONFIGURE_DEPENDS
       "${CMAKE_SOURCE_DIR}/harness/src/*" "${CMAKE_SOURCE_DIR}/harness/include/*"
       "${CMAKE_SOURCE_DIR}/harness/emulation/src/*" "${CMAKE_SOURCE_DIR}/harness/emulation/include/*")
  list(APPEND scangrade_rt_inputs "${CMAKE_SOURCE_DIR}/harness/tests/kernel_tests.cpp" "${CMAKE_SOURCE_DIR}/CMakeLists.txt"
       "${CMAKE_SOURCE_DIR}/harness/emulation/CMakeLists.txt" "${CMAKE_CURRENT_LIST_FILE}")
  list(SORT scangrade_rt_inputs)
  set(key_text "cmake ${CMAKE_VERSION}\n")
  foreach(f IN LISTS scangrade_rt_inputs)
    file(SHA256 "${f}" h)
    file(RELATIVE_PATH rel "${CMAKE_SOURCE_DIR}" "${f}")
    string(APPEND key_text "${rel} ${h}\n")
  endforeach()
  set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${scangrade_rt_inputs})
  # the compiler: driver path and version, and the compiler proper's bytes (gcc's cc1plus)
  string(TOUPPER "${CMAKE_BUILD_TYPE}" bt)
  string(APPEND key_text "cxx ${CMAKE_CXX_COMPILER} ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}\n"
         "flags ${CMAKE_CXX_FLAGS} | ${CMAKE_CXX_FLAGS_${bt}} | ${CMAKE_BUILD_TYPE} | cuda ${SCANGRADE_CUDA}\n")
  execute_process(COMMAND "${CMAKE_CXX_COMPILER}" -print-prog-name=cc1plus OUTPUT_VARIABLE cc1plus
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  foreach(f IN ITEMS "${CMAKE_CXX_COMPILER}" "${cc1plus}")
    if(f AND IS_ABSOLUTE "${f}" AND EXISTS "${f}")
      file(REAL_PATH "${f}" f)
      file(SHA256 "${f}" h)
      string(APPEND key_text "tool ${f} ${h}\n")
    endif()
  endforeach()
  # headers from outside the tree that the archives compile against
  set(outside "")
  if(SCANGRADE_CUDA)
    list(APPEND outside "${CUDAToolkit_INCLUDE_DIRS}/cuda_runtime_api.h")
    string(APPEND key_text "cuda ${CUDAToolkit_VERSION} ${CUDAToolkit_INCLUDE_DIRS}\n")
  endif()
  get_target_property(json_dirs nlohmann_json::nlohmann_json INTERFACE_INCLUDE_DIRECTORIES)
  get_target_property(gtest_dirs GTest::gtest INTERFACE_INCLUDE_DIRECTORIES)
  string(APPEND key_text "gtest ${GTest_VERSION}\n")
  foreach(d IN LISTS json_dirs gtest_dirs Boost_INCLUDE_DIRS CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
    foreach(h IN ITEMS nlohmann/json.hpp boost/version.hpp boost/context/fiber.hpp gtest/gtest.h
                       gtest/internal/gtest-port.h)
      if(EXISTS "${d}/${h}")
        list(APPEND outside "${d}/${h}")
      endif()
    endforeach()
  endforeach()
  foreach(f IN LISTS outside)
    file(SHA256 "${f}" h)
    string(APPEND key_text "header ${f} ${h}\n")
  endforeach()
  string(SHA256 key "${key_text}")
  string(SUBSTRING "${key}" 0 20 key)
  set(scangrade_runtime_dir "${SCANGRADE_RUNTIME_CACHE}/emulation-runtime-${key}")
  set(scangrade_runtime_cached ON)
  foreach(lib IN LISTS SCANGRADE_RUNTIME_LIBRARIES)
    if(NOT EXISTS "${scangrade_runtime_dir}/${CMAKE_STATIC_LIBRARY_PREFIX}${lib}${CMAKE_STATIC_LIBRARY_SUFFIX}")
      set(scangrade_runtime_cached OFF)
    endif()
  endforeach()
  if(NOT EXISTS "${scangrade_runtime_dir}/key.txt")
    set(scangrade_runtime_cached OFF)
  endif()
  if(scangrade_runtime_cached)
    set(SCANGRADE_RT_PUBLIC INTERFACE)
    set(SCANGRADE_RT_PRIVATE INTERFACE)
    # said once per build folder (a reconfigure for a slot that does not compile says nothing new)
    set(used "")
    if(EXISTS "${CMAKE_BINARY_DIR}/runtime-cache.used")
      file(READ "${CMAKE_BINARY_DIR}/runtime-cache.used" used)
    endif()
    if(NOT used STREQUAL scangrade_runtime_dir)
      file(WRITE "${scangrade_runtime_note}"
           "emulation runtime: reused from ${scangrade_runtime_dir} (same sources, same compiler)\n")
      file(WRITE "${CMAKE_BINARY_DIR}/runtime-cache.used" "${scangrade_runtime_dir}")
    endif()
    message(STATUS "emulation runtime: reusing ${scangrade_runtime_dir}")
  else()
    file(WRITE "${CMAKE_BINARY_DIR}/runtime-cache.key" "${key_text}")
    message(STATUS "emulation runtime: not in ${scangrade_runtime_dir}: built here, then stored there")
  endif()
endif()

# scangrade_runtime_library(NAME SOURCES...): the library, or its cached archive
function(scangrade_runtime_library NAME)
  if(scangrade_runtime_cached)
    add_library(${NAME} STATIC IMPORTED GLOBAL)
    set_target_properties(${NAME} PROPERTIES IMPORTED_LOCATION
      "${scangrade_runtime_dir}/${CMAKE_STATIC_LIBRARY_PREFIX}${NAME}${CMAKE_STATIC_LIBRARY_SUFFIX}")
  else()
    add_library(${NAME} STATIC ${ARGN})
    if(scangrade_runtime_dir AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
      # shared by every handout: __FILE__ names the source as harness/..., not the folder of the
      # handout that happened to build it
      target_compile_options(${NAME} PRIVATE "-ffile-prefix-map=${CMAKE_SOURCE_DIR}/=")
    endif()
  endif()
endfunction()

# scangrade_runtime_store(): after the libraries are defined, the target that stores them (a miss)
function(scangrade_runtime_store)
  if(NOT scangrade_runtime_dir OR scangrade_runtime_cached)
    return()
  endif()
  add_custom_target(scangrade_runtime_store
    COMMAND "${CMAKE_COMMAND}" "-DDIR=${scangrade_runtime_dir}" "-DNOTE=${scangrade_runtime_note}"
            "-DKEY=${CMAKE_BINARY_DIR}/runtime-cache.key"
            "-DCORE=$<TARGET_FILE:scangrade_core>" "-DEMU=$<TARGET_FILE:scangrade_emu>"
            "-DDEVICE=$<TARGET_FILE:scangrade_device_emu>" "-DKTESTS=$<TARGET_FILE:scangrade_kernel_tests_emu>"
            -P "${CMAKE_SOURCE_DIR}/harness/cmake/runtime_cache_store.cmake"
    VERBATIM)
  add_dependencies(scangrade_runtime_store ${SCANGRADE_RUNTIME_LIBRARIES})
endfunction()
