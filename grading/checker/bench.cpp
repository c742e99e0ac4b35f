// The checker's baselines (bench.h), timed with the method of timing_method.h.
#include "bench.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference.h"
#include "scangrade/device_run.h"
#include "timing_method.h"

namespace scangrade::grader {
namespace {

SCANGRADE_IMPLEMENTATION(reference_implementation, "reference", scangrade::reference)

constexpr const char* kSetup = "timing the baselines";

void setup(cudaError_t err, const char* what) { check_cuda(err, what, kSetup); }

/// A host function that holds its stream until `*released` (CallTiming::hide_host).
void CUDART_CB hold_stream(void* released) {
  while (!static_cast<std::atomic<bool>*>(released)->load(std::memory_order_acquire)) {
  }
}

/// Buffers, stream and events of one case's baselines.
class Bench {
 public:
  Bench(std::size_t bytes, const void* d_input)
      : in_{DeviceBuffer(bytes, kSetup), DeviceBuffer(bytes, kSetup)},
        out_{DeviceBuffer(bytes, kSetup), DeviceBuffer(bytes, kSetup)},
        flush_(l2_flush_bytes(), kSetup),
        input_(d_input),
        bytes_(bytes) {
    setup(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    setup(cudaEventCreate(&start_), "cudaEventCreate");
    setup(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~Bench() {
    cudaStreamSynchronize(stream_);  // a held stream's host function reads released_
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }

  double median_ms(const Call& call, const CallTiming& how = {}) {
    std::vector<double> ms;
    const auto begin = std::chrono::steady_clock::now();
    for (int i = 0;; ++i) {
      const double t = call_ms(call, how, i);
      if (i < timing::kWarmup) continue;
      ms.push_back(t);
      if (timing::enough(ms, std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count())) break;
    }
    return timing::quantile(ms, 0.5);
  }

  /// Call i of a series (pair i % 2): restore, poison, flush, then the call between two events.
  double call_ms(const Call& call, const CallTiming& how, int i) {
    {
      void* in = in_[i % 2].get();
      void* out = out_[i % 2].get();
      setup(cudaMemcpyAsync(in, input_, bytes_, cudaMemcpyDeviceToDevice, stream_), "restoring the input");
      setup(cudaMemsetAsync(out, 0xff, bytes_, stream_), "poisoning the output");
      if (how.prepare) how.prepare(in, out, stream_);
      setup(cudaMemsetAsync(flush_.get(), i & 0xff, l2_flush_bytes(), stream_), "flushing L2");
      setup(cudaDeviceSynchronize(), "synchronizing before the call");
      {
        released_.store(!how.hide_host, std::memory_order_relaxed);
        const Release release{released_};  // on every path: a held stream never stays held
        if (how.hide_host) setup(cudaLaunchHostFunc(stream_, hold_stream, &released_), "cudaLaunchHostFunc");
        setup(cudaEventRecord(start_, stream_), "cudaEventRecord");
        call(in, out, stream_);
        setup(cudaEventRecord(stop_, stream_), "cudaEventRecord");
      }
      setup(cudaDeviceSynchronize(), "a baseline's call");
      setup(cudaGetLastError(), "a baseline's call");
      float t = 0;
      setup(cudaEventElapsedTime(&t, start_, stop_), "cudaEventElapsedTime");
      return t;
    }
  }

 private:
  DeviceBuffer in_[2], out_[2], flush_;
  const void* input_;
  std::size_t bytes_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  std::atomic<bool> released_{true};

  struct Release {
    std::atomic<bool>& flag;
    ~Release() { flag.store(true, std::memory_order_release); }
  };
};

}  // namespace

std::size_t l2_flush_bytes() {
  int device = 0, l2 = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
  return 2 * static_cast<std::size_t>(l2 > 0 ? l2 : (32 << 20));
}

double median_call_ms(std::size_t bytes, const void* d_input, const Call& call, const CallTiming& how) {
  Bench bench(bytes, d_input);
  return bench.median_ms(call, how);
}

template <typename T>
class ReferenceCallsOf : public ReferenceCalls {
 public:
  ReferenceCallsOf(Slot slot, ScanKind kind, const T* d_input, std::size_t n)
      : bench_(n * sizeof(T), d_input), reference_(reference_implementation().get<T>(slot, kind)), n_(n) {
    for (int w = 0; w < timing::kWarmup; ++w) next_ms();
  }
  double next_ms() override {
    return bench_.call_ms(
        [this](const void* in, void* out, cudaStream_t s) {
          reference_(static_cast<const T*>(in), static_cast<T*>(out), n_, s);
        },
        {}, calls_++);
  }

 private:
  Bench bench_;
  ScanFn<T> reference_;
  std::size_t n_;
  int calls_ = 0;
};

template <typename T>
std::unique_ptr<ReferenceCalls> ReferenceCalls::make(Slot slot, ScanKind kind, const T* d_input, std::size_t n) {
  return std::make_unique<ReferenceCallsOf<T>>(slot, kind, d_input, n);
}

template std::unique_ptr<ReferenceCalls> ReferenceCalls::make<std::int32_t>(Slot, ScanKind, const std::int32_t*,
                                                                           std::size_t);
template std::unique_ptr<ReferenceCalls> ReferenceCalls::make<float>(Slot, ScanKind, const float*, std::size_t);

template <typename T>
Baselines measure_baselines(Slot slot, ScanKind kind, const T* d_input, std::size_t n, bool with_reference) {
  const std::size_t bytes = n * sizeof(T);
  Bench bench(bytes, d_input);
  const ScanFn<T> reference = reference_implementation().get<T>(slot, kind);
  Baselines b;
  if (with_reference)
    b.reference_ms = bench.median_ms([&](const void* in, void* out, cudaStream_t s) {
      reference(static_cast<const T*>(in), static_cast<T*>(out), n, s);
    });
  b.cub_ms = bench.median_ms([&](const void* in, void* out, cudaStream_t s) {
    baseline::cub_scan(static_cast<const T*>(in), static_cast<T*>(out), n, kind, s);
  });
  b.copy_ms = bench.median_ms([&](const void* in, void* out, cudaStream_t s) {
    setup(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, s), "the copy baseline");
  });
  return b;
}

template Baselines measure_baselines<std::int32_t>(Slot, ScanKind, const std::int32_t*, std::size_t, bool);
template Baselines measure_baselines<float>(Slot, ScanKind, const float*, std::size_t, bool);

}  // namespace scangrade::grader
