// Slot 1: inclusive Hillis-Steele scan, one block of 1024 threads, double-buffered in dynamic shared
// memory (2 * 1024 elements, sized by the launch), one kernel template for int32 and float.
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = static_cast<unsigned>(kHillisSteeleMaxN);  // 1024

template <typename T>
__global__ void scan_in_two_buffers(const T* in, T* out, unsigned n) {
  // BUG: a dynamic shared array of the template's type: every instantiation declares the same
  // extern symbol `part` with another element type (int, then float), which nvcc rejects ("declaration
  // is incompatible with previous"); one `extern __shared__ unsigned char` buffer cast to T* is the fix.
  extern __shared__ T part[];
  const unsigned t = threadIdx.x;
  T* from = part;
  T* to = part + kThreads;
  from[t] = t < n ? in[t] : T(0);
  __syncthreads();
  for (unsigned d = 1; d < kThreads; d *= 2) {
    to[t] = t >= d ? from[t] + from[t - d] : from[t];
    __syncthreads();
    T* swap = from;
    from = to;
    to = swap;
  }
  if (t < n) out[t] = from[t];
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: at most 1024 elements");
  scan_in_two_buffers<T><<<1, kThreads, 2 * kThreads * sizeof(T), stream>>>(d_in, d_out, static_cast<unsigned>(n));
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("scan_in_two_buffers: ") + cudaGetErrorString(err));
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
