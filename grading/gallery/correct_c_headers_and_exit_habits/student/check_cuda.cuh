// check_cuda.cuh: the error-check macro and the timer I copy into every CUDA project of mine.
// CHECK_CUDA(call) runs call; on an error it prints where (file:line), the CUDA error string and
// the call itself, then stops the program, like the helper_cuda.h checks of the CUDA samples.
#ifndef CHECK_CUDA_CUH
#define CHECK_CUDA_CUH

#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

#include <cuda.h>
#include <cuda_runtime.h>

#define CHECK_CUDA(call)                                                                   \
  do {                                                                                     \
    cudaError_t check_cuda_status_ = (call);                                               \
    if (check_cuda_status_ != cudaSuccess) {                                               \
      fprintf(stderr, "CUDA error at %s:%d: %s (%s)\n", __FILE__, __LINE__,                \
              cudaGetErrorString(check_cuda_status_), #call);                              \
      exit(EXIT_FAILURE);                                                                  \
    }                                                                                      \
  } while (0)

namespace scangrade::student {

// Seconds since the epoch, with microseconds, from gettimeofday.
inline double wall_seconds() {
  struct timeval now;
  gettimeofday(&now, NULL);
  return (double)now.tv_sec + (double)now.tv_usec * 1e-6;
}

}  // namespace scangrade::student

#endif  // CHECK_CUDA_CUH
