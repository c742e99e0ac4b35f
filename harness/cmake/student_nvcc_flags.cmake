# scangrade_student_nvcc_flags(OUT): the nvcc flags every student .cu is compiled with, as a CMake list:
#     nvcc <flags> -I<student dir> -c FILE -o FILE.o
# The GPU grader's recipe (grading/grader.cmake: toolchain.json's cuda_flags) and the handout's nvcc
# check of an emulated `make test` (CMakeLists.txt: nvcc-check.json, tools/student_test.py) both come
# from here: -std=c++17, -O3, SCANGRADE_STUDENT_CUDA_FLAGS (grading/docs/grading.md, "Compiler
# flags"), one -gencode per entry of CMAKE_CUDA_ARCHITECTURES (NN: machine code and PTX, NN-real,
# NN-virtual), and the contract headers.
function(scangrade_student_nvcc_flags OUT)
  set(flags -std=c++17 -O3 ${SCANGRADE_STUDENT_CUDA_FLAGS})
  list(LENGTH CMAKE_CUDA_ARCHITECTURES count)
  if(count GREATER 1)
    list(APPEND flags --threads 0)  # one thread per architecture
  endif()
  foreach(arch IN LISTS CMAKE_CUDA_ARCHITECTURES)
    string(REGEX REPLACE "-(real|virtual)$" "" num "${arch}")
    if(arch MATCHES "-virtual$")
      list(APPEND flags -gencode "arch=compute_${num},code=compute_${num}")
    elseif(arch MATCHES "-real$")
      list(APPEND flags -gencode "arch=compute_${num},code=sm_${num}")
    else()
      list(APPEND flags -gencode "arch=compute_${num},code=[sm_${num},compute_${num}]")
    endif()
  endforeach()
  list(APPEND flags "-I${CMAKE_SOURCE_DIR}/harness/include")
  set(${OUT} "${flags}" PARENT_SCOPE)
endfunction()

# scangrade_json_list(OUT ITEMS...): the items as a JSON array's contents ("a", "b"); no item holds a
# quote or a backslash (flags and paths of this build)
function(scangrade_json_list OUT)
  set(items "")
  foreach(item IN LISTS ARGN)
    list(APPEND items "\"${item}\"")
  endforeach()
  list(JOIN items ", " items)
  set(${OUT} "${items}" PARENT_SCOPE)
endfunction()
