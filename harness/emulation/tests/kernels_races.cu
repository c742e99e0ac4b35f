// Test kernels: data races that only the thread order exposes.
#include "test_kernels.h"

namespace emu_test {
namespace {

// Hillis-Steele in place: reads s[t - offset] while thread t - offset may already have updated it
// in the same step. A race, whatever the GPU happens to print.
__global__ void hillis_steele_in_place_kernel(const int* in, int* out, int n) {
  __shared__ int s[1024];
  int t = threadIdx.x;
  s[t] = t < n ? in[t] : 0;
  __syncthreads();
  for (int offset = 1; offset < n; offset *= 2) {
    if (t >= offset) s[t] += s[t - offset];
    __syncthreads();
  }
  if (t < n) out[t] = s[t];
}

// the same scan, double buffered: every step reads one buffer and writes the other
__global__ void hillis_steele_double_buffered_kernel(const int* in, int* out, int n) {
  __shared__ int buf[2][1024];
  int t = threadIdx.x;
  int src = 0;
  buf[src][t] = t < n ? in[t] : 0;
  __syncthreads();
  for (int offset = 1; offset < n; offset *= 2) {
    int v = buf[src][t];
    if (t >= offset) v += buf[src][t - offset];
    buf[1 - src][t] = v;
    src = 1 - src;
    __syncthreads();
  }
  if (t < n) out[t] = buf[src][t];
}

// the classic warp-synchronous tail of a reduction: relies on lock-step execution (no __syncwarp)
__global__ void warp_reduce_kernel(const int* in, int* out) {
  __shared__ int s[64];
  int t = threadIdx.x;
  s[t] = in[t];
  __syncthreads();
  if (t < 32) {
    volatile int* v = s;
    v[t] += v[t + 32];
    v[t] += v[t + 16];
    v[t] += v[t + 8];
    v[t] += v[t + 4];
    v[t] += v[t + 2];
    v[t] += v[t + 1];
  }
  if (t == 0) *out = s[0];
}

// a warp-synchronous inclusive scan of each warp's 32 elements through volatile shared memory, no
// __syncwarp: right when a warp's lanes run together, as on a GPU
__global__ void warp_scan_kernel(const int* in, int* out, int) {
  __shared__ int s[1024];
  int t = threadIdx.x, lane = t & 31;
  volatile int* v = s;
  v[t] = in[t];
  if (lane >= 1) v[t] += v[t - 1];
  if (lane >= 2) v[t] += v[t - 2];
  if (lane >= 4) v[t] += v[t - 4];
  if (lane >= 8) v[t] += v[t - 8];
  if (lane >= 16) v[t] += v[t - 16];
  out[t] = v[t];
}

// an in-place Hillis-Steele scan of the block through volatile shared memory with one barrier a step:
// a race between warps (a warp may read what another one already wrote in the same step)
__global__ void volatile_in_place_kernel(const int* in, int* out, int n) {
  __shared__ int s[1024];
  int t = threadIdx.x;
  volatile int* v = s;
  v[t] = in[t];
  __syncthreads();
  for (int d = 1; d < n; d *= 2) {
    if (t >= d) v[t] += v[t - d];
    __syncthreads();
  }
  out[t] = v[t];
}

// A single-pass scan over tiles of 256 taken by an atomic ticket, whose thread 0 reads the tile's
// total (s[255], written by thread 255) with no barrier between: racecheck reports it on a GPU. The
// ticket is thread 0's atomic before the first barrier; the thread order restarts after each barrier,
// so in the forward order thread 0 reads s[255] before thread 255 wrote its sum there.
__global__ void ticket_race_kernel(const int* in, int* out, int n, unsigned* ticket, volatile int* flags,
                                   volatile int* inclusive) {
  __shared__ unsigned s_tile;
  __shared__ int s[256];
  __shared__ int s_prefix;
  const int t = threadIdx.x;
  if (t == 0) s_tile = atomicAdd(ticket, 1u);
  __syncthreads();
  const unsigned tile = s_tile;
  const int i = static_cast<int>(tile) * 256 + t;
  s[t] = i < n ? in[i] : 0;
  __syncthreads();
  int v = 0;
  for (int k = 0; k <= t; ++k) v += s[k];
  __syncthreads();
  s[t] = v;
  if (t == 0) {  // BUG: no __syncthreads() before reading s[255]
    const int total = s[255];
    int prefix = 0;
    if (tile > 0) {
      while (flags[tile - 1] == 0) {
      }
      prefix = inclusive[tile - 1];
    }
    inclusive[tile] = prefix + total;
    __threadfence();
    flags[tile] = 1;
    s_prefix = prefix;
  }
  __syncthreads();
  if (i < n) out[i] = v + s_prefix;
}

std::vector<int> run_scan(void (*kernel)(const int*, int*, int), const std::vector<int>& in) {
  int n = static_cast<int>(in.size());
  int *d_in, *d_out;
  cudaMalloc(&d_in, n * sizeof(int));
  cudaMalloc(&d_out, n * sizeof(int));
  cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice);
  kernel<<<1, n>>>(d_in, d_out, n);  // a kernel through a function pointer
  std::vector<int> h(n);
  cudaMemcpy(h.data(), d_out, n * sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(d_in);
  cudaFree(d_out);
  return h;
}

}  // namespace

std::vector<int> hillis_steele_in_place(const std::vector<int>& in) {
  return run_scan(hillis_steele_in_place_kernel, in);
}

std::vector<int> hillis_steele_double_buffered(const std::vector<int>& in) {
  return run_scan(hillis_steele_double_buffered_kernel, in);
}

std::vector<int> warp_scan_without_syncwarp(const std::vector<int>& in) { return run_scan(warp_scan_kernel, in); }
std::vector<int> volatile_in_place_scan(const std::vector<int>& in) { return run_scan(volatile_in_place_kernel, in); }

std::vector<int> ticket_race_scan(const std::vector<int>& in) {
  const int n = static_cast<int>(in.size());
  const int tiles = (n + 255) / 256;
  int *d_in, *d_out, *flags, *inclusive;
  unsigned* ticket;
  cudaMalloc(&d_in, n * sizeof(int));
  cudaMalloc(&d_out, n * sizeof(int));
  cudaMalloc(&flags, tiles * sizeof(int));
  cudaMalloc(&inclusive, tiles * sizeof(int));
  cudaMalloc(&ticket, sizeof(unsigned));
  cudaMemset(flags, 0, tiles * sizeof(int));
  cudaMemset(ticket, 0, sizeof(unsigned));
  cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice);
  ticket_race_kernel<<<tiles, 256>>>(d_in, d_out, n, ticket, flags, inclusive);
  std::vector<int> h(n);
  cudaMemcpy(h.data(), d_out, n * sizeof(int), cudaMemcpyDeviceToHost);
  for (void* p : {static_cast<void*>(d_in), static_cast<void*>(d_out), static_cast<void*>(flags),
                  static_cast<void*>(inclusive), static_cast<void*>(ticket)})
    cudaFree(p);
  return h;
}

int warp_reduce_without_syncwarp(const std::vector<int>& in) {
  int *d_in, *d_out;
  cudaMalloc(&d_in, 64 * sizeof(int));
  cudaMalloc(&d_out, sizeof(int));
  cudaMemcpy(d_in, in.data(), 64 * sizeof(int), cudaMemcpyHostToDevice);
  warp_reduce_kernel<<<1, 64>>>(d_in, d_out);
  int h = 0;
  cudaMemcpy(&h, d_out, sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(d_in);
  cudaFree(d_out);
  return h;
}

}  // namespace emu_test
