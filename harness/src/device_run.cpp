// One guarded slot call on the device (device_run.h).
#include "scangrade/device_run.h"

#include "scangrade/alloc_tracker.h"

#include <cstdint>
#include <stdexcept>

#include <cuda_runtime.h>

namespace scangrade {

void check_cuda(cudaError_t err, const char* what, const char* stage) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string(stage) + " failed at " + what + ": " + cudaGetErrorName(err) + ": " +
                             cudaGetErrorString(err));
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, const char* stage) {
  check_cuda(cudaMalloc(&ptr_, bytes ? bytes : 1), "cudaMalloc", stage);
}

DeviceBuffer::~DeviceBuffer() { cudaFree(ptr_); }

namespace {

/// Device memory this process holds: cudaMalloc bytes (interposed, alloc_tracker.h) and the
/// default pool's bytes in use (cudaMallocAsync). Both are per process.
struct MemoryBalance {
  std::size_t malloc_bytes = 0;
  std::size_t pool_bytes = 0;
};

MemoryBalance measure_memory() {
  MemoryBalance m;
  m.malloc_bytes = tracked_device_bytes();
  int device = 0;
  cudaGetDevice(&device);
  cudaMemPool_t pool;
  std::uint64_t used = 0;
  if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess &&
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess)
    m.pool_bytes = used;
  cudaGetLastError();
  return m;
}

/// Bytes the call took and did not give back (0 if none), with the reading.
std::int64_t lost_bytes(const MemoryBalance& before, const MemoryBalance& after, std::string& detail) {
  const auto grew = [](std::size_t a, std::size_t b) { return b > a ? static_cast<std::int64_t>(b - a) : 0; };
  const std::int64_t by_malloc = grew(before.malloc_bytes, after.malloc_bytes);
  const std::int64_t by_pool = grew(before.pool_bytes, after.pool_bytes);
  detail = std::to_string(by_malloc) + " bytes from cudaMalloc without cudaFree, " + std::to_string(by_pool) +
           " bytes from cudaMallocAsync without cudaFreeAsync";
  return by_malloc + by_pool;
}

/// Calls the slot; returns the error text ("" on success) and sets not_implemented (and where).
template <typename T>
std::string call_slot(const ScanFn<T>& fn, const T* in, T* out, std::size_t n, cudaStream_t stream,
                      bool& not_implemented, std::string& where) {
  try {
    fn(in, out, n, stream);
  } catch (const NotImplemented& e) {
    not_implemented = true;
    where = e.where;
    return "";
  } catch (const std::exception& e) {
    return std::string("the slot threw an exception: ") + e.what();
  } catch (...) {
    return "the slot threw a non-standard exception";
  }
  // Work the student put on other streams counts too: wait for the whole device.
  cudaError_t err = cudaStreamSynchronize(stream);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  if (err == cudaSuccess) err = cudaGetLastError();
  if (err != cudaSuccess)
    return std::string("CUDA error after the slot call: ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
  return "";
}

}  // namespace

std::optional<std::string> device_unavailable() {
  static const std::optional<std::string> reason = []() -> std::optional<std::string> {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorString(err);
    if (count == 0) return std::string("no CUDA device in this machine");
    return std::nullopt;
  }();
  return reason;
}

std::string device_description() {
  if (auto why = device_unavailable()) return "none (" + *why + ")";
#ifdef SCANGRADE_EMULATED
  return "the CPU emulation backend (emulated: no timings)";
#else
  int device = 0, driver = 0, runtime = 0;
  cudaGetDevice(&device);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, device);
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  return std::string(prop.name) + ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", driver " +
         std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10) + ", runtime " +
         std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
#endif
}

template <typename T>
RunRecord<T> run_in_place(const ScanFn<T>& fn, const T* d_in, T* d_out, std::size_t n) {
  RunRecord<T> record;
  cudaStream_t stream;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  const MemoryBalance before = measure_memory();
  record.error = call_slot(fn, d_in, d_out, n, stream, record.not_implemented, record.not_implemented_at);
  const MemoryBalance after = measure_memory();
  if (!record.error.empty()) {
    // A sticky error (illegal address...) makes every later call fail: this process is done.
    cudaGetLastError();
    record.context_broken = cudaDeviceSynchronize() != cudaSuccess;
  } else if (!record.not_implemented) {
    record.leaked_bytes = lost_bytes(before, after, record.leak_detail);
  }
  cudaStreamDestroy(stream);
  return record;
}

template <typename T>
RunRecord<T> run_on_device(const ScanFn<T>& fn, const std::vector<T>& input) {
  const std::size_t n = input.size();
  const std::size_t g = kGuardElements;

  // Set up: input, and d_out poisoned between two canary guard zones.
  DeviceBuffer d_in(n * sizeof(T));
  DeviceBuffer d_out_zone((n + 2 * g) * sizeof(T));
  std::vector<T> zone(n + 2 * g, from_bits<T>(kCanaryBits));
  for (std::size_t i = 0; i < n; ++i) zone[g + i] = from_bits<T>(kPoisonBits);
  check_cuda(cudaMemcpy(d_in.as<T>(), input.data(), n * sizeof(T), cudaMemcpyHostToDevice), "copying the input");
  check_cuda(cudaMemcpy(d_out_zone.as<T>(), zone.data(), zone.size() * sizeof(T), cudaMemcpyHostToDevice),
              "poisoning the output");
  // A cudaMemcpy from pageable memory to the device may return before its DMA has landed, and the
  // student's stream does not wait for the legacy stream: without this the poison can arrive in
  // d_out after the student's kernels wrote it (seen under load on an H100).
  check_cuda(cudaDeviceSynchronize(), "waiting for the input and the poison to land");

  RunRecord<T> record = run_in_place(fn, d_in.as<T>(), d_out_zone.as<T>() + g, n);
  if (!record.error.empty() || record.not_implemented) return record;
  // Read back everything the verdict needs.
  check_cuda(cudaMemcpy(zone.data(), d_out_zone.as<T>(), zone.size() * sizeof(T), cudaMemcpyDeviceToHost),
              "reading the output back");
  record.guard_before.assign(zone.begin(), zone.begin() + g);
  record.output.assign(zone.begin() + g, zone.begin() + g + n);
  record.guard_after.assign(zone.begin() + g + n, zone.end());
  record.input_after.resize(n);
  check_cuda(cudaMemcpy(record.input_after.data(), d_in.as<T>(), n * sizeof(T), cudaMemcpyDeviceToHost),
              "reading the input back");
  return record;
}

template RunRecord<std::int32_t> run_on_device<std::int32_t>(const ScanFn<std::int32_t>&,
                                                             const std::vector<std::int32_t>&);
template RunRecord<float> run_on_device<float>(const ScanFn<float>&, const std::vector<float>&);
template RunRecord<std::int32_t> run_in_place<std::int32_t>(const ScanFn<std::int32_t>&, const std::int32_t*,
                                                            std::int32_t*, std::size_t);
template RunRecord<float> run_in_place<float>(const ScanFn<float>&, const float*, float*, std::size_t);

}  // namespace scangrade
