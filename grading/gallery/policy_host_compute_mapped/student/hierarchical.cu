// Slot 3, computed on the host through mapped page-locked memory: a kernel copies d_in into a
// cudaHostAllocMapped buffer (through its device pointer), the CPU scans the buffer, a kernel copies it
// to d_out. No cudaMemcpy at all; the values are right; the assignment forbids it.
#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

template <typename T>
__global__ void copy_kernel(const T* from, T* to, std::size_t n) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    to[i] = from[i];
  }
}

template <typename T>
void mapped_scan(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  T* host = nullptr;
  T* mapped = nullptr;
  // BUG: mapped host memory lets the CPU compute the scan (cudaHostAllocMapped + cudaHostGetDevicePointer).
  if (cudaHostAlloc(&host, n * sizeof(T), cudaHostAllocMapped) != cudaSuccess ||
      cudaHostGetDevicePointer(&mapped, host, 0) != cudaSuccess) {
    throw std::runtime_error("hierarchical_scan: mapped host memory unavailable");
  }
  const unsigned blocks = unsigned(n < 256 * 1024 ? (n + 255) / 256 : 1024);
  copy_kernel<T><<<blocks, 256, 0, stream>>>(d_in, mapped, n);
  cudaStreamSynchronize(stream);
  T running = T(0);
  for (std::size_t i = 0; i < n; ++i) {
    const T x = host[i];
    host[i] = kind == ScanKind::Inclusive ? running + x : running;
    running += x;
  }
  copy_kernel<T><<<blocks, 256, 0, stream>>>(mapped, d_out, n);
  cudaStreamSynchronize(stream);
  cudaFreeHost(host);
}

}  // namespace

void hierarchical_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, ScanKind kind,
                       cudaStream_t stream) {
  mapped_scan(d_in, d_out, n, kind, stream);
}
void hierarchical_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  mapped_scan(d_in, d_out, n, kind, stream);
}

}  // namespace scangrade::student
