// Device-side check of a timed output (output_check.h).
#include "output_check.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <cub/device/device_scan.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/tabulate_output_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "fresh_input.h"

#include "scangrade/check.h"  // kCanaryBits
#include "scangrade/tolerance.h"

namespace scangrade::grader {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned long long kNone = std::numeric_limits<unsigned long long>::max();

template <typename T>
__global__ void first_outside_kernel(const T* out, const T* lo, const T* hi, std::size_t n, unsigned long long* first) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const T v = out[i];
    if (!(v >= lo[i] && v <= hi[i])) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string("checking a timed output: ") + what + ": " + cudaGetErrorString(err));
}

/// A prefix's float64 sum, the sum of its terms' magnitudes and how many of them are not integers.
struct Prefix {
  double sum, abs_sum;
  unsigned long long non_integers;
};

struct PrefixOf {
  __device__ Prefix operator()(float x) const {
    const double v = x;
    return {v, fabs(v), nearbyint(v) == v ? 0ull : 1ull};
  }
};

struct AddPrefixes {
  __device__ Prefix operator()(const Prefix& a, const Prefix& b) const {
    return {a.sum + b.sum, a.abs_sum + b.abs_sum, a.non_integers + b.non_integers};
  }
};

__global__ void float_band_kernel(const Prefix* prefix, std::size_t n, bool inclusive, float* lo, float* hi) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const Prefix p = prefix[i];
    const double tol = tolerance::bound(inclusive ? i + 1 : i, p.abs_sum, p.non_integers == 0);
    lo[i] = nextafterf(static_cast<float>(p.sum - tol), -INFINITY);
    hi[i] = nextafterf(static_cast<float>(p.sum + tol), INFINITY);
  }
}

template <typename T>
__global__ void generate_kernel(InputDraw<T> draw, T* in, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    in[i] = draw(i);
}

/// A fresh float input's terms as the band's scan reads them: drawn again from the seed, widened.
struct DrawnValue {
  InputDraw<float> draw;
  __device__ double operator()(std::size_t i) const { return draw(i); }
};

/// The fresh band's scan output: float64 prefix sum i becomes the band's ends at i, by the rule of
/// float_band_kernel with the magnitude sum bounded from the generator (fresh_abs_sum_bound) and
/// the kind's integer property known in advance (integer_values).
struct WriteFreshFloatBand {
  float* lo;
  float* hi;
  bool inclusive;
  ValueKind values;
  __device__ void operator()(std::ptrdiff_t at, double sum) const {
    const std::size_t i = static_cast<std::size_t>(at), terms = inclusive ? i + 1 : i;
    const double tol = tolerance::bound(terms, fresh_abs_sum_bound(values, terms), integer_values(values));
    lo[i] = nextafterf(static_cast<float>(sum - tol), -INFINITY);
    hi[i] = nextafterf(static_cast<float>(sum + tol), INFINITY);
  }
};

struct Widen {
  __device__ long long operator()(std::int32_t x) const { return x; }
};

/// Guards, input and the flag that any of the checks below failed (bit 0) or an int32 sum left the
/// int32 range (bit 1).
__global__ void guards_and_input_kernel(const std::uint32_t* zone, std::size_t n, std::size_t guard,
                                        const std::uint32_t* in, const std::uint32_t* pristine, unsigned* flags) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t count = n > 2 * guard ? n : 2 * guard;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    if (i < 2 * guard && zone[i < guard ? i : n + i] != kCanaryBits) atomicOr(flags, 1u);
    if (i < n && in[i] != pristine[i]) atomicOr(flags, 1u);
  }
}

__global__ void int_output_kernel(const std::int32_t* out, const long long* sums, std::size_t n, unsigned* flags) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const long long s = sums[i];
    if (s > INT32_MAX || s < INT32_MIN) atomicOr(flags, 2u);
    else if (out[i] != static_cast<std::int32_t>(s)) atomicOr(flags, 1u);
  }
}

__global__ void float_output_kernel(const float* out, const Prefix* prefix, std::size_t n, bool inclusive,
                                    unsigned* flags) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const Prefix p = prefix[i];
    const double got = out[i];
    const double tol = tolerance::bound(inclusive ? i + 1 : i, p.abs_sum, p.non_integers == 0);
    if (!(isfinite(got) && fabs(got - p.sum) <= tol)) atomicOr(flags, 1u);
  }
}

__global__ void fill_kernel(std::uint32_t* p, std::size_t count, std::uint32_t value) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    p[i] = value;
}

/// Device scratch for one call. Up to kKeptScratch bytes it comes from memory this process keeps
/// for the next call (one piece per use): allocating and freeing on every case would take a driver
/// lock that every process on the GPU shares, and cudaFree waits for the device. Larger pieces
/// (the few large cases) are allocated for the call and freed however it ends.
enum class Use { Flag, Values, Temp };
constexpr std::size_t kKeptScratch = std::size_t{64} << 20;

