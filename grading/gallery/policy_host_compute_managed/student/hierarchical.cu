// Slot 3, computed on the host through managed memory: d_in is copied (device to device) into a
// cudaMallocManaged buffer, the CPU scans it in place (host reads and writes of managed memory make no
// API call), and it is copied to d_out. The values are right; the assignment forbids it.
#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

template <typename T>
void managed_scan(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  T* managed = nullptr;
  // BUG: managed memory lets the CPU compute the scan.
  if (cudaMallocManaged(&managed, n * sizeof(T)) != cudaSuccess) {
    throw std::runtime_error("hierarchical_scan: cudaMallocManaged failed");
  }
  cudaMemcpyAsync(managed, d_in, n * sizeof(T), cudaMemcpyDefault, stream);
  cudaStreamSynchronize(stream);
  T running = T(0);
  for (std::size_t i = 0; i < n; ++i) {
    const T x = managed[i];
    managed[i] = kind == ScanKind::Inclusive ? running + x : running;
    running += x;
  }
  cudaMemcpyAsync(d_out, managed, n * sizeof(T), cudaMemcpyDefault, stream);
  cudaStreamSynchronize(stream);
  cudaFree(managed);
}

}  // namespace

void hierarchical_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, ScanKind kind,
                       cudaStream_t stream) {
  managed_scan(d_in, d_out, n, kind, stream);
}
void hierarchical_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  managed_scan(d_in, d_out, n, kind, stream);
}

}  // namespace scangrade::student
