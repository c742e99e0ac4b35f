// Timing mode of the worker (worker_timing.h).
//
// Method, the same for the student, the reference, CUB and the copy:
//   * the pristine input stays on the device; before every repetition it is copied into d_in
//     (a fresh input each time, whatever the previous call did to its buffers);
//   * before every repetition the L2 cache is flushed: cudaMemsetAsync over a buffer of
//     2 x L2 size (nothing of the input or output is left in L2);
//   * before every call the output is poisoned (0xFF bytes: NaN, -1), and calls alternate between
//     two input/output address pairs, so that no call can find its result already in place;
//   * every call of the student's (warm-ups too) is checked on the device against the case's
//     acceptance band (check.h) before its time counts: a call that returned a remembered result
//     fails the case ("results must be computed on every call");
//   * 3 warm-up calls (module load, first-touch allocations, pool growth), not counted;
//   * each repetition: cudaDeviceSynchronize, CUDA event on the stream, the call, event, then
//     cudaDeviceSynchronize; the event time is the measurement. A host clock bounded by the two
//     cudaDeviceSynchronize calls is kept too: when its median exceeds the events' median by more
//     than 50% and 50 us, the call put work on other streams that the events do not bound, and
//     the host times are used instead (the method sentence says so);
//   * stop at >= 10 repetitions once (p75 - p25) / median <= 0.05, or at 200 repetitions, or
//     after 2 s for this implementation (at least one repetition always).
#include "worker_timing.h"

#ifdef SCANGRADE_WORKER_TIMING

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include <cuda_runtime.h>

#include "output_check.h"
#include "reference.h"
#include "scangrade/device_run.h"

