// Hierarchical slot that hands the whole scan to Thrust (values are right, and fast).
// BUG: the assignment forbids library scans; thrust::inclusive_scan/exclusive_scan do all the work.
#include "scangrade/student_api.h"

#include <thrust/execution_policy.h>
#include <thrust/scan.h>

namespace scangrade::student {
namespace {

template <typename T>
void hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  if (kind == ScanKind::Inclusive)
    thrust::inclusive_scan(thrust::cuda::par.on(stream), d_in, d_in + n, d_out);
  else
    thrust::exclusive_scan(thrust::cuda::par.on(stream), d_in, d_in + n, d_out, T(0));
}

}  // namespace

void hierarchical_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, ScanKind kind,
                       cudaStream_t stream) {
  hierarchical(d_in, d_out, n, kind, stream);
}
void hierarchical_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  hierarchical(d_in, d_out, n, kind, stream);
}

}  // namespace scangrade::student
