# The grader: scangrade_judge (never links student code, nor the CUDA runtime) and the workers that
# run the student's slots. Included at the end of the top-level CMakeLists.txt when this folder is
# there (not in the student handout). Without reference/ (a grader tree that students may see, for
# their feedback CI: tools/feedback_grader.py) only the emulation backend grades: the GPU worker
# times against the reference solutions.
if(SCANGRADE_CUDA AND SCANGRADE_WITH_REFERENCE)
  set(scangrade_gpu_grader ON)
else()
  set(scangrade_gpu_grader OFF)
endif()
set(SCANGRADE_JUDGE_DIR "${CMAKE_SOURCE_DIR}/grading/judge")
set(SCANGRADE_WORKER_DIR "${CMAKE_SOURCE_DIR}/grading/worker")
set(SCANGRADE_PROTOCOL_DIR "${CMAKE_SOURCE_DIR}/grading/protocol")
set(SCANGRADE_CHECKER_DIR "${CMAKE_SOURCE_DIR}/grading/checker")
# The messages' codecs (judge <-> worker, judge <-> checker): compiled into the judge, the checker,
# each worker library and the fakes.
set(SCANGRADE_PROTOCOL_SOURCES "${SCANGRADE_PROTOCOL_DIR}/messages.cpp" "${SCANGRADE_PROTOCOL_DIR}/checker_messages.cpp")

# --- worker ---------------------------------------------------------------------------------------
if(scangrade_gpu_grader)
# The alloc tracker as objects: compiled into every worker (its cudaMalloc/cudaFree must win over the
# shared runtime's) and named in toolchain.json for submissions linked without CMake.
add_library(scangrade_alloc_tracker_obj OBJECT ${SCANGRADE_ALLOC_TRACKER})
target_link_libraries(scangrade_alloc_tracker_obj PRIVATE scangrade_core CUDA::cudart)

# Worker main + protocol. Linked with ONE implementation of scangrade::student::* it is a worker. It
# links no reference or baseline symbol: the checker (below) times those, in a trusted process. The
# CPU emulation backend compiles worker_main.cpp with the host compiler.
add_library(scangrade_worker_main STATIC
  ${SCANGRADE_PROTOCOL_SOURCES}
  ${SCANGRADE_WORKER_DIR}/worker_main.cpp
  ${SCANGRADE_PROTOCOL_DIR}/vmm.cpp)
target_include_directories(scangrade_worker_main PRIVATE ${SCANGRADE_PROTOCOL_DIR})
target_link_libraries(scangrade_worker_main
  PUBLIC scangrade_device CUDA::cudart ${CMAKE_DL_LIBS}
  PRIVATE nlohmann_json::nlohmann_json)

# The checker: the trusted side of a GPU case (grading/checker/checker_main.cpp), started by the judge.
add_executable(scangrade_checker
  ${SCANGRADE_PROTOCOL_SOURCES}
  ${SCANGRADE_CHECKER_DIR}/checker_main.cpp
  ${SCANGRADE_CHECKER_DIR}/bench.cpp
  ${SCANGRADE_PROTOCOL_DIR}/vmm.cpp
  ${SCANGRADE_CHECKER_DIR}/output_check.cu
  $<TARGET_OBJECTS:scangrade_alloc_tracker_obj>)
target_include_directories(scangrade_checker PRIVATE ${SCANGRADE_PROTOCOL_DIR} ${SCANGRADE_CHECKER_DIR})
target_link_libraries(scangrade_checker PRIVATE scangrade_device scangrade_reference CUDA::cudart
                      nlohmann_json::nlohmann_json)

# tools/bench_reference.py's timings: the reference scans, CUB and a copy, with the checker's method.
add_executable(scangrade_bench_reference
  ${SCANGRADE_PROTOCOL_SOURCES}
  ${SCANGRADE_CHECKER_DIR}/bench_reference_main.cpp
  ${SCANGRADE_CHECKER_DIR}/bench.cpp
  $<TARGET_OBJECTS:scangrade_alloc_tracker_obj>)
