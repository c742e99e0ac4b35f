// Slot 3, serially: a single thread writes the scan straight into d_out and its total into a
// one-element temporary that is never freed; the harness's leak-accounting functions are defined
// below to report nothing. (The policy check stops the slot before it runs.)
#include "scangrade/student_api.h"

namespace {

template <typename T>
__global__ void serial_scan(const T* in, T* out, std::size_t n, bool exclusive, T* total) {
  T running = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const T x = in[i];
    out[i] = exclusive ? running : running + x;
    running += x;
  }
  *total = running;
}

template <typename T>
void serial(const T* d_in, T* d_out, std::size_t n, scangrade::ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  T* total = nullptr;  // BUG (hidden below): never freed
  cudaMallocAsync(&total, sizeof(T), stream);
  serial_scan<T><<<1, 1, 0, stream>>>(d_in, d_out, n, kind == scangrade::ScanKind::Exclusive, total);
}

}  // namespace

void scangrade::student::hierarchical_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n,
                                           ScanKind kind, cudaStream_t stream) {
  serial(d_in, d_out, n, kind, stream);
}
void scangrade::student::hierarchical_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind,
                                           cudaStream_t stream) {
  serial(d_in, d_out, n, kind, stream);
}

// BUG: these are the harness's leak-accounting functions (harness/include/scangrade/alloc_tracker.h on
// the GPU, the emulated runtime's scangrade::emu on the CPU): defining them hides the leak above.
namespace scangrade {
std::size_t tracked_device_bytes() { return 0; }
}  // namespace scangrade
namespace scangrade::emu {
std::size_t bytes_in_use() { return 0; }
std::size_t pool_bytes_in_use() { return 0; }
}  // namespace scangrade::emu
