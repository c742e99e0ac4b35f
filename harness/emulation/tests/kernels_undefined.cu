// Test kernels: operations whose result C++ leaves undefined (src/undefined.cpp).
#include "test_kernels.h"

namespace emu_test {
namespace {

// out[t] = in[t] << amount, and its unsigned and signed right shifts: amounts of 32 or more are undefined
__global__ void shift_kernel(const int* in, int amount, int* left, unsigned* right_unsigned, int* right_signed) {
  int t = threadIdx.x;
  left[t] = in[t] << amount;                                   // kernels_undefined.cu:10
  right_unsigned[t] = static_cast<unsigned>(in[t]) >> amount;  // kernels_undefined.cu:11
  right_signed[t] = in[t] >> amount;                           // kernels_undefined.cu:12
}

__global__ void convert_kernel(const float* in, int* as_int, unsigned* as_unsigned) {
  int t = threadIdx.x;
  as_int[t] = static_cast<int>(in[t]);            // kernels_undefined.cu:17
  as_unsigned[t] = static_cast<unsigned>(in[t]);  // kernels_undefined.cu:18
}

__global__ void divide_kernel(const int* a, const int* b, int* quotient, int* remainder, unsigned* uquotient) {
  int t = threadIdx.x;
  quotient[t] = a[t] / b[t];                                                   // kernels_undefined.cu:23
  remainder[t] = a[t] % b[t];                                                  // kernels_undefined.cu:24
  uquotient[t] = static_cast<unsigned>(a[t]) / static_cast<unsigned>(b[t]);  // kernels_undefined.cu:25
}

template <class T>
T* device_copy(const std::vector<T>& v) {
  T* d = nullptr;
  cudaMalloc(&d, v.size() * sizeof(T) + 1);
  cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}
template <class T>
std::vector<T> host_copy(const T* d, std::size_t n) {
  std::vector<T> v(n);
  cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
  return v;
}

}  // namespace

Shifted shift(const std::vector<int>& in, int amount) {
  const int n = static_cast<int>(in.size());
  int* d_in = device_copy(in);
  int *l = nullptr, *rs = nullptr;
  unsigned* ru = nullptr;
  cudaMalloc(&l, n * sizeof(int));
  cudaMalloc(&ru, n * sizeof(unsigned));
  cudaMalloc(&rs, n * sizeof(int));
  shift_kernel<<<1, n>>>(d_in, amount, l, ru, rs);
  Shifted out{host_copy(l, n), host_copy(ru, n), host_copy(rs, n)};
  cudaFree(d_in), cudaFree(l), cudaFree(ru), cudaFree(rs);
  return out;
}

Converted convert(const std::vector<float>& in) {
  const int n = static_cast<int>(in.size());
  float* d_in = device_copy(in);
  int* i = nullptr;
  unsigned* u = nullptr;
  cudaMalloc(&i, n * sizeof(int));
  cudaMalloc(&u, n * sizeof(unsigned));
  convert_kernel<<<1, n>>>(d_in, i, u);
  Converted out{host_copy(i, n), host_copy(u, n)};
  cudaFree(d_in), cudaFree(i), cudaFree(u);
  return out;
}

Divided divide(const std::vector<int>& a, const std::vector<int>& b) {
  const int n = static_cast<int>(a.size());
  int* d_a = device_copy(a);
  int* d_b = device_copy(b);
  int *q = nullptr, *r = nullptr;
  unsigned* uq = nullptr;
  cudaMalloc(&q, n * sizeof(int));
  cudaMalloc(&r, n * sizeof(int));
  cudaMalloc(&uq, n * sizeof(unsigned));
  divide_kernel<<<1, n>>>(d_a, d_b, q, r, uq);
  Divided out{cudaDeviceSynchronize(), host_copy(q, n), host_copy(r, n), host_copy(uq, n)};
  cudaFree(d_a), cudaFree(d_b), cudaFree(q), cudaFree(r), cudaFree(uq);
  return out;
}

}  // namespace emu_test