target_include_directories(scangrade_bench_reference PRIVATE ${SCANGRADE_PROTOCOL_DIR} ${SCANGRADE_CHECKER_DIR})
target_link_libraries(scangrade_bench_reference PRIVATE scangrade_device scangrade_reference CUDA::cudart
                      nlohmann_json::nlohmann_json)

# What a timed repetition's fresh input and band cost the checker (a benchmark for the GPU machine).
add_executable(scangrade_bench_fresh_input ${SCANGRADE_CHECKER_DIR}/bench_fresh_input.cu ${SCANGRADE_CHECKER_DIR}/output_check.cu
               $<TARGET_OBJECTS:scangrade_alloc_tracker_obj>)
target_include_directories(scangrade_bench_fresh_input PRIVATE ${SCANGRADE_CHECKER_DIR})
target_link_libraries(scangrade_bench_fresh_input PRIVATE scangrade_device CUDA::cudart)

# scangrade_add_worker(NAME <libraries or sources that define scangrade::student::*>...)
function(scangrade_add_worker NAME)
  add_executable(${NAME} $<TARGET_OBJECTS:scangrade_alloc_tracker_obj>)
  set_target_properties(${NAME} PROPERTIES LINKER_LANGUAGE CXX)
  target_link_libraries(${NAME} PRIVATE scangrade_worker_main ${ARGN})
endfunction()

# The repository's student/ folder, and the reference solutions bound as the student.
scangrade_add_worker(scangrade_worker_student scangrade_student)
add_library(scangrade_reference_as_student STATIC ${SCANGRADE_WORKER_DIR}/reference_as_student.cpp)
target_link_libraries(scangrade_reference_as_student PUBLIC scangrade_reference)
scangrade_add_worker(scangrade_worker_reference scangrade_reference_as_student)
endif()

# The same worker over the CPU emulation backend: no timing; each check runs under several thread
# orders (emulated_run.h) and the reply says when results differ.
if(SCANGRADE_EMULATION)
  add_library(scangrade_worker_main_emu STATIC ${SCANGRADE_WORKER_DIR}/worker_main.cpp ${SCANGRADE_PROTOCOL_SOURCES})
  target_include_directories(scangrade_worker_main_emu PRIVATE ${SCANGRADE_PROTOCOL_DIR})
  target_link_libraries(scangrade_worker_main_emu PUBLIC scangrade_device_emu PRIVATE nlohmann_json::nlohmann_json)
endif()
if(SCANGRADE_EMULATION AND SCANGRADE_WITH_REFERENCE)
  add_executable(scangrade_worker_reference_emu ${SCANGRADE_WORKER_DIR}/reference_as_student.cpp)
  scangrade_add_emulated_sources(TARGET scangrade_worker_reference_emu SOURCES ${SCANGRADE_REFERENCE_EMULATED_SOURCES})
  target_include_directories(scangrade_worker_reference_emu PRIVATE ${CMAKE_SOURCE_DIR}/reference)
  target_link_libraries(scangrade_worker_reference_emu PRIVATE scangrade_worker_main_emu)
  set(scangrade_reference_emu_json ",
    \"reference_worker\": \"$<TARGET_FILE:scangrade_worker_reference_emu>\"")
else()
  set(scangrade_reference_emu_json "")
endif()

