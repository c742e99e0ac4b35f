// Slot 1: inclusive Hillis-Steele scan of up to 1024 elements in one block, one element per thread,
// double-buffered in shared memory (step d reads one buffer and writes the other).
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kN = 1024;

template <typename T>
__global__ void hillis_steele_kernel(const T* in, T* out, std::size_t n) {
  // BUG: the buffers are int for every T (the kernel was written for the int32 version first):
  // a float input is truncated to an integer on the way in and the sums are integer sums, so the
  // float scan is right only when every input is a whole number (the 'random' cases) and wrong
  // for real-valued floats (and undefined for floats beyond the int range).
  __shared__ int buf[2][kN];
  const unsigned t = threadIdx.x;
  buf[0][t] = t < n ? in[t] : 0;
  unsigned cur = 0;
  for (unsigned d = 1; d < kN; d *= 2) {
    __syncthreads();
    buf[1 - cur][t] = t >= d ? buf[cur][t] + buf[cur][t - d] : buf[cur][t];
    cur = 1 - cur;
  }
  __syncthreads();
  if (t < n) out[t] = buf[cur][t];
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: n > 1024");
  hillis_steele_kernel<T><<<1, kN, 0, stream>>>(d_in, d_out, n);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("hillis_steele_kernel: ") + cudaGetErrorString(err));
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