struct Scratch {
  void* p = nullptr;
  bool own = false;
  Scratch(Use use, std::size_t bytes) {
    if (bytes == 0) bytes = 1;
    if (bytes > kKeptScratch) {
      check(cudaMalloc(&p, bytes), "allocating the check's scratch");
      own = true;
      return;
    }
    struct Kept {
      void* p = nullptr;
      std::size_t bytes = 0;
    };
    thread_local Kept kept[3];
    Kept& k = kept[static_cast<int>(use)];
    if (k.bytes < bytes) {
      if (k.p) cudaFree(k.p);
      k = Kept{};
      const std::size_t grown = std::min(kKeptScratch, std::max(bytes, std::size_t{1} << 20));
      check(cudaMalloc(&k.p, grown), "allocating the check's scratch");
      k.bytes = grown;
    }
    p = k.p;
  }
  ~Scratch() {
    if (!own) return;
    cudaDeviceSynchronize();  // the work queued on it is done before it goes back to the driver
    cudaFree(p);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

unsigned grid_for(std::size_t n) {
  const std::size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
}

/// One CUB scan (inclusive or exclusive from `init`) queued on `stream`, its temporary storage
/// sized here (the caller waits for the stream before it reads anything back).
template <typename In, typename Out, typename Op, typename Init>
void device_scan(In in, Out out, std::size_t n, bool inclusive, Op op, Init init, cudaStream_t stream) {
  const auto num = static_cast<std::int64_t>(n);
  const auto run = [&](void* temp, std::size_t& bytes) {
    return inclusive ? cub::DeviceScan::InclusiveScan(temp, bytes, in, out, op, num, stream)
                     : cub::DeviceScan::ExclusiveScan(temp, bytes, in, out, op, init, num, stream);
  };
  std::size_t bytes = 0;
  check(run(nullptr, bytes), "sizing the band's scan");
  Scratch temp(Use::Temp, bytes);
  check(run(temp.p, bytes), "the band's scan");
}

}  // namespace

template <typename T>
std::optional<std::size_t> first_outside(const T* d_out, const T* d_lo, const T* d_hi, std::size_t n,
                                         unsigned long long* d_first, cudaStream_t stream) {
  if (n == 0) return std::nullopt;
  unsigned long long first = kNone;
  check(cudaMemcpyAsync(d_first, &first, sizeof first, cudaMemcpyHostToDevice, stream), "resetting the index");
  first_outside_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
      d_out, d_lo, d_hi, n, d_first);
  check(cudaGetLastError(), "launching the check");
  check(cudaMemcpyAsync(&first, d_first, sizeof first, cudaMemcpyDeviceToHost, stream), "reading the index");
  check(cudaStreamSynchronize(stream), "waiting for the check");
  if (first == kNone) return std::nullopt;
  return static_cast<std::size_t>(first);
}

template <>
void acceptance_band_on_device<std::int32_t>(const std::int32_t* d_in, std::size_t n, ScanKind kind,
                                             std::int32_t* d_lo, std::int32_t* d_hi, cudaStream_t stream) {
  if (n == 0) return;
  // exact: the suites' int32 cases stay in range (the oracle checked it in the functional run)
  device_scan(d_in, d_lo, n, kind == ScanKind::Inclusive, cuda::std::plus<std::int32_t>{}, std::int32_t{0}, stream);
  check(cudaMemcpyAsync(d_hi, d_lo, n * sizeof(std::int32_t), cudaMemcpyDeviceToDevice, stream), "copying the band");
  check(cudaStreamSynchronize(stream), "waiting for the band");
}

template <>
void acceptance_band_on_device<float>(const float* d_in, std::size_t n, ScanKind kind, float* d_lo, float* d_hi,
                                      cudaStream_t stream) {
  if (n == 0) return;
  Scratch prefix(Use::Values, n * sizeof(Prefix));
  auto* p = static_cast<Prefix*>(prefix.p);
  const bool inclusive = kind == ScanKind::Inclusive;
  device_scan(thrust::make_transform_iterator(d_in, PrefixOf{}), p, n, inclusive, AddPrefixes{}, Prefix{0.0, 0.0, 0ull},
              stream);
  float_band_kernel<<<grid_for(n), kThreads, 0, stream>>>(p, n, inclusive, d_lo, d_hi);
  check(cudaGetLastError(), "launching the band kernel");
  check(cudaStreamSynchronize(stream), "waiting for the band");
}

