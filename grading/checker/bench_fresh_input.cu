// scangrade_bench_fresh_input: what a timed repetition's preparation costs the checker on this GPU
// (not part of any time the grader reports): fresh_input_and_band_on_device (output_check.h: the
// input drawn from a new seed and its acceptance band), next to the restore it replaced (a
// device-to-device copy of the input) and a copy of 2 x the input's bytes. One JSON object per line:
//   {"n", "dtype", "fresh_and_band_ms", "restore_ms", "copy_2x_ms", "fresh_over_restore"}
// Medians of 20 calls each, CUDA events around each, after 3 warm-up calls.
//   scangrade_bench_fresh_input [--n 16777216,67108864,...]
// Expected from the traffic alone: int32 writes the input and the exact scan (8 bytes per element,
// the restore's 8), float the input and both band ends (12 bytes per element); the scan draws the
// values again from the seed rather than reading them.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime.h>

#include "output_check.h"

namespace {

using scangrade::ScanKind;
using scangrade::ValueKind;

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    std::fprintf(stderr, "scangrade_bench_fresh_input: %s: %s\n", what, cudaGetErrorString(err));
    std::exit(3);
  }
}

template <typename F>
double median_ms(F&& call) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<float> ms;
  for (int i = 0; i < 23; ++i) {
    check(cudaDeviceSynchronize(), "synchronizing");
    check(cudaEventRecord(start, nullptr), "cudaEventRecord");
    call(static_cast<std::uint64_t>(i) * 0x9e3779b97f4a7c15ull + 1);
    check(cudaEventRecord(stop, nullptr), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "a call");
    float t = 0;
    check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    if (i >= 3) ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2.0;
}

template <typename T>
void row(std::size_t n, const char* dtype) {
  const std::size_t bytes = n * sizeof(T);
  T *in = nullptr, *lo = nullptr, *hi = nullptr, *pristine = nullptr, *wide = nullptr;
  for (T** p : {&in, &lo, &hi, &pristine}) check(cudaMalloc(p, bytes), "cudaMalloc");
  check(cudaMalloc(&wide, 2 * bytes), "cudaMalloc");
  check(cudaMemset(pristine, 0, bytes), "cudaMemset");
  check(cudaMemset(wide, 0, 2 * bytes), "cudaMemset");
  const double fresh = median_ms([&](std::uint64_t seed) {
    scangrade::grader::fresh_input_and_band_on_device<T>(ValueKind::Random, seed, n, ScanKind::Inclusive, in, lo,
                                                         std::is_same_v<T, float> ? hi : lo, nullptr);
  });
  const double restore = median_ms([&](std::uint64_t) {
    check(cudaMemcpyAsync(in, pristine, bytes, cudaMemcpyDeviceToDevice, nullptr), "the restore");
  });
  const double copy2 = median_ms([&](std::uint64_t) {
    check(cudaMemcpyAsync(lo, wide, bytes, cudaMemcpyDeviceToDevice, nullptr), "the copy");
    check(cudaMemcpyAsync(hi, wide + n, bytes, cudaMemcpyDeviceToDevice, nullptr), "the copy");
  });
  std::printf(
      "{\"n\": %zu, \"dtype\": \"%s\", \"fresh_and_band_ms\": %.4f, \"restore_ms\": %.4f, \"copy_2x_ms\": %.4f, "
      "\"fresh_over_restore\": %.2f}\n",
      n, dtype, fresh, restore, copy2, restore > 0 ? fresh / restore : 0.0);
  std::fflush(stdout);
  for (T* p : {in, lo, hi, pristine, wide}) cudaFree(p);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes = {std::size_t{1} << 20, std::size_t{1} << 24, std::size_t{1} << 26};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--n" && i + 1 < argc) {
      sizes.clear();
      std::stringstream list(argv[++i]);
      for (std::string part; std::getline(list, part, ',');)
        if (!part.empty()) sizes.push_back(std::stoull(part));
    } else {
      std::fprintf(stderr, "usage: %s [--n N,N,...]\n  What a timed repetition's fresh input and band cost.\n", argv[0]);
      return arg == "--help" || arg == "-h" ? 0 : 2;
    }
  }
  for (const std::size_t n : sizes) {
    row<std::int32_t>(n, "int32");
    row<float>(n, "float32");
  }
  return 0;
}
