// Slot 2: exclusive Blelloch scan of up to 2048 elements: one block of 1024 threads, thread t loads
// elements t and t + 1024 (coalesced) into a bank-conflict-free padded tree of 2048 leaves (zeros
// past n, so any n works).
#include "conflict_free.cuh"

namespace scangrade::student {
namespace {

template <typename T>
__global__ void blelloch_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T temp[cf::kPaddedItems];
  const unsigned a = threadIdx.x;
  const unsigned b = threadIdx.x + cf::kThreads;
  temp[cf::padded(a)] = a < n ? in[a] : T(0);
  temp[cf::padded(b)] = b < n ? in[b] : T(0);
  cf::blelloch_tile(temp);
  if (a < n) out[a] = temp[cf::padded(a)];
  if (b < n) out[b] = temp[cf::padded(b)];
}

template <typename T>
void blelloch(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kBlellochMaxN) throw std::invalid_argument("blelloch_exclusive: n > 2048");
  blelloch_kernel<T><<<1, cf::kThreads, 0, stream>>>(d_in, d_out, n);
  cf::check(cudaGetLastError(), "blelloch_kernel");
}

}  // namespace

void blelloch_exclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}
void blelloch_exclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
