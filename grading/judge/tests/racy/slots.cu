// A known-wrong submission for the grader's GPU check: Hillis-Steele updated IN PLACE in shared memory
// (no double buffer, no barrier between the read of s[i - d] and the write of s[i]). The GPU usually
// gives the right answer, so the functional run passes; only compute-sanitizer racecheck sees it.
// Expected verdict with a "sanitize": ["racecheck"] case: race, naming racy_hillis_steele and this
// file's line of the update. The other slots are not implemented.
#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

template <typename T>
__global__ void racy_hillis_steele(const T* in, T* out, std::size_t n) {
  __shared__ T s[kHillisSteeleMaxN];
  const unsigned i = threadIdx.x;
  s[i] = i < n ? in[i] : T(0);
  __syncthreads();
  for (unsigned d = 1; d < kHillisSteeleMaxN; d <<= 1) {
    if (i >= d) s[i] += s[i - d];  // the race: another thread may already have updated s[i - d]
    __syncthreads();
  }
  if (i < n) out[i] = s[i];
}

template <typename T>
void launch(const T* in, T* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  racy_hillis_steele<T><<<1, kHillisSteeleMaxN, 0, stream>>>(in, out, n);
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t s) { launch(in, out, n, s); }
void hillis_steele_inclusive(const float* in, float* out, std::size_t n, cudaStream_t s) { launch(in, out, n, s); }
void blelloch_exclusive(const std::int32_t*, std::int32_t*, std::size_t, cudaStream_t) { not_implemented("blelloch_exclusive"); }
void blelloch_exclusive(const float*, float*, std::size_t, cudaStream_t) { not_implemented("blelloch_exclusive"); }
void hierarchical_scan(const std::int32_t*, std::int32_t*, std::size_t, ScanKind, cudaStream_t) { not_implemented("hierarchical_scan"); }
void hierarchical_scan(const float*, float*, std::size_t, ScanKind, cudaStream_t) { not_implemented("hierarchical_scan"); }
void single_pass_inclusive(const std::int32_t*, std::int32_t*, std::size_t, cudaStream_t) { not_implemented("single_pass_inclusive"); }
void single_pass_inclusive(const float*, float*, std::size_t, cudaStream_t) { not_implemented("single_pass_inclusive"); }

}  // namespace scangrade::student