# --- run-time policy monitor (grading/worker/policy_monitor.h) -----------------------------------------
# Both workers evaluate the same rules (policy_rules.cpp). The GPU worker watches the student's API calls
# with CUPTI callbacks; libcupti is opened with dlopen at install() (its path below, else the loader's
# search), so toolchain.json's link line needs nothing more. The emulated worker reads the emulator's trace.
if(scangrade_gpu_grader)
  target_sources(scangrade_worker_main PRIVATE ${SCANGRADE_WORKER_DIR}/policy_rules.cpp
                                               ${SCANGRADE_WORKER_DIR}/policy_monitor_cupti.cpp)
  target_include_directories(scangrade_worker_main PRIVATE ${SCANGRADE_WORKER_DIR})
  if(TARGET CUDA::cupti)
    target_include_directories(scangrade_worker_main PRIVATE $<TARGET_PROPERTY:CUDA::cupti,INTERFACE_INCLUDE_DIRECTORIES>)
    set_property(SOURCE ${SCANGRADE_WORKER_DIR}/policy_monitor_cupti.cpp TARGET_DIRECTORY scangrade_worker_main
                 APPEND PROPERTY COMPILE_DEFINITIONS "SCANGRADE_CUPTI_LIBRARY=\"$<TARGET_FILE:CUDA::cupti>\"")
  endif()
endif()
if(SCANGRADE_EMULATION)
  target_sources(scangrade_worker_main_emu PRIVATE ${SCANGRADE_WORKER_DIR}/policy_rules.cpp
                                                   ${SCANGRADE_WORKER_DIR}/policy_monitor_emu.cpp)
  target_include_directories(scangrade_worker_main_emu PRIVATE ${SCANGRADE_WORKER_DIR})
endif()
if(SCANGRADE_BUILD_TESTS)
  add_executable(scangrade_policy_rules_test ${SCANGRADE_WORKER_DIR}/tests/test_policy_rules.cpp
                                             ${SCANGRADE_WORKER_DIR}/policy_rules.cpp)
  target_include_directories(scangrade_policy_rules_test PRIVATE ${SCANGRADE_WORKER_DIR})
  target_link_libraries(scangrade_policy_rules_test PRIVATE scangrade_core GTest::gtest_main)
  gtest_discover_tests(scangrade_policy_rules_test TEST_PREFIX "grader/" DISCOVERY_TIMEOUT 60)
endif()

# --- judge ----------------------------------------------------------------------------------------
# --- sandbox: bubblewrap + cgroup v2 / rlimits around every student process -------------------------
add_library(scangrade_sandbox_lib STATIC ${CMAKE_SOURCE_DIR}/grading/sandbox/sandbox.cpp)
target_include_directories(scangrade_sandbox_lib PUBLIC ${CMAKE_SOURCE_DIR}/grading/sandbox ${SCANGRADE_PROTOCOL_DIR})
target_link_libraries(scangrade_sandbox_lib PUBLIC nlohmann_json::nlohmann_json)
# the launcher grading/scangrade/build.py runs compiles and links through
add_executable(scangrade_sandbox ${CMAKE_SOURCE_DIR}/grading/sandbox/sandbox_main.cpp)
target_link_libraries(scangrade_sandbox PRIVATE scangrade_sandbox_lib)
set_target_properties(scangrade_sandbox PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/grading)

add_library(scangrade_judge_lib STATIC
  ${SCANGRADE_PROTOCOL_SOURCES}
  ${SCANGRADE_JUDGE_DIR}/text.cpp
  ${SCANGRADE_JUDGE_DIR}/sha256.cpp
  ${SCANGRADE_JUDGE_DIR}/sanitizer_xml.cpp
  ${SCANGRADE_JUDGE_DIR}/scoring.cpp
  ${SCANGRADE_JUDGE_DIR}/channel.cpp
  ${SCANGRADE_JUDGE_DIR}/process.cpp
  ${SCANGRADE_JUDGE_DIR}/gpu_lock.cpp
  ${SCANGRADE_JUDGE_DIR}/command_line.cpp
  ${SCANGRADE_JUDGE_DIR}/session.cpp
  ${SCANGRADE_JUDGE_DIR}/outside.cpp
  ${SCANGRADE_JUDGE_DIR}/case_memory.cpp
  ${SCANGRADE_JUDGE_DIR}/case_data.cpp
  ${SCANGRADE_JUDGE_DIR}/functional.cpp
  ${SCANGRADE_JUDGE_DIR}/timing.cpp
  ${SCANGRADE_JUDGE_DIR}/timing_share.cpp
  ${SCANGRADE_JUDGE_DIR}/sanitizer.cpp
  ${SCANGRADE_JUDGE_DIR}/results.cpp
  ${SCANGRADE_JUDGE_DIR}/judge.cpp)
