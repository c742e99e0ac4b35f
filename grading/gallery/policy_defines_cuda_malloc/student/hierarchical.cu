// Slot 3, as simple as it gets: one thread scans the whole array into a temporary, which is copied
// to d_out and never freed. alloc_hooks.cu defines cudaMalloc and cudaFree so that the harness's leak
// accounting would not see the temporary. (The policy check stops the slot before it runs.)
#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

template <typename T>
__global__ void scan_one_thread(const T* in, T* tmp, std::size_t n, bool exclusive) {
  T sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    tmp[i] = exclusive ? sum : sum + in[i];
    sum += in[i];
  }
}

template <typename T>
void scan(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  T* tmp = nullptr;  // BUG (hidden by alloc_hooks.cu): never freed
  if (cudaMalloc(&tmp, n * sizeof(T)) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
  scan_one_thread<T><<<1, 1, 0, stream>>>(d_in, tmp, n, kind == ScanKind::Exclusive);
  cudaMemcpyAsync(d_out, tmp, n * sizeof(T), cudaMemcpyDeviceToDevice, stream);
}

}  // namespace

void hierarchical_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  scan(d_in, d_out, n, kind, stream);
}
void hierarchical_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  scan(d_in, d_out, n, kind, stream);
}

}  // namespace scangrade::student
