// The emulator's trace (scangrade::emu::trace_begin / trace_end) and the host-memory APIs it records:
// cudaMallocHost, cudaHostAlloc (mapped), cudaHostGetDevicePointer, cudaMallocManaged, cudaHostRegister.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <scangrade/emu.h>

#include "trace_kernels.h"

namespace {

using scangrade::emu::Trace;

class EmuTrace : public ::testing::Test {
 protected:
  void SetUp() override { scangrade::emu::reset(); }
  void TearDown() override {
    scangrade::emu::trace_end();
    scangrade::emu::reset();
  }
};

const Trace::Copies* copies_of(const Trace& t, const std::string& api) {
  for (const Trace::Copies& c : t.copies) {
    if (c.api == api) return &c;
  }
  return nullptr;
}

TEST_F(EmuTrace, NothingIsRecordedOutsideATrace) {
  int* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 1024 * sizeof(int)), cudaSuccess);
  std::vector<int> h(1024, 1);
  ASSERT_EQ(cudaMemcpy(d, h.data(), 4096, cudaMemcpyHostToDevice), cudaSuccess);
  emu_trace_test::add_one(d, 1024, 4);
  scangrade::emu::trace_begin();
  Trace t = scangrade::emu::trace_end();
  EXPECT_TRUE(t.copies.empty());
  EXPECT_TRUE(t.kernels.empty());
  EXPECT_EQ(t.launches, 0u);
  EXPECT_TRUE(t.host.empty());
  cudaFree(d);
}

TEST_F(EmuTrace, CopiesByApiAndDirection) {
  const std::size_t n = 1 << 16;
  int* d = nullptr;
  int* d2 = nullptr;
  ASSERT_EQ(cudaMalloc(&d, n * sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d2, n * sizeof(int)), cudaSuccess);
  std::vector<int> h(n, 3);
  scangrade::emu::trace_begin();
  ASSERT_EQ(cudaMemcpy(d, h.data(), n * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(h.data(), d, 100, cudaMemcpyDeviceToHost, nullptr), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(h.data(), d, 60, cudaMemcpyDefault, nullptr), cudaSuccess);  // resolved: D2H
  ASSERT_EQ(cudaMemcpy(d2, d, n * sizeof(int), cudaMemcpyDeviceToDevice), cudaSuccess);    // not traced
  ASSERT_EQ(cudaMemcpy(d2, d, 64, cudaMemcpyDefault), cudaSuccess);                        // D2D: not traced
  Trace t = scangrade::emu::trace_end();
  ASSERT_EQ(t.copies.size(), 2u);
  const Trace::Copies* sync = copies_of(t, "cudaMemcpy");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->h2d_bytes, n * sizeof(int));
  EXPECT_EQ(sync->d2h_bytes, 0u);
  EXPECT_EQ(sync->largest, n * sizeof(int));
  EXPECT_EQ(sync->count, 1u);
  const Trace::Copies* async = copies_of(t, "cudaMemcpyAsync");
  ASSERT_NE(async, nullptr);
  EXPECT_EQ(async->d2h_bytes, 160u);
  EXPECT_EQ(async->largest, 100u);
  EXPECT_EQ(async->count, 2u);
  // the order, all APIs together: the upload came before anything was read back
  EXPECT_EQ(t.d2h_so_far, 160u);
  EXPECT_EQ(t.h2d_after_first_d2h, 0u);
  EXPECT_EQ(t.d2h_before_last_h2d, 0u);
  cudaFree(d);
  cudaFree(d2);
}

TEST_F(EmuTrace, RoundTripsAreRecordedInOrder) {
  int* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4096 * sizeof(int)), cudaSuccess);
  std::vector<int> h(4096, 1);
  scangrade::emu::trace_begin();
  ASSERT_EQ(cudaMemcpy(d, h.data(), 1000, cudaMemcpyHostToDevice), cudaSuccess);       // before any read: no round trip
  ASSERT_EQ(cudaMemcpy(h.data(), d, 3000, cudaMemcpyDeviceToHost), cudaSuccess);       // read
  ASSERT_EQ(cudaMemcpyAsync(d, h.data(), 2500, cudaMemcpyHostToDevice, nullptr), cudaSuccess);  // written back
  ASSERT_EQ(cudaMemcpy(h.data(), d, 700, cudaMemcpyDeviceToHost), cudaSuccess);        // read after the last write
  Trace t = scangrade::emu::trace_end();
  EXPECT_EQ(t.d2h_so_far, 3700u);
  EXPECT_EQ(t.d2h_before_last_h2d, 3000u);
  EXPECT_EQ(t.h2d_after_first_d2h, 2500u);
  cudaFree(d);
}

