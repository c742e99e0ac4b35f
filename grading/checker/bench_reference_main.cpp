// scangrade_bench_reference: the reference scans, CUB and a device-to-device copy timed with the
// grader's own method (bench.h: fresh input, poisoned output, L2 flushed, CUDA events around each
// call, the median), one JSON object per line on stdout. tools/bench_reference.py runs it and makes
// the table and the plot.
// With --parts, a row per n of what a single-pass call is made of instead (each part timed alone,
// the same way; "hidden": the host's enqueueing left out of the time).
//   scangrade_bench_reference [--n 16777216,67108864,...] [--dtype int32,float32] [--parts]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench.h"
#include "reference.h"
#include "scangrade/device_run.h"

namespace scangrade::grader {
namespace {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty()) out.push_back(part);
  return out;
}

/// Small integers (exact in int32 and float at every n of the table).
template <typename T>
std::vector<T> input(std::size_t n) {
  std::vector<T> v(n);
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> d(-8, 8);
  for (T& x : v) x = static_cast<T>(d(rng));
  return v;
}

template <typename T>
nlohmann::json row(std::size_t n, const char* dtype) {
  const std::vector<T> host = input<T>(n);
  const std::size_t bytes = n * sizeof(T);
  DeviceBuffer d_in(bytes, "bench input");
  check_cuda(cudaMemcpy(d_in.get(), host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy", "bench input");
  const auto as_in = [](const void* p) { return static_cast<const T*>(p); };
  const auto as_out = [](void* p) { return static_cast<T*>(p); };
  nlohmann::json r = {{"n", n}, {"dtype", dtype}, {"bytes_moved", 2 * bytes}};
  r["copy_ms"] = median_call_ms(bytes, d_in.get(), [&](const void* in, void* out, cudaStream_t s) {
    check_cuda(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync", "copy");
  });
  r["cub_ms"] = median_call_ms(bytes, d_in.get(), [&](const void* in, void* out, cudaStream_t s) {
    baseline::cub_scan(as_in(in), as_out(out), n, ScanKind::Inclusive, s);
  });
  r["single_pass_ms"] = median_call_ms(bytes, d_in.get(), [&](const void* in, void* out, cudaStream_t s) {
    reference::single_pass_inclusive(as_in(in), as_out(out), n, s);
  });
  r["hierarchical_ms"] = median_call_ms(bytes, d_in.get(), [&](const void* in, void* out, cudaStream_t s) {
    reference::hierarchical_scan(as_in(in), as_out(out), n, ScanKind::Inclusive, s);
  });
  return r;
}

/// What a single-pass call costs, part by part.
template <typename T>
nlohmann::json parts(std::size_t n, const char* dtype) {
  namespace sp = reference::single_pass_parts;
  const std::vector<T> host = input<T>(n);
  const std::size_t bytes = n * sizeof(T);
  DeviceBuffer d_in(bytes, "bench input");
  check_cuda(cudaMemcpy(d_in.get(), host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy", "bench input");
  DeviceBuffer workspace(sp::workspace_bytes(n), "bench workspace");
  const auto as_in = [](const void* p) { return static_cast<const T*>(p); };
  const auto as_out = [](void* p) { return static_cast<T*>(p); };
  const Call copy = [&](const void* in, void* out, cudaStream_t s) {
    check_cuda(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync", "copy");
  };
  const Call call = [&](const void* in, void* out, cudaStream_t s) {
    reference::single_pass_inclusive(as_in(in), as_out(out), n, s);
  };
  const Call clear = [&](const void*, void*, cudaStream_t s) { sp::clear_workspace(workspace.get(), n, s); };
  const Call kernel = [&](const void* in, void* out, cudaStream_t s) {
    sp::scan_kernel(as_in(in), as_out(out), n, workspace.get(), s);
  };
  const CallTiming cleared{clear, false}, cleared_hidden{clear, true}, hidden{{}, true};
  nlohmann::json r = {{"n", n}, {"dtype", dtype}, {"bytes_moved", 2 * bytes}};
  r["copy_ms"] = median_call_ms(bytes, d_in.get(), copy);
  r["copy_hidden_ms"] = median_call_ms(bytes, d_in.get(), copy, hidden);
  r["call_ms"] = median_call_ms(bytes, d_in.get(), call);
  r["call_hidden_ms"] = median_call_ms(bytes, d_in.get(), call, hidden);
  r["empty_ms"] = median_call_ms(bytes, d_in.get(), [](const void*, void*, cudaStream_t) {});
  r["alloc_ms"] = median_call_ms(bytes, d_in.get(), [&](const void*, void*, cudaStream_t s) {
    void* p = nullptr;
    check_cuda(cudaMallocAsync(&p, sp::workspace_bytes(n), s), "cudaMallocAsync", "alloc");
    check_cuda(cudaFreeAsync(p, s), "cudaFreeAsync", "alloc");
  });
  r["clear_ms"] = median_call_ms(bytes, d_in.get(), clear);
  r["clear_kernel_ms"] = median_call_ms(bytes, d_in.get(), [&](const void* in, void* out, cudaStream_t s) {
    clear(in, out, s);
    kernel(in, out, s);
  });
  r["kernel_ms"] = median_call_ms(bytes, d_in.get(), kernel, cleared);
  r["kernel_hidden_ms"] = median_call_ms(bytes, d_in.get(), kernel, cleared_hidden);
  return r;
}

}  // namespace
}  // namespace scangrade::grader

int main(int argc, char** argv) {
  std::string ns = "1048576,4194304,16777216,67108864,268435456", dtypes = "int32,float32";
  bool parts = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--n" && i + 1 < argc) ns = argv[++i];
    else if (a == "--dtype" && i + 1 < argc) dtypes = argv[++i];
    else if (a == "--parts") parts = true;
    else {
      std::fprintf(stderr, "usage: %s [--n N,N,...] [--dtype int32,float32] [--parts]\n", argv[0]);
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  try {
    cudaDeviceProp prop{};
    scangrade::check_cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties", "bench");
    std::printf("%s\n", nlohmann::json({{"device", prop.name}}).dump().c_str());
    for (const std::string& dtype : scangrade::grader::split(dtypes))
      for (const std::string& n_text : scangrade::grader::split(ns)) {
        const std::size_t n = std::stoull(n_text);
        namespace g = scangrade::grader;
        const bool f = dtype == "float32";
        const nlohmann::json r = parts ? (f ? g::parts<float>(n, "float32") : g::parts<std::int32_t>(n, "int32"))
                                       : (f ? g::row<float>(n, "float32") : g::row<std::int32_t>(n, "int32"));
        std::printf("%s\n", r.dump().c_str());
        std::fflush(stdout);
      }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scangrade_bench_reference: %s\n", e.what());
    return 1;
  }
  return 0;
}