target_include_directories(scangrade_judge_lib PUBLIC ${SCANGRADE_JUDGE_DIR} ${SCANGRADE_PROTOCOL_DIR})
find_package(Threads REQUIRED)  # the judge makes the next case's input while a worker runs
target_link_libraries(scangrade_judge_lib PUBLIC scangrade_core scangrade_sandbox_lib nlohmann_json::nlohmann_json Threads::Threads)
target_compile_definitions(scangrade_judge_lib PRIVATE SCANGRADE_VERSION="${PROJECT_VERSION}")
add_executable(scangrade_judge ${SCANGRADE_JUDGE_DIR}/judge_main.cpp)
target_link_libraries(scangrade_judge PRIVATE scangrade_judge_lib)

# --- toolchain.json: compiling and linking a submission without CMake ---------------------------
# cuda_flags: compile each student .cu with  nvcc <cuda_flags> -I<student dir> -c FILE -o FILE.o
# link:       <cxx> -o worker <student .o files> <link...>   (the pieces are in link order)
# the flags: harness/cmake/student_nvcc_flags.cmake (shared with the handout's nvcc check)
scangrade_student_nvcc_flags(scangrade_cuda_flags)
scangrade_json_list(scangrade_cuda_flags_json ${scangrade_cuda_flags})
set(scangrade_cuda_libdir "${CUDAToolkit_LIBRARY_DIR}")
# emulate: <rewrite> f.cu f.cpp, then <cxx> <cxx_flags> -I<student dir> -c f.cpp, then <cxx> -o worker ... <link>
set(scangrade_emulate_json "")
if(SCANGRADE_EMULATION)
  # the emulated build's flags for student code (harness/emulation/CMakeLists.txt); the worker finds
  # Boost.Context where it was built against (an rpath: not only in the system's library folders when
  # tools/deps.sh unpacked it into .deps/root without root)
  list(TRANSFORM SCANGRADE_EMU_STUDENT_FLAGS PREPEND "\"" OUTPUT_VARIABLE scangrade_emu_flags_json)
  list(TRANSFORM scangrade_emu_flags_json APPEND "\"")
  list(JOIN scangrade_emu_flags_json ", " scangrade_emu_flags_json)
  set(scangrade_emulate_json ",
  \"emulate\": {
    \"rewrite\": [\"${SCANGRADE_EMU_PYTHON}\", \"${SCANGRADE_EMU_REWRITER}\", \"--runtime-header\", \"${SCANGRADE_EMU_RUNTIME_HEADER}\"],
    \"cxx\": \"${CMAKE_CXX_COMPILER}\",
    \"cxx_flags\": [\"-std=c++17\", \"-O2\", \"-g0\", \"-I${CMAKE_SOURCE_DIR}/harness/emulation/include\", \"-I${CMAKE_SOURCE_DIR}/harness/include\", \"-DSCANGRADE_EMULATED\", ${scangrade_emu_flags_json}],
    \"link\": [\"$<TARGET_FILE:scangrade_worker_main_emu>\", \"$<TARGET_FILE:scangrade_device_emu>\", \"$<TARGET_FILE:scangrade_emu>\", \"$<TARGET_FILE:scangrade_core>\", \"$<TARGET_FILE:Boost::context>\", \"-Wl,-rpath,$<TARGET_FILE_DIR:Boost::context>\", \"-lpthread\", \"-ldl\"]${scangrade_reference_emu_json}
  }")