namespace scangrade::grader {
namespace {

SCANGRADE_IMPLEMENTATION(reference_implementation, "reference", scangrade::reference)

constexpr int kWarmup = 3;
constexpr int kMinReps = 10;
constexpr int kMaxReps = 200;
constexpr double kMaxSpread = 0.05;
constexpr double kBudgetSeconds = 2.0;

constexpr const char* kSetup = "timing setup";

void setup(cudaError_t err, const char* what) { check_cuda(err, what, kSetup); }

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double spread_of(const std::vector<double>& v) {
  const double median = quantile(v, 0.5);
  return median > 0 ? (quantile(v, 0.75) - quantile(v, 0.25)) / median : 0.0;
}

struct Stats {
  double median_ms = 0, min_ms = 0, max_ms = 0, spread = 0;
  int reps = 0;
  bool host_clock = false;  // the host clock was used (work on other streams)
};

/// Everything the repetitions share: buffers, stream, events.
class Bench {
 public:
  Bench(std::size_t bytes, const void* input, bool on_device)
      : pristine_(bytes, kSetup),
        in_{DeviceBuffer(bytes, kSetup), DeviceBuffer(bytes, kSetup)},
        out_{DeviceBuffer(bytes, kSetup), DeviceBuffer(bytes, kSetup)},
        flush_(flush_bytes(), kSetup),
        first_(sizeof(unsigned long long), kSetup) {
    bytes_ = bytes;
    setup(cudaMemcpy(pristine_.get(), input, bytes, on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice),
          "copying the input");
    // (from pageable memory the copy may return before it landed; the non-blocking stream below
    // does not wait for the legacy stream)
    setup(cudaDeviceSynchronize(), "waiting for the input to land");
    setup(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    setup(cudaEventCreate(&start_), "cudaEventCreate");
    setup(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~Bench() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }
  std::size_t flush_size() const { return flush_bytes(); }
  unsigned long long* scratch() { return static_cast<unsigned long long*>(first_.get()); }

  /// Measures call(d_in, d_out, stream) with the method above. `student` marks failures as the
  /// student's; `outside(d_out, stream)` (when given) finds an output element outside its band.
  using Check = std::function<std::optional<std::size_t>(const void*, cudaStream_t)>;
  Stats measure(const std::function<void(const void*, void*, cudaStream_t)>& call, bool student, const Check& outside = {}) {
    std::vector<double> event_ms, host_ms;
    const auto begin = std::chrono::steady_clock::now();
    const auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    };
    for (int i = 0;; ++i) {
      // fresh input, poisoned output (at alternating addresses), flushed L2
      void* in = in_[i % 2].get();
      void* out = out_[i % 2].get();
      setup(cudaMemcpyAsync(in, pristine_.get(), bytes_, cudaMemcpyDeviceToDevice, stream_), "restoring the input");
      setup(cudaMemsetAsync(out, 0xff, bytes_, stream_), "poisoning the output");
      setup(cudaMemsetAsync(flush_.get(), i & 0xff, flush_bytes(), stream_), "flushing L2");
      setup(cudaDeviceSynchronize(), "synchronizing before the call");
      const auto host_start = std::chrono::steady_clock::now();
      setup(cudaEventRecord(start_, stream_), "cudaEventRecord");
      try {
        call(in, out, stream_);
      } catch (const std::exception& e) {
        fail(student, std::string("the call threw an exception: ") + e.what());
      } catch (...) {
        fail(student, "the call threw a non-standard exception");
      }
      cudaError_t err = cudaEventRecord(stop_, stream_);
      if (err == cudaSuccess) err = cudaDeviceSynchronize();
      if (err == cudaSuccess) err = cudaGetLastError();
      const auto host_stop = std::chrono::steady_clock::now();
      if (err != cudaSuccess)
        fail(student, std::string("CUDA error after the call: ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
      if (outside)
        if (const auto at = outside(out, stream_))
          throw WrongTimedOutput("call " + std::to_string(i + 1) + " (" + std::to_string(std::min(i, kWarmup)) +
                                 " warm-up and " + std::to_string(std::max(0, i - kWarmup)) +
                                 " timed calls before it) left element " + std::to_string(*at) +
                                 " outside the checked result");
      float ms = 0;
      setup(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
      if (i < kWarmup) continue;
      event_ms.push_back(ms);
      host_ms.push_back(std::chrono::duration<double, std::milli>(host_stop - host_start).count());
      const int reps = static_cast<int>(event_ms.size());
      if (reps >= kMaxReps || elapsed() >= kBudgetSeconds) break;
      if (reps >= kMinReps && spread_of(event_ms) <= kMaxSpread) break;
    }
    Stats s;
    const double event_median = quantile(event_ms, 0.5), host_median = quantile(host_ms, 0.5);
    s.host_clock = host_median > 1.5 * event_median && host_median - event_median > 0.050;
    const std::vector<double>& used = s.host_clock ? host_ms : event_ms;
    s.reps = static_cast<int>(used.size());
    s.median_ms = quantile(used, 0.5);
    s.min_ms = *std::min_element(used.begin(), used.end());
    s.max_ms = *std::max_element(used.begin(), used.end());
    s.spread = spread_of(used);
    return s;
  }

 private:
  [[noreturn]] static void fail(bool student, const std::string& what) {
    if (student) throw StudentFault(what);
    throw std::runtime_error("a baseline failed during timing: " + what);
  }
  static std::size_t flush_bytes() {
    int device = 0, l2 = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
    return 2 * static_cast<std::size_t>(l2 > 0 ? l2 : (32 << 20));
  }

  DeviceBuffer pristine_, in_[2], out_[2], flush_, first_;
  std::size_t bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

std::string format(const char* fmt, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, a);
  return buf;
}

/// The timing object's `method`: the method above, with this run's numbers.
std::string method_text(const Stats& mine, std::size_t flush_bytes, bool cached) {
  std::string method =
      "median of " + std::to_string(mine.reps) + " repetitions timed with CUDA events around the call on its stream, after " +
      std::to_string(kWarmup) +
      " warm-up calls; before every repetition the input was restored from a pristine device copy, the output "
      "poisoned (calls alternate between two input/output address pairs) and the L2 cache flushed by a "
      "cudaMemsetAsync over 2x L2 (" +
      format("%.0f", static_cast<double>(flush_bytes) / (1 << 20)) + " MiB); stopped at >= " +
      std::to_string(kMinReps) + " repetitions once (p75-p25)/median <= " + format("%.2f", kMaxSpread) + ", or at " +
      std::to_string(kMaxReps) + " repetitions, or after " + format("%.0f", kBudgetSeconds) +
      " s per implementation; every call's output was checked on the device against the case's acceptance band "
      "before its time counted; the reference, CUB and a device-to-device copy were timed the same way ";
  method += cached ? "on this GPU earlier in the same batch, with the GPU to themselves (the batch's baseline cache)"
                   : "in the same process";
  if (mine.host_clock)
    method += "; the host clock bounded by cudaDeviceSynchronize exceeded the event time by more than 50% and 50 us "
              "(work on other streams), so the student's time is the host time";
  return method;
}

}  // namespace

template <typename T>
Timing time_slot(const ScanFn<T>& student, Slot slot, ScanKind kind, const T* input, std::size_t n, bool on_device,
                 const DeviceBand<T>& band, const std::optional<Baselines>& cached, Baselines& used) {
  const std::size_t bytes = n * sizeof(T);
  Bench bench(bytes, input, on_device);
  const ScanFn<T> reference = reference_implementation().get<T>(slot, kind);
  const auto as = [n](const ScanFn<T>& fn) {
    return [&fn, n](const void* in, void* out, cudaStream_t s) { fn(static_cast<const T*>(in), static_cast<T*>(out), n, s); };
  };
  const auto outside = [&](const void* out, cudaStream_t s) {
    return first_outside<T>(static_cast<const T*>(out), band.lo, band.hi, n, bench.scratch(), s);
  };
  const Stats mine = bench.measure(as(student), true, outside);
  if (cached) {
    used = *cached;
  } else {
    const auto cub = [n, kind](const void* in, void* out, cudaStream_t s) {
      baseline::cub_scan(static_cast<const T*>(in), static_cast<T*>(out), n, kind, s);
    };
    const auto copy = [bytes](const void* in, void* out, cudaStream_t s) {
      const cudaError_t err = cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, s);
      if (err != cudaSuccess) throw std::runtime_error(cudaGetErrorString(err));
    };
    used.reference_ms = bench.measure(as(reference), false).median_ms;
    used.cub_ms = bench.measure(cub, false).median_ms;
    used.copy_ms = bench.measure(copy, false).median_ms;
  }

  // bytes read + written over milliseconds: GB/s = bytes / (ms * 1e6)
  const auto gbps = [bytes](double ms) { return ms > 0 ? 2.0 * static_cast<double>(bytes) / (ms * 1e6) : 0.0; };
  Timing t;
  t.median_ms = mine.median_ms;
  t.min_ms = mine.min_ms;
  t.max_ms = mine.max_ms;
  t.reps = mine.reps;
  t.spread = mine.spread;
  t.gbps = gbps(mine.median_ms);
  t.copy_gbps = gbps(used.copy_ms);
  t.fraction_of_copy = gbps(used.copy_ms) > 0 ? gbps(mine.median_ms) / gbps(used.copy_ms) : 0.0;
  t.reference_ms = used.reference_ms;
  t.cub_ms = used.cub_ms;
  t.ratio_to_reference = mine.median_ms > 0 ? used.reference_ms / mine.median_ms : 0.0;
  t.ratio_to_cub = mine.median_ms > 0 ? used.cub_ms / mine.median_ms : 0.0;
  t.method = method_text(mine, bench.flush_size(), cached.has_value());
  return t;
}

template Timing time_slot<std::int32_t>(const ScanFn<std::int32_t>&, Slot, ScanKind, const std::int32_t*, std::size_t,
                                        bool, const DeviceBand<std::int32_t>&, const std::optional<Baselines>&,
                                        Baselines&);
template Timing time_slot<float>(const ScanFn<float>&, Slot, ScanKind, const float*, std::size_t, bool,
                                 const DeviceBand<float>&, const std::optional<Baselines>&, Baselines&);

}  // namespace scangrade::grader

#endif  // SCANGRADE_WORKER_TIMING