TEST_F(EmuTrace, SymbolCopiesAreHostDeviceCopies) {
  std::vector<int> in(64, 7), out(64, 0);
  scangrade::emu::trace_begin();
  ASSERT_EQ(emu_trace_test::symbol_round_trip(in.data(), out.data(), 64), cudaSuccess);
  Trace t = scangrade::emu::trace_end();
  EXPECT_EQ(out, in);
  ASSERT_NE(copies_of(t, "cudaMemcpyToSymbol"), nullptr);
  EXPECT_EQ(copies_of(t, "cudaMemcpyToSymbol")->h2d_bytes, 256u);
  ASSERT_NE(copies_of(t, "cudaMemcpyFromSymbol"), nullptr);
  EXPECT_EQ(copies_of(t, "cudaMemcpyFromSymbol")->d2h_bytes, 256u);
}

// What the CUDA runtime returned for each kind, measured on an H200 (CUDA 13.0): to a symbol,
// cudaMemcpyHostToHost and cudaMemcpyDeviceToHost are refused; from a symbol, cudaMemcpyHostToHost and
// cudaMemcpyHostToDevice; cudaMemcpyDeviceToDevice needs device memory on the other side; the error is
// left for cudaGetLastError and nothing is copied.
TEST_F(EmuTrace, SymbolCopyKindsAreCheckedAsOnTheGpu) {
  constexpr cudaMemcpyKind kBad = static_cast<cudaMemcpyKind>(7);
  const cudaMemcpyKind kinds[] = {cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                  cudaMemcpyDeviceToDevice, cudaMemcpyDefault, kBad};
  const cudaError_t dir = cudaErrorInvalidMemcpyDirection, ok = cudaSuccess, inval = cudaErrorInvalidValue;
  // by kind, in the order above: [to, from] x [host memory, device memory]
  const cudaError_t to_host[] = {dir, ok, dir, inval, ok, dir};
  const cudaError_t to_device[] = {dir, ok, dir, ok, ok, dir};
  const cudaError_t from_host[] = {dir, dir, ok, inval, ok, dir};
  const cudaError_t from_device[] = {dir, dir, ok, ok, ok, dir};
  float* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 1024 * sizeof(float)), cudaSuccess);
  std::vector<float> h(1024), zeros(1024, 0.0f), back(1024);
  for (int i = 0; i < 1024; ++i) h[i] = 1.0f + i;
  ASSERT_EQ(cudaMemcpy(d, h.data(), 4096, cudaMemcpyHostToDevice), cudaSuccess);
  auto check = [&](cudaError_t got, cudaError_t want, bool copied, const std::string& what) {
    EXPECT_EQ(got, want) << what << ": " << scangrade::emu::last_diagnostic();
    EXPECT_EQ(cudaGetLastError(), want) << what;
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << what;
    EXPECT_EQ(copied, want == cudaSuccess) << what;
    if (want == cudaErrorInvalidMemcpyDirection) {
      EXPECT_NE(std::string(scangrade::emu::last_diagnostic()).find("is not a direction of this copy"),
                std::string::npos) << what;
    }
  };
  for (int k = 0; k < 6; ++k) {
    for (bool async : {false, true}) {
      const std::string tag = "kind " + std::to_string(int(kinds[k])) + (async ? " async" : "");
      ASSERT_EQ(emu_trace_test::to_table(zeros.data(), 4096, 0, cudaMemcpyHostToDevice, false), cudaSuccess);
      cudaError_t e = emu_trace_test::to_table(h.data(), 4096, 0, kinds[k], async);
      ASSERT_EQ(emu_trace_test::from_table(back.data(), 4096, 0, cudaMemcpyDeviceToHost, false), cudaSuccess);
      check(e, to_host[k], back == h, "to a symbol from host memory, " + tag);
      ASSERT_EQ(emu_trace_test::to_table(zeros.data(), 4096, 0, cudaMemcpyHostToDevice, false), cudaSuccess);
      e = emu_trace_test::to_table(d, 4096, 0, kinds[k], async);
      ASSERT_EQ(emu_trace_test::from_table(back.data(), 4096, 0, cudaMemcpyDeviceToHost, false), cudaSuccess);
      check(e, to_device[k], back == h, "to a symbol from device memory, " + tag);

      ASSERT_EQ(emu_trace_test::to_table(h.data(), 4096, 0, cudaMemcpyHostToDevice, false), cudaSuccess);
      back = zeros;
      e = emu_trace_test::from_table(back.data(), 4096, 0, kinds[k], async);
      check(e, from_host[k], back == h, "from a symbol to host memory, " + tag);
      ASSERT_EQ(cudaMemset(d, 0, 4096), cudaSuccess);
      e = emu_trace_test::from_table(d, 4096, 0, kinds[k], async);
      ASSERT_EQ(cudaMemcpy(back.data(), d, 4096, cudaMemcpyDeviceToHost), cudaSuccess);
      check(e, from_device[k], back == h, "from a symbol to device memory, " + tag);
      ASSERT_EQ(cudaMemcpy(d, h.data(), 4096, cudaMemcpyHostToDevice), cudaSuccess);
    }
  }
  cudaFree(d);
}

