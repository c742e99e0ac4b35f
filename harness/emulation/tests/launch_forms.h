// The kernel launch forms nvcc accepts, one small launch each (tests/launch_forms.cu). The same .cu
// is compiled through rewrite.py for the emulator (launch_forms_test.cpp runs every form) and, when
// nvcc is installed, by nvcc (scangrade_emu_launch_forms_nvcc): both compilers must accept it.
#pragma once

#include <cuda_runtime.h>

namespace launch_forms {

/// One launch form. `launch` launches `record`-like kernels with the form's syntax (`launches`
/// times, all with the same configuration); each kernel writes, into out[0..3] (zeroed before): the
/// value below (the last launch's), gridDim.x, blockDim.x, and adds the number of threads that ran.
/// `launch` returns cudaGetLastError() (or the launch API's own status).
struct Form {
  const char* name;
  cudaError_t (*launch)(int* out);
  int value;
  unsigned grid;
  unsigned block;
  unsigned launches = 1;
};
extern const Form kForms[];
extern const int kFormCount;

// Launches that must fail, and where. Each sets *line to the line of the failing launch.
cudaError_t zero_grid_in_macro(int* out, int* line);                 // cudaErrorInvalidConfiguration
cudaError_t zero_grid_through_launch_kernel(int* out, int* line);    // the same, from cudaLaunchKernel
cudaError_t zero_grid_through_launch_kernel_ex(int* out, int* line); // the same, from cudaLaunchKernelEx
cudaError_t launch_kernel_of_a_host_function(int* out, int* line);   // cudaErrorInvalidDeviceFunction

// Host code beside the launches that is not a launch (shifts, '>>>' closing templates, text).
int shifts(int x);

}  // namespace launch_forms