template <>
void fresh_input_and_band_on_device<std::int32_t>(ValueKind values, std::uint64_t seed, std::size_t n, ScanKind kind,
                                                  std::int32_t* d_in, std::int32_t* d_lo, std::int32_t*,
                                                  cudaStream_t stream) {
  if (n == 0) return;
  const InputDraw<std::int32_t> draw{values, seed, n};
  generate_kernel<std::int32_t><<<grid_for(n), kThreads, 0, stream>>>(draw, d_in, n);
  check(cudaGetLastError(), "launching the input generator");
  // exact, wrapping as every int32 scan does (fresh `random` sums stay thousands of standard
  // deviations inside the range; `large` keeps every prefix inside it by construction)
  device_scan(thrust::make_transform_iterator(thrust::counting_iterator<std::size_t>(0), draw), d_lo, n,
              kind == ScanKind::Inclusive, cuda::std::plus<std::int32_t>{}, std::int32_t{0}, stream);
  check(cudaStreamSynchronize(stream), "waiting for the fresh input and its band");
}

template <>
void fresh_input_and_band_on_device<float>(ValueKind values, std::uint64_t seed, std::size_t n, ScanKind kind,
                                           float* d_in, float* d_lo, float* d_hi, cudaStream_t stream) {
  if (n == 0) return;
  const InputDraw<float> draw{values, seed, n};
  generate_kernel<float><<<grid_for(n), kThreads, 0, stream>>>(draw, d_in, n);
  check(cudaGetLastError(), "launching the input generator");
  const bool inclusive = kind == ScanKind::Inclusive;
  // one float64 sum per element (CUB's single-pass scan of an 8-byte value), not the three-value
  // prefix of acceptance_band_on_device: the magnitude sum and the integer flag come from the kind
  device_scan(thrust::make_transform_iterator(thrust::counting_iterator<std::size_t>(0), DrawnValue{draw}),
              thrust::make_tabulate_output_iterator(WriteFreshFloatBand{d_lo, d_hi, inclusive, values}), n,
              inclusive, cuda::std::plus<double>{}, 0.0, stream);
  check(cudaStreamSynchronize(stream), "waiting for the fresh input and its band");
}

template <typename T>
bool verified_on_device(const T* zone, std::size_t guard, const T* in, const T* pristine, std::size_t n, ScanKind kind,
                        cudaStream_t stream) {
  Scratch flag(Use::Flag, sizeof(unsigned));
  auto* flags = static_cast<unsigned*>(flag.p);
  check(cudaMemsetAsync(flags, 0, sizeof(unsigned), stream), "clearing the check's flag");
  const auto* words = reinterpret_cast<const std::uint32_t*>(zone);
  guards_and_input_kernel<<<grid_for(n > 2 * guard ? n : 2 * guard), kThreads, 0, stream>>>(
      words, n, guard, reinterpret_cast<const std::uint32_t*>(in), reinterpret_cast<const std::uint32_t*>(pristine),
      flags);
  check(cudaGetLastError(), "launching the guard and input check");
  const bool inclusive = kind == ScanKind::Inclusive;
  if (n > 0) {
    if constexpr (std::is_same_v<T, float>) {
      Scratch prefix(Use::Values, n * sizeof(Prefix));
      auto* p = static_cast<Prefix*>(prefix.p);
      device_scan(thrust::make_transform_iterator(pristine, PrefixOf{}), p, n, inclusive, AddPrefixes{},
                  Prefix{0.0, 0.0, 0ull}, stream);
      float_output_kernel<<<grid_for(n), kThreads, 0, stream>>>(zone + guard, p, n, inclusive, flags);
      check(cudaGetLastError(), "launching the output check");
    } else {
      Scratch sums(Use::Values, n * sizeof(long long));
      auto* s = static_cast<long long*>(sums.p);
      device_scan(thrust::make_transform_iterator(pristine, Widen{}), s, n, inclusive, cuda::std::plus<long long>{},
                  0ll, stream);
      int_output_kernel<<<grid_for(n), kThreads, 0, stream>>>(zone + guard, s, n, flags);
      check(cudaGetLastError(), "launching the output check");
    }
  }
  unsigned found = 0;
  check(cudaMemcpyAsync(&found, flags, sizeof found, cudaMemcpyDeviceToHost, stream), "reading the check's flag");
  check(cudaStreamSynchronize(stream), "waiting for the check");
  return found == 0;
}

void fill_words(void* p, std::size_t count, std::uint32_t value, cudaStream_t stream) {
  if (count == 0) return;
  fill_kernel<<<grid_for(count), kThreads, 0, stream>>>(static_cast<std::uint32_t*>(p), count, value);
  check(cudaGetLastError(), "launching the fill");
}

template bool verified_on_device<std::int32_t>(const std::int32_t*, std::size_t, const std::int32_t*,
                                               const std::int32_t*, std::size_t, ScanKind, cudaStream_t);
template bool verified_on_device<float>(const float*, std::size_t, const float*, const float*, std::size_t, ScanKind,
                                        cudaStream_t);

template std::optional<std::size_t> first_outside<std::int32_t>(const std::int32_t*, const std::int32_t*,
                                                                const std::int32_t*, std::size_t, unsigned long long*,
                                                                cudaStream_t);
template std::optional<std::size_t> first_outside<float>(const float*, const float*, const float*, std::size_t,
                                                         unsigned long long*, cudaStream_t);

}  // namespace scangrade::grader