TEST_F(EmuTrace, SymbolCopiesPastTheEndOrThroughATemporaryAreRefused) {
  std::vector<float> h(1025, 2.0f);
  EXPECT_EQ(emu_trace_test::table_size(), 4096u);
  EXPECT_EQ(emu_trace_test::to_table(h.data(), 4096, 4, cudaMemcpyHostToDevice, false), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(emu_trace_test::from_table(h.data(), 4100, 0, cudaMemcpyDeviceToHost, true), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(emu_trace_test::to_table(h.data(), 4092, 4, cudaMemcpyHostToDevice, false), cudaSuccess);
  EXPECT_EQ(emu_trace_test::to_table_through_temporary(h.data()), cudaErrorInvalidSymbol);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidSymbol);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(EmuTrace, SymbolCopiesFromDeviceMemoryAreNotHostCopies) {
  float* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4096), cudaSuccess);
  ASSERT_EQ(cudaMemset(d, 0, 4096), cudaSuccess);
  scangrade::emu::trace_begin();
  ASSERT_EQ(emu_trace_test::to_table(d, 4096, 0, cudaMemcpyDeviceToDevice, false), cudaSuccess);
  ASSERT_EQ(emu_trace_test::from_table(d, 4096, 0, cudaMemcpyDefault, true), cudaSuccess);
  Trace t = scangrade::emu::trace_end();
  EXPECT_TRUE(t.copies.empty());
  EXPECT_EQ(t.d2h_so_far, 0u);
  cudaFree(d);
}

TEST_F(EmuTrace, VolatileAndConstPointersAllocateAsWithNvcc) {
  std::vector<int> out(200, 0), want(200);
  for (int i = 0; i < 200; ++i) want[i] = i + 1;
  ASSERT_EQ(emu_trace_test::volatile_allocations(200, out.data()), cudaSuccess) << scangrade::emu::last_diagnostic();
  EXPECT_EQ(out, want);
  EXPECT_EQ(scangrade::emu::bytes_in_use(), 0u);
}

TEST_F(EmuTrace, LaunchesByLaunchSiteWithTheLargestGrid) {
  int* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 2048 * sizeof(int)), cudaSuccess);
  scangrade::emu::trace_begin();
  const int line = emu_trace_test::add_one(d, 2048, 1);
  emu_trace_test::add_one(d, 2048, 8);
  emu_trace_test::add_one(d, 2048, 2);
  Trace t = scangrade::emu::trace_end();
  EXPECT_EQ(t.launches, 3u);
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.kernels[0].name.rfind("<kernel at ", 0), 0u);
  EXPECT_NE(t.kernels[0].name.find("kernels_trace.cu:" + std::to_string(line) + ">"), std::string::npos) << t.kernels[0].name;
  EXPECT_EQ(t.kernels[0].launches, 3u);
  EXPECT_EQ(t.kernels[0].max_blocks, 8u);
  cudaFree(d);
}

