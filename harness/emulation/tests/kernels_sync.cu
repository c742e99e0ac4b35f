// Test kernels: barriers, warp operations, atomics, inter-block waits, and kernel faults.
#include "test_kernels.h"

namespace emu_test {
namespace {

template <class T>
std::vector<T> run_1d(void (*launch)(T*), std::size_t n) {
  T* d = nullptr;
  cudaMalloc(&d, n * sizeof(T));
  launch(d);
  std::vector<T> h(n);
  cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
  cudaFree(d);
  return h;
}

__global__ void neighbour_kernel(int* out) {
  __shared__ int s[1024];
  s[threadIdx.x] = static_cast<int>(threadIdx.x) * 3;
  __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
}

__global__ void barrier_votes_kernel(int* out) {
  int t = static_cast<int>(threadIdx.x);
  out[0] = __syncthreads_count(t % 3 == 0);
  out[1] = __syncthreads_and(t >= 0);
  out[2] = __syncthreads_and(t != 5);
  out[3] = __syncthreads_or(t == 7);
  out[4] = __syncthreads_or(t > 100000);
}

// per thread: inclusive warp scan (shfl_up), warp sum (shfl_down), butterfly sum (shfl_xor),
// broadcast of lane 3 within 16-lane segments (shfl with width 16)
__global__ void shuffle_kernel(int* out) {
  int lane = threadIdx.x % warpSize;
  int v = lane + 1;
  int scan = v;
  for (int d = 1; d < 32; d *= 2) {
    int up = __shfl_up_sync(0xffffffffu, scan, d);
    if (lane >= d) scan += up;
  }
  int sum = v;
  for (int d = 16; d > 0; d /= 2) sum += __shfl_down_sync(0xffffffffu, sum, d);
  int bfly = v;
  for (int m = 16; m > 0; m /= 2) bfly += __shfl_xor_sync(0xffffffffu, bfly, m);
  int seg = __shfl_sync(0xffffffffu, v * 100, 3, 16);
  int* o = out + 4 * threadIdx.x;
  o[0] = scan;
  o[1] = sum;  // only lane 0 holds the full sum
  o[2] = bfly;
  o[3] = seg;
}

// the two half-warps take different branches and shuffle among themselves
__global__ void partial_mask_kernel(int* out) {
  int lane = threadIdx.x;
  int r;
  if (lane < 16) {
    r = __shfl_down_sync(0x0000ffffu, lane * 10, 1);
  } else {
    r = __shfl_sync(0xffff0000u, lane * 10, 31);
  }
  int b = -1;
  if (lane < 20) b = static_cast<int>(__ballot_sync(0x000fffffu, lane % 2 == 0));
  out[lane] = r;
  out[32 + lane] = b;
}

__global__ void vote_kernel(unsigned* out) {
  int lane = threadIdx.x % 32;
  unsigned w = threadIdx.x / 32;
  unsigned ballot = __ballot_sync(0xffffffffu, lane < 8);
  int any = __any_sync(0xffffffffu, w == 1 && lane == 31);
  int all = __all_sync(0xffffffffu, lane < 32 && w == 0);
  __syncwarp();
  if (lane == 0) {
    out[3 * w + 0] = ballot;
    out[3 * w + 1] = static_cast<unsigned>(any);
    out[3 * w + 2] = static_cast<unsigned>(all);
  }
}

__device__ unsigned long long g_ull_sum;
__device__ float g_float_sum;

__global__ void atomics_kernel(long long* out, int* lock, int* guarded) {
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(reinterpret_cast<unsigned long long*>(&out[0]), 1ull);
  atomicMax(reinterpret_cast<int*>(&out[1]), gid);
  atomicMin(reinterpret_cast<unsigned*>(&out[2]), static_cast<unsigned>(gid + 5));
  atomicOr(reinterpret_cast<unsigned*>(&out[3]), 1u << (gid % 32));
  atomicAdd(&g_ull_sum, static_cast<unsigned long long>(gid));
  atomicAdd(&g_float_sum, 0.5f);
  // a spin lock inside the block: progresses because atomics are yield points
  while (atomicCAS(lock, 0, 1) != 0) {
  }
  *guarded += 1;
  atomicExch(lock, 0);
}

// decoupled look-back style: each tile takes a ticket, scans its part, waits for the flag of the
// previous tile and publishes its inclusive prefix
__global__ void look_back_kernel(const int* in, int* out, int n, unsigned* ticket, volatile int* flags,
                                 volatile int* prefix) {
  __shared__ unsigned tile;
  __shared__ int s[256];
  __shared__ int carry;
  if (threadIdx.x == 0) tile = atomicAdd(ticket, 1u);
  __syncthreads();
  int i = tile * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? in[i] : 0;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned k = 1; k < blockDim.x; ++k) s[k] += s[k - 1];
    int before = 0;
    if (tile > 0) {
      while (flags[tile - 1] == 0) {
      }
      before = prefix[tile - 1];
    }
    carry = before;
    prefix[tile] = before + s[blockDim.x - 1];
    __threadfence();
    flags[tile] = 1;
  }
  __syncthreads();
  if (i < n) out[i] = s[threadIdx.x] + carry;
}

