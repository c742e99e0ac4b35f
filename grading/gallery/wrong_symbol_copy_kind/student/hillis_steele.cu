// Slot 1: inclusive Hillis-Steele scan in one block, double-buffered in shared memory. The strides
// of the ten steps are uploaded into a __constant__ table with cudaMemcpyToSymbol on each call.
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 1024;
constexpr int kSteps = 10;  // strides 1 .. 512
__constant__ unsigned c_stride[kSteps];

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

template <typename T>
__global__ void hillis_steele_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T buf[2][kThreads];
  const unsigned t = threadIdx.x;
  int cur = 0;
  buf[cur][t] = t < n ? in[t] : T(0);
  __syncthreads();
  for (int s = 0; s < kSteps; ++s) {
    const unsigned stride = c_stride[s];
    buf[1 - cur][t] = t >= stride ? buf[cur][t - stride] + buf[cur][t] : buf[cur][t];
    __syncthreads();
    cur = 1 - cur;
  }
  if (t < n) out[t] = buf[cur][t];
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: n > 1024");
  unsigned strides[kSteps];
  for (int s = 0; s < kSteps; ++s) strides[s] = 1u << s;
  // BUG: the kind names the wrong direction: a copy to a symbol is cudaMemcpyHostToDevice (or
  // cudaMemcpyDefault); the runtime refuses cudaMemcpyDeviceToHost with cudaErrorInvalidMemcpyDirection
  check(cudaMemcpyToSymbol(c_stride, strides, sizeof strides, 0, cudaMemcpyDeviceToHost), "cudaMemcpyToSymbol(c_stride)");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");  // the copy used the legacy default stream
  hillis_steele_kernel<T><<<1, kThreads, 0, stream>>>(d_in, d_out, n);
  check(cudaGetLastError(), "hillis_steele_kernel");
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