endif()
if(scangrade_gpu_grader)
file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/grading/toolchain.json" CONTENT "{
  \"version\": \"${PROJECT_VERSION}\",
  \"nvcc\": \"${CMAKE_CUDA_COMPILER}\",
  \"cxx\": \"${CMAKE_CXX_COMPILER}\",
  \"cuda_flags\": [${scangrade_cuda_flags_json}],
  \"link\": [\"$<JOIN:$<TARGET_OBJECTS:scangrade_alloc_tracker_obj>,\", \">\", \"$<TARGET_FILE:scangrade_worker_main>\", \"$<TARGET_FILE:scangrade_device>\", \"$<TARGET_FILE:scangrade_core>\", \"-L${scangrade_cuda_libdir}\", \"-Wl,-rpath,${scangrade_cuda_libdir}\", \"-lcudart\", \"-ldl\", \"-lpthread\", \"-lrt\"],
  \"judge\": \"$<TARGET_FILE:scangrade_judge>\",
  \"checker\": \"$<TARGET_FILE:scangrade_checker>\",
  \"sandbox\": \"$<TARGET_FILE:scangrade_sandbox>\",
  \"reference_worker\": \"$<TARGET_FILE:scangrade_worker_reference>\",
  \"student_worker\": \"$<TARGET_FILE:scangrade_worker_student>\"${scangrade_emulate_json}
}
")
else()
# no nvcc (or no reference/): the emulate recipe only (grade.py --backend gpu then says this build
# has no GPU recipe)
file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/grading/toolchain.json" CONTENT "{
  \"version\": \"${PROJECT_VERSION}\",
  \"cxx\": \"${CMAKE_CXX_COMPILER}\",
  \"judge\": \"$<TARGET_FILE:scangrade_judge>\",
  \"sandbox\": \"$<TARGET_FILE:scangrade_sandbox>\"${scangrade_emulate_json}
}
")
endif()

# --- tests ----------------------------------------------------------------------------------------
if(SCANGRADE_BUILD_TESTS)
  add_executable(scangrade_fake_worker ${SCANGRADE_JUDGE_DIR}/tests/fake_worker.cpp ${SCANGRADE_PROTOCOL_SOURCES})
  target_include_directories(scangrade_fake_worker PRIVATE ${SCANGRADE_PROTOCOL_DIR})
  target_link_libraries(scangrade_fake_worker PRIVATE scangrade_core nlohmann_json::nlohmann_json)
  add_executable(scangrade_fake_checker ${SCANGRADE_JUDGE_DIR}/tests/fake_checker.cpp ${SCANGRADE_PROTOCOL_SOURCES})
  target_include_directories(scangrade_fake_checker PRIVATE ${SCANGRADE_PROTOCOL_DIR} ${SCANGRADE_CHECKER_DIR})
  target_link_libraries(scangrade_fake_checker PRIVATE scangrade_core nlohmann_json::nlohmann_json)

  # The case cache (--case-cache): needs no GPU, so it builds and runs on every grader tree.
  add_executable(scangrade_case_cache_tests ${SCANGRADE_JUDGE_DIR}/tests/test_case_cache.cpp)
  target_link_libraries(scangrade_case_cache_tests PRIVATE scangrade_judge_lib GTest::gtest_main)
  gtest_discover_tests(scangrade_case_cache_tests TEST_PREFIX "grader/" DISCOVERY_TIMEOUT 60)

  # The timed calls' fresh inputs draw what inputs.h draws (host side of fresh_input.h).
  add_executable(scangrade_fresh_input_tests ${SCANGRADE_CHECKER_DIR}/test_fresh_input.cpp)
  target_include_directories(scangrade_fresh_input_tests PRIVATE ${SCANGRADE_CHECKER_DIR})
  target_link_libraries(scangrade_fresh_input_tests PRIVATE scangrade_core GTest::gtest_main)
  gtest_discover_tests(scangrade_fresh_input_tests TEST_PREFIX "grader/" DISCOVERY_TIMEOUT 60)
