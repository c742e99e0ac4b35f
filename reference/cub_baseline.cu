// Speed baseline: CUB's DeviceScan (the only place CUB is used in reference/).
#include <cub/device/device_scan.cuh>

#include "host_utils.h"
#include "reference.h"

namespace scangrade::baseline {
namespace {

namespace detail = scangrade::reference::detail;

template <typename T>
void launch_cub_scan(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  const auto scan = [&](void* temp, std::size_t& bytes) {
    return kind == ScanKind::Inclusive ? cub::DeviceScan::InclusiveSum(temp, bytes, d_in, d_out, n, stream)
                                       : cub::DeviceScan::ExclusiveSum(temp, bytes, d_in, d_out, n, stream);
  };
  std::size_t bytes = 0;
  detail::check(scan(nullptr, bytes), "cub::DeviceScan (temp size)");
  detail::StreamBuffer temp(bytes, stream);
  detail::check(scan(temp.as<void>(), bytes), "cub::DeviceScan");
}

}  // namespace

void cub_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  launch_cub_scan(d_in, d_out, n, kind, stream);
}
void cub_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  launch_cub_scan(d_in, d_out, n, kind, stream);
}

}  // namespace scangrade::baseline
