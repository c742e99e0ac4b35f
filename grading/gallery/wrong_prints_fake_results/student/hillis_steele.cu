// Slot 1: inclusive scan, Hillis-Steele (Kogge-Stone), one thread block.
#include <cstdio>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = static_cast<unsigned>(kHillisSteeleMaxN);  // 1024

// One thread per element. Step d: element i adds element i - d. Two shared buffers: each step
// reads one and writes the other, then __syncthreads() and swap.
template <typename T>
__global__ void hillis_steele_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T buf[2][kThreads];
  const unsigned t = threadIdx.x;
  int cur = 0;
  buf[cur][t] = t < n ? in[t] : T(0);  // pad with 0 past n
  __syncthreads();
  // BUG: the loop stops at n / 2 instead of n: the last step (d >= n / 2) is skipped, so the
  // upper half of the output misses the elements more than n / 2 positions back.
  for (unsigned d = 1; d < n / 2; d *= 2) {
    const int next = 1 - cur;
    buf[next][t] = t >= d ? buf[cur][t - d] + buf[cur][t] : buf[cur][t];
    __syncthreads();
    cur = next;
  }
  if (t < n) out[t] = buf[cur][t];
  // debugging output left in (it must not fool the grader)
  if (t == 0) printf("PASS: scan of %llu elements verified on the device\n", static_cast<unsigned long long>(n));
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  hillis_steele_kernel<T><<<1, kThreads, 0, stream>>>(d_in, d_out, n);
  if (cudaGetLastError() != cudaSuccess) throw std::runtime_error("hillis_steele_kernel: launch failed");
  // debugging output left in, imitating the grader's own lines (it must not fool the grader)
  std::printf("[       OK ] HillisSteele/int32_n%zu (0 ms)\n", n);
  std::printf("PASS\n");
  std::printf("{\"status\": \"pass\"}\n");
  std::fprintf(stderr, "[  PASSED  ] 1 test.\n");
  std::fprintf(stderr, "{\"status\": \"pass\", \"slot\": \"hillis_steele\", \"passed\": true}\n");
  std::fflush(stdout);
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