endif()
if(SCANGRADE_BUILD_TESTS AND scangrade_gpu_grader)
  # A known-racy submission (in-place Hillis-Steele): the GPU test expects racecheck to catch it.
  add_library(scangrade_racy_student STATIC ${SCANGRADE_JUDGE_DIR}/tests/racy/slots.cu)
  target_link_libraries(scangrade_racy_student PUBLIC scangrade_core)
  target_compile_options(scangrade_racy_student PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:${SCANGRADE_STUDENT_CUDA_FLAGS}>")
  scangrade_add_worker(scangrade_worker_racy scangrade_racy_student)

  add_executable(scangrade_grader_tests
    ${SCANGRADE_JUDGE_DIR}/tests/test_units.cpp
    ${SCANGRADE_JUDGE_DIR}/tests/test_judge.cpp
    ${SCANGRADE_JUDGE_DIR}/tests/test_judge_gpu_passes.cpp
    ${SCANGRADE_JUDGE_DIR}/tests/test_toolchain.cpp
    ${SCANGRADE_JUDGE_DIR}/tests/test_gpu_lock.cpp
    ${SCANGRADE_JUDGE_DIR}/tests/test_gpu_reference.cpp)
  target_link_libraries(scangrade_grader_tests PRIVATE scangrade_judge_lib GTest::gtest_main)
  target_compile_definitions(scangrade_grader_tests PRIVATE
    SCANGRADE_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    SCANGRADE_BINARY_DIR="${CMAKE_BINARY_DIR}"
    SCANGRADE_JUDGE="$<TARGET_FILE:scangrade_judge>"
    SCANGRADE_FAKE_WORKER="$<TARGET_FILE:scangrade_fake_worker>"
    SCANGRADE_FAKE_CHECKER="$<TARGET_FILE:scangrade_fake_checker>"
    SCANGRADE_REFERENCE_WORKER="$<TARGET_FILE:scangrade_worker_reference>"
    SCANGRADE_RACY_WORKER="$<TARGET_FILE:scangrade_worker_racy>"
    SCANGRADE_TOOLCHAIN_JSON="${CMAKE_BINARY_DIR}/grading/toolchain.json")
  add_dependencies(scangrade_grader_tests scangrade_judge scangrade_fake_worker scangrade_fake_checker scangrade_worker_reference
                   scangrade_worker_racy scangrade_worker_main scangrade_alloc_tracker_obj)
  gtest_discover_tests(scangrade_grader_tests TEST_PREFIX "grader/" DISCOVERY_TIMEOUT 60)

  # The checker's device-side checks against the host rule (skipped without a GPU).
  add_executable(scangrade_output_check_tests ${SCANGRADE_CHECKER_DIR}/test_output_check.cu
                 ${SCANGRADE_CHECKER_DIR}/output_check.cu $<TARGET_OBJECTS:scangrade_alloc_tracker_obj>)
  target_include_directories(scangrade_output_check_tests PRIVATE ${SCANGRADE_CHECKER_DIR})
  target_link_libraries(scangrade_output_check_tests PRIVATE scangrade_device GTest::gtest_main)
  gtest_discover_tests(scangrade_output_check_tests TEST_PREFIX "grader/" DISCOVERY_TIMEOUT 60)
endif()

# Everything `make grade` needs: the judge, the prebuilt worker pieces of toolchain.json, and the
# reference workers.
add_custom_target(scangrade_grader DEPENDS scangrade_judge scangrade_sandbox)
if(scangrade_gpu_grader)
  add_dependencies(scangrade_grader scangrade_worker_main scangrade_alloc_tracker_obj scangrade_checker
                                    scangrade_worker_reference scangrade_worker_student)
endif()
if(SCANGRADE_EMULATION)
  add_dependencies(scangrade_grader scangrade_worker_main_emu)
endif()
if(SCANGRADE_EMULATION AND SCANGRADE_WITH_REFERENCE)
  add_dependencies(scangrade_grader scangrade_worker_reference_emu)
endif()
