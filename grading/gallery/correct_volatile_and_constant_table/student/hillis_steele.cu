// Slot 1: inclusive Hillis-Steele scan in one block. The strides of the ten steps come from a
// __constant__ table that each call uploads with cudaMemcpyToSymbolAsync on its stream.
#include "vc_common.cuh"

namespace scangrade::student {
namespace {

constexpr int kSteps = 10;  // strides 1, 2, ..., 512 cover 1024 elements
__constant__ unsigned c_stride[kSteps];

template <typename T>
__global__ void hillis_steele_kernel(const T* __restrict__ in, T* __restrict__ out, const std::size_t n) {
  __shared__ T ping[vc::kThreads];
  __shared__ T pong[vc::kThreads];
  const unsigned t = threadIdx.x;
  T* from = ping;
  T* to = pong;
  from[t] = t < n ? in[t] : T(0);
  __syncthreads();
  for (int s = 0; s < kSteps; ++s) {
    const unsigned stride = c_stride[s];
    to[t] = t >= stride ? from[t - stride] + from[t] : from[t];
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
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: n > 1024");
  unsigned strides[kSteps];
  for (int s = 0; s < kSteps; ++s) strides[s] = 1u << s;
  vc::check(cudaMemcpyToSymbolAsync(c_stride, strides, sizeof strides, 0, cudaMemcpyHostToDevice, stream),
            "cudaMemcpyToSymbolAsync(c_stride)");
  hillis_steele_kernel<T><<<1, vc::kThreads, 0, stream>>>(d_in, d_out, n);
  vc::check(cudaGetLastError(), "hillis_steele_kernel");
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