TEST_F(EmuTrace, PinnedAllocationsAndFrees) {
  scangrade::emu::trace_begin();
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(cudaMallocHost(&a, 4096), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(&b, 100, cudaHostAllocDefault), cudaSuccess);
  ASSERT_EQ(cudaFreeHost(b), cudaSuccess);
  Trace t = scangrade::emu::trace_end();
  ASSERT_EQ(t.host.size(), 3u);
  EXPECT_EQ(t.host[0].kind, Trace::HostKind::Pinned);
  EXPECT_EQ(t.host[0].api, "cudaMallocHost");
  EXPECT_EQ(t.host[0].ptr, a);
  EXPECT_EQ(t.host[0].bytes, 4096u);
  EXPECT_EQ(t.host[1].kind, Trace::HostKind::Pinned);
  EXPECT_EQ(t.host[1].api, "cudaHostAlloc");
  EXPECT_EQ(t.host[2].kind, Trace::HostKind::FreeHost);
  EXPECT_EQ(t.host[2].ptr, b);
  EXPECT_EQ(scangrade::emu::bytes_in_use(), 0u) << "page-locked host memory is not device memory";
  EXPECT_EQ(cudaFreeHost(a), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(a), cudaErrorInvalidValue);
  cudaGetLastError();
}

TEST_F(EmuTrace, MappedMemoryRunsKernelsAndIsRecorded) {
  scangrade::emu::trace_begin();
  int* host = nullptr;
  ASSERT_EQ(cudaSetDeviceFlags(cudaDeviceMapHost), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(&host, 1000 * sizeof(int), cudaHostAllocMapped), cudaSuccess);
  int* dev = nullptr;
  ASSERT_EQ(cudaHostGetDevicePointer(&dev, host, 0), cudaSuccess);
  for (int i = 0; i < 1000; ++i) host[i] = i;
  emu_trace_test::add_one(dev, 1000, 4);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(host[999], 1000);
  int* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 1000 * sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d, dev, 1000 * sizeof(int), cudaMemcpyDeviceToDevice), cudaSuccess) << "mapped = device memory";
  Trace t = scangrade::emu::trace_end();
  ASSERT_EQ(t.host.size(), 2u);
  EXPECT_EQ(t.host[0].kind, Trace::HostKind::Mapped);
  EXPECT_EQ(t.host[0].flags, unsigned(cudaHostAllocMapped));
  EXPECT_EQ(t.host[1].kind, Trace::HostKind::DevicePointer);
  EXPECT_EQ(cudaFreeHost(host), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, d, 4, cudaMemcpyDeviceToDevice), cudaErrorInvalidValue) << "freed";
  cudaGetLastError();
}

TEST_F(EmuTrace, ManagedAndRegisteredMemory) {
  scangrade::emu::trace_begin();
  int* managed = nullptr;
  ASSERT_EQ(cudaMallocManaged(&managed, 512 * sizeof(int)), cudaSuccess);
  for (int i = 0; i < 512; ++i) managed[i] = 1;
  emu_trace_test::add_one(managed, 512, 2);
  EXPECT_EQ(managed[511], 2);
  std::vector<int> mine(256, 5);
  ASSERT_EQ(cudaHostRegister(mine.data(), mine.size() * sizeof(int), cudaHostRegisterMapped), cudaSuccess);
  int* dev = nullptr;
  ASSERT_EQ(cudaHostGetDevicePointer(&dev, mine.data(), 0), cudaSuccess);
  EXPECT_EQ(dev, mine.data());
  Trace t = scangrade::emu::trace_end();
  ASSERT_EQ(t.host.size(), 3u);
  EXPECT_EQ(t.host[0].kind, Trace::HostKind::Managed);
  EXPECT_EQ(t.host[0].bytes, 512 * sizeof(int));
  EXPECT_EQ(t.host[1].kind, Trace::HostKind::Registered);
  EXPECT_EQ(t.host[2].kind, Trace::HostKind::DevicePointer);
  EXPECT_EQ(scangrade::emu::bytes_in_use(), 0u) << "managed memory is not in the cudaMalloc balance";
  EXPECT_EQ(cudaHostUnregister(mine.data()), cudaSuccess);
  EXPECT_EQ(cudaFree(managed), cudaSuccess);
  EXPECT_EQ(cudaHostGetDevicePointer(&dev, mine.data(), 0), cudaErrorInvalidValue) << "unregistered";
  cudaGetLastError();
}

TEST_F(EmuTrace, ResetFreesEverythingButRegisteredMemory) {
  std::vector<int> mine(64, 1);
  void *pinned = nullptr, *mapped = nullptr, *managed = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 64), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(&mapped, 64, cudaHostAllocMapped), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&managed, 64), cudaSuccess);
  ASSERT_EQ(cudaHostRegister(mine.data(), 256, 0), cudaSuccess);
  scangrade::emu::reset();  // must neither double-free the mapped block nor free `mine`
  EXPECT_EQ(mine[63], 1);
}

}  // namespace
