// Slot 1: inclusive Hillis-Steele scan, one block of n threads, double-buffered in dynamic shared
// memory: buffer 0 is words [0, n), buffer 1 is words [n, 2n); each step reads one buffer and writes
// the other, so no thread reads a word another thread writes in the same step.
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

template <typename T>
__global__ void scan_double_buffered(const T* in, T* out, unsigned n) {
  extern __shared__ unsigned char raw[];   // sized by the launch
  T* buf = reinterpret_cast<T*>(raw);
  const unsigned t = threadIdx.x;
  unsigned src = 0;
  buf[t] = in[t];
  __syncthreads();
  for (unsigned d = 1; d < n; d *= 2) {
    const unsigned dst = 1 - src;
    buf[dst * n + t] = t >= d ? buf[src * n + t] + buf[src * n + t - d] : buf[src * n + t];
    __syncthreads();
    src = dst;
  }
  out[t] = buf[src * n + t];
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: at most 1024 elements");
  // BUG: the third launch parameter is a size in bytes, but this passes the number of elements of the
  // two buffers (2n): a quarter of the 2n * sizeof(T) bytes the kernel uses.
  const std::size_t shared_bytes = 2 * n;
  scan_double_buffered<T><<<1, static_cast<unsigned>(n), shared_bytes, stream>>>(d_in, d_out, static_cast<unsigned>(n));
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("scan_double_buffered: ") + cudaGetErrorString(err));
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
