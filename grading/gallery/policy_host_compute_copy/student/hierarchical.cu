// Slot 3, computed on the host: copy d_in to the host, scan it there in a loop, copy the result back.
// The values are right; the assignment forbids it ("Compute on the GPU", student_api.h).
#include <vector>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

template <typename T>
void host_scan(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  std::vector<T> h(n);
  cudaStreamSynchronize(stream);  // d_in is ready
  // BUG: the data goes to the host (cudaMemcpy device->host), is scanned by a CPU loop, and comes back.
  cudaMemcpy(h.data(), d_in, n * sizeof(T), cudaMemcpyDeviceToHost);
  T running = T(0);
  for (std::size_t i = 0; i < n; ++i) {
    const T x = h[i];
    h[i] = kind == ScanKind::Inclusive ? running + x : running;
    running += x;
  }
  cudaMemcpy(d_out, h.data(), n * sizeof(T), cudaMemcpyHostToDevice);
}

}  // namespace

void hierarchical_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, ScanKind kind,
                       cudaStream_t stream) {
  host_scan(d_in, d_out, n, kind, stream);
}
void hierarchical_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  host_scan(d_in, d_out, n, kind, stream);
}

}  // namespace scangrade::student