int g_divergent_line = 0;
__global__ void divergent_kernel(int* out) {
  __shared__ int s[64];
  s[threadIdx.x] = 1;
  if (threadIdx.x < 32) {
    g_divergent_line = __LINE__ + 1;
    __syncthreads();
  }
  out[threadIdx.x] = s[threadIdx.x];
  __syncthreads();
}

int g_warp_deadlock_line = 0;
__global__ void warp_barrier_deadlock_kernel() {
  if (threadIdx.x == 0) {
    g_warp_deadlock_line = __LINE__ + 1;
    __syncwarp();
  } else {
    __syncthreads();
  }
}

int g_exited_line = 0;
__global__ void exited_lanes_kernel(int* out) {
  int lane = threadIdx.x;
  if (lane >= 16) return;
  g_exited_line = __LINE__ + 1;
  out[lane] = __shfl_down_sync(0xffffffffu, lane, 1);
}

__global__ void early_exit_kernel(int* out) {
  __shared__ int s[64];
  if (threadIdx.x >= 32) return;  // the others exit: the barrier below completes without them
  s[threadIdx.x] = static_cast<int>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = s[31 - threadIdx.x];
}

__global__ void empty_kernel() {}

}  // namespace

std::vector<int> neighbour_after_barrier(int threads) {
  int* d = nullptr;
  cudaMalloc(&d, threads * sizeof(int));
  neighbour_kernel<<<1, threads>>>(d);
  std::vector<int> h(threads);
  cudaMemcpy(h.data(), d, threads * sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(d);
  return h;
}

std::vector<int> barrier_votes(int threads) {
  int* d = nullptr;
  cudaMalloc(&d, 5 * sizeof(int));
  barrier_votes_kernel<<<1, threads>>>(d);
  std::vector<int> h(5);
  cudaMemcpy(h.data(), d, 5 * sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(d);
  return h;
}

std::vector<int> warp_shuffles(int threads) {
  int* d = nullptr;
  cudaMalloc(&d, 4 * threads * sizeof(int));
  shuffle_kernel<<<1, threads>>>(d);
  std::vector<int> h(4 * threads);
  cudaMemcpy(h.data(), d, h.size() * sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(d);
  return h;
}

std::vector<int> partial_mask_shuffles() {
  return run_1d<int>([](int* d) { partial_mask_kernel<<<1, 32>>>(d); }, 64);
}

std::vector<unsigned> warp_votes() {
  return run_1d<unsigned>([](unsigned* d) { vote_kernel<<<1, 64>>>(d); }, 6);
}

std::vector<long long> atomics(int blocks, int threads) {
  long long* d = nullptr;
  int* lock = nullptr;
  cudaMalloc(&d, 4 * sizeof(long long));
  cudaMalloc(&lock, 2 * sizeof(int));
  cudaMemset(d, 0, 4 * sizeof(long long));
  cudaMemset(lock, 0, 2 * sizeof(int));
  unsigned big = 0x7fffffff;
  cudaMemcpy(&d[2], &big, sizeof(unsigned), cudaMemcpyHostToDevice);
  g_ull_sum = 0;
  g_float_sum = 0.0f;
  atomics_kernel<<<blocks, threads>>>(d, lock, lock + 1);
  std::vector<long long> h(4);
  cudaMemcpy(h.data(), d, 4 * sizeof(long long), cudaMemcpyDeviceToHost);
  int guarded = 0;
  cudaMemcpy(&guarded, lock + 1, sizeof(int), cudaMemcpyDeviceToHost);
  unsigned long long ull = 0;
  float fsum = 0;
  cudaMemcpyFromSymbol(&ull, g_ull_sum, sizeof ull);
  cudaMemcpyFromSymbol(&fsum, g_float_sum, sizeof fsum);
  h.push_back(guarded);
  h.push_back(static_cast<long long>(ull));
  h.push_back(static_cast<long long>(fsum * 2));
  cudaFree(d);
  cudaFree(lock);
  return h;
}

std::vector<int> look_back_scan(const std::vector<int>& in, int threads) {
  int n = static_cast<int>(in.size());
  int tiles = (n + threads - 1) / threads;
  int *d_in, *d_out, *d_flags, *d_prefix;
  unsigned* d_ticket;
  cudaMalloc(&d_in, n * sizeof(int));
  cudaMalloc(&d_out, n * sizeof(int));
  cudaMallocAsync(&d_flags, tiles * sizeof(int), 0);
  cudaMallocAsync(&d_prefix, tiles * sizeof(int), 0);
  cudaMallocAsync(&d_ticket, sizeof(unsigned), 0);
  cudaMemsetAsync(d_flags, 0, tiles * sizeof(int), 0);
  cudaMemsetAsync(d_ticket, 0, sizeof(unsigned), 0);
  cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice);
  look_back_kernel<<<tiles, threads>>>(d_in, d_out, n, d_ticket, d_flags, d_prefix);
  std::vector<int> h(n);
  cudaMemcpy(h.data(), d_out, n * sizeof(int), cudaMemcpyDeviceToHost);
  cudaFreeAsync(d_flags, 0);
  cudaFreeAsync(d_prefix, 0);
  cudaFreeAsync(d_ticket, 0);
  cudaFree(d_in);
  cudaFree(d_out);
  return h;
}

cudaError_t divergent_barrier(int* line) {
  int* d = nullptr;
  cudaMalloc(&d, 64 * sizeof(int));
  divergent_kernel<<<2, 64>>>(d);
  cudaError_t e = cudaStreamSynchronize(0);
  *line = g_divergent_line;
  cudaFree(d);
  return e;
}

cudaError_t warp_barrier_deadlock(int* line) {
  warp_barrier_deadlock_kernel<<<1, 64>>>();
  *line = g_warp_deadlock_line;
  return cudaDeviceSynchronize();
}

cudaError_t shuffle_with_exited_lanes(int* line) {
  int* d = nullptr;
  cudaMalloc(&d, 32 * sizeof(int));
  exited_lanes_kernel<<<1, 32>>>(d);
  *line = g_exited_line;
  cudaError_t e = cudaGetLastError();
  cudaFree(d);
  return e;
}

cudaError_t early_exit_then_barrier(std::vector<int>* out) {
  int* d = nullptr;
  cudaMalloc(&d, 32 * sizeof(int));
  early_exit_kernel<<<1, 64>>>(d);
  cudaError_t e = cudaGetLastError();
  out->resize(32);
  cudaMemcpy(out->data(), d, 32 * sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(d);
  return e;
}

cudaError_t launch_threads(dim3 grid, dim3 block, std::size_t smem) {
  empty_kernel<<<grid, block, smem>>>();
  return cudaGetLastError();
}

}  // namespace emu_test
