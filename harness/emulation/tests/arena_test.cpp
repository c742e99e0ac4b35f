// Tests of the emulated device memory (src/arena.h): layout, silent slack, faulting guards turned into
// a sticky cudaErrorIllegalAddress, frees of pointers that are not live allocations, a host heap that
// no wild write reaches.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <scangrade/emu.h>

#include "arena_kernels.h"
#include "scangrade/emu_slack.h"

namespace {

using scangrade::emu::ThreadOrder;

constexpr std::size_t kMiB = std::size_t{1} << 20;

class Arena : public ::testing::Test {
 protected:
  void SetUp() override {
    scangrade::emu::reset();
    scangrade::emu::set_thread_order(ThreadOrder::Forward);
  }
  void TearDown() override {
    scangrade::emu::reset();
    scangrade::emu::set_thread_order(ThreadOrder::Forward);
  }
};

int* device_ints(std::size_t count) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, count * sizeof(int)), cudaSuccess);
  return static_cast<int*>(p);
}

std::string diagnostic() { return scangrade::emu::last_diagnostic(); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// Resident set size of this process, in bytes.
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// ---- layout -------------------------------------------------------------------------------------

TEST_F(Arena, PointersAreAlignedAndRoundedTo2MiB) {
  // 1, 3: smaller than any alignment; 256: exactly CUDA's guaranteed alignment; 2 MiB +- 1: around
  // the granule; 2 MiB - 64 KiB: the last size that still has 64 KiB of slack in one granule
  const std::size_t sizes[] = {1, 3, 256, 1000, 4096, 2 * kMiB - 64 * 1024, 2 * kMiB - 1, 2 * kMiB, 2 * kMiB + 1};
  std::vector<std::uintptr_t> bases;
  for (std::size_t size : sizes) {
    void* p = nullptr;
    ASSERT_EQ(cudaMalloc(&p, size), cudaSuccess) << size;
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    EXPECT_EQ(a % 256, 0u) << size;            // CUDA's promise
    EXPECT_EQ(a % (2 * kMiB), 0u) << size;     // the model: one granule-aligned span each
    const std::size_t mapped = scangrade::emu::mapped_bytes(size);
    EXPECT_EQ(mapped % (2 * kMiB), 0u);
    EXPECT_GE(mapped, size + 64 * 1024) << size;
    EXPECT_LT(mapped, size + 64 * 1024 + 2 * kMiB) << size;
    bases.push_back(a);
  }
  EXPECT_EQ(scangrade::emu::mapped_bytes(1000), 2 * kMiB);
  EXPECT_EQ(scangrade::emu::mapped_bytes(2 * kMiB - 1), 4 * kMiB);  // less than 64 KiB of slack: one more granule
  EXPECT_EQ(scangrade::emu::bytes_in_use(), std::accumulate(std::begin(sizes), std::end(sizes), std::size_t{0}));
  for (std::uintptr_t a : bases) EXPECT_EQ(cudaFree(reinterpret_cast<void*>(a)), cudaSuccess);
  EXPECT_EQ(scangrade::emu::bytes_in_use(), 0u);
}

TEST_F(Arena, NewAllocationsArePoisonedUnlessDisabled) {
  int* d = device_ints(100);
  std::vector<int> h(100);
  ASSERT_EQ(cudaMemcpy(h.data(), d, 400, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int v : h) EXPECT_EQ(static_cast<unsigned>(v), 0xFFFFFFFFu);
  scangrade::emu::set_poison(false);
  int* z = device_ints(100);
  ASSERT_EQ(cudaMemcpy(h.data(), z, 400, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int v : h) EXPECT_EQ(v, 0);  // fresh pages
  scangrade::emu::set_poison(true);
}

TEST_F(Arena, LargeAllocationsAreLazy) {
  scangrade::emu::set_poison(false);  // poison touches every requested byte, by design
  const std::size_t before = resident_bytes();
  const auto start = std::chrono::steady_clock::now();
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, std::size_t{1} << 30), cudaSuccess);  // 2^28 int32
  void* q = nullptr;
  ASSERT_EQ(cudaMalloc(&q, std::size_t{1} << 28), cudaSuccess);  // 2^26 int32
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(resident_bytes(), before + 64 * kMiB);
  EXPECT_LT(ms, 500.0);
  // the last element of each is usable
  EXPECT_EQ(arena_test::write_at(static_cast<int*>(p), (std::size_t{1} << 28) - 1, 5), cudaSuccess);
  EXPECT_EQ(arena_test::write_at(static_cast<int*>(q), (std::size_t{1} << 26) - 1, 5), cudaSuccess);
  EXPECT_EQ(scangrade::emu::bytes_in_use(), (std::size_t{1} << 30) + (std::size_t{1} << 28));
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(cudaFree(q), cudaSuccess);
  scangrade::emu::set_poison(true);
}

TEST_F(Arena, AsyncManagedAndPinnedAllocationsLiveInTheArena) {
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  void* a = nullptr;
  ASSERT_EQ(cudaMallocAsync(&a, 1000, stream), cudaSuccess);
  EXPECT_EQ(scangrade::emu::pool_bytes_in_use(), 1000u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % (2 * kMiB), 0u);
  EXPECT_EQ(cudaFreeAsync(a, stream), cudaSuccess);
  EXPECT_EQ(scangrade::emu::pool_bytes_in_use(), 0u);

  int* m = nullptr;
  ASSERT_EQ(cudaMallocManaged(&m, 64 * sizeof(int)), cudaSuccess);
  m[63] = 7;  // host access
  EXPECT_EQ(arena_test::write_at(m, 63, 8), cudaSuccess);
  EXPECT_EQ(m[63], 8);
  // a kernel's wild write past managed memory faults instead of reaching the heap
  EXPECT_EQ(arena_test::write_at(m, static_cast<long long>(scangrade::emu::mapped_bytes(256) / 4), 1),
            cudaErrorIllegalAddress);
  scangrade::emu::clear_error();
  EXPECT_EQ(cudaFree(m), cudaSuccess);

  int* h = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&h), 4096), cudaSuccess);
  h[1023] = 3;
  EXPECT_EQ(cudaFreeHost(h), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// ---- slack and guards ---------------------------------------------------------------------------

TEST_F(Arena, WritesAndReadsInTheSlackAreSilent) {
  int* d = device_ints(100);
  const long long last = static_cast<long long>(scangrade::emu::mapped_bytes(400) / sizeof(int)) - 1;
  EXPECT_EQ(arena_test::write_at(d, 100, 1), cudaSuccess);   // one past the end
  EXPECT_EQ(arena_test::write_at(d, 1100, 1), cudaSuccess);  // a 1024-element tile past the end
  EXPECT_EQ(arena_test::write_at(d, last, 1), cudaSuccess);  // the last mapped element
  int v = 0;
  EXPECT_EQ(arena_test::read_at(d, last, &v), cudaSuccess);
  EXPECT_EQ(v, 1);
  EXPECT_EQ(arena_test::read_at(d, 5000, &v), cudaSuccess);
  // exactly one granule: a tile read past its end still finds mapped slack (at least 64 KiB)
  int* whole = device_ints(2 * kMiB / sizeof(int));
  EXPECT_EQ(arena_test::read_at(whole, 2 * kMiB / sizeof(int) + 2047, &v), cudaSuccess);
  EXPECT_EQ(arena_test::write_at(whole, 2 * kMiB / sizeof(int) + 16383, 1), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaFree(whole), cudaSuccess);
}

TEST_F(Arena, WritePastTheMappedPartIsAStickyIllegalAddress) {
  int* d = device_ints(100);
  const long long past = static_cast<long long>(scangrade::emu::mapped_bytes(400) / sizeof(int));
  EXPECT_EQ(arena_test::write_at(d, past, 1), cudaErrorIllegalAddress);
  const std::string diag = diagnostic();
  EXPECT_TRUE(contains(diag, "a write ")) << diag;
  EXPECT_TRUE(contains(diag, " bytes past the end of the 400-byte allocation at ")) << diag;
  EXPECT_TRUE(contains(diag, "cudaErrorIllegalAddress")) << diag;
  EXPECT_TRUE(contains(diag, "arena_kernels.cu:")) << diag;
  EXPECT_TRUE(contains(diag, "block (0,0,0) thread (0,0,0)")) << diag;
  EXPECT_STREQ(cudaGetErrorString(cudaErrorIllegalAddress), "an illegal memory access was encountered");
  // sticky: every call fails until the error is cleared (a fresh process on a GPU)
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 16), cudaErrorIllegalAddress);
  scangrade::emu::clear_error();
  EXPECT_EQ(arena_test::write_at(d, 0, 1), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
}

TEST_F(Arena, ReadPastTheMappedPartFaultsToo) {
  int* d = device_ints(100);
  int v = 0;
  EXPECT_EQ(arena_test::read_at(d, static_cast<long long>(scangrade::emu::mapped_bytes(400) / 4) + 10, &v),
            cudaErrorIllegalAddress);
  EXPECT_TRUE(contains(diagnostic(), "a read ")) << diagnostic();
}

TEST_F(Arena, FarWritesFaultInEveryThreadOrder) {
  // 1024 threads writing a whole 2 MiB apart each, from 1 MiB past the end: in reverse order the
  // farthest write (2 GiB away) comes first and must fault too
  for (ThreadOrder order : {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random}) {
    scangrade::emu::set_thread_order(order, 3);
    int* d = device_ints(100);
    EXPECT_EQ(arena_test::write_strided(d, (2 * kMiB + kMiB) / 4, 2 * kMiB / 4, 1024, 9), cudaErrorIllegalAddress)
        << scangrade::emu::to_string(order);
    scangrade::emu::clear_error();
    EXPECT_EQ(cudaFree(d), cudaSuccess);
  }
}

TEST_F(Arena, NullPointerWriteIsAnIllegalAddress) {
  EXPECT_EQ(arena_test::write_at(nullptr, 3, 1), cudaErrorIllegalAddress);
  EXPECT_TRUE(contains(diagnostic(), "segmentation fault (invalid memory access) at address")) << diagnostic();
  EXPECT_TRUE(contains(diagnostic(), "a null pointer")) << diagnostic();
}

constexpr long long kFrontSlack = 64 << 10;  // bytes mapped before every allocation (arena.h: kMinSlack)

TEST_F(Arena, WriteJustBeforeTheStartIsSilentAsOnAGpu) {
  // p[-1] lands in the front slack (on a GPU: a neighbour or slack in the same 2 MiB page)
  int* d = device_ints(100);
  EXPECT_EQ(arena_test::write_at(d, -1, 1), cudaSuccess) << diagnostic();
  EXPECT_EQ(arena_test::write_at(d, -kFrontSlack / 4, 1), cudaSuccess) << diagnostic();
  EXPECT_EQ(cudaFree(d), cudaSuccess);
}

TEST_F(Arena, WatchedSlackNamesAWriteOnEitherSide) {
  scangrade::emu::watch_slack(true);
  int* d = device_ints(100);
  EXPECT_EQ(scangrade::emu::slack_write(), "");
  EXPECT_EQ(arena_test::write_at(d, 99, 1), cudaSuccess);
  EXPECT_EQ(scangrade::emu::slack_write(), "") << "a write inside the allocation";
  EXPECT_EQ(arena_test::write_at(d, -1, 1), cudaSuccess);
  EXPECT_EQ(scangrade::emu::slack_write(), "a write 4 bytes before the start of the 400-byte allocation the slot made");
  scangrade::emu::watch_slack(true);  // forgets d: only allocations made from now on are watched
  EXPECT_EQ(scangrade::emu::slack_write(), "");
  int* e = device_ints(100);
  EXPECT_EQ(arena_test::write_at(e, 101, 1), cudaSuccess);  // inside the rounding to 256, poisoned
  EXPECT_EQ(cudaFree(e), cudaSuccess);  // found when freed, kept after
  EXPECT_EQ(scangrade::emu::slack_write(), "a write 4 bytes past the end of the 400-byte allocation the slot made");
  scangrade::emu::watch_slack(true);
  int* g = device_ints(100);
  EXPECT_EQ(arena_test::write_at(g, 130, 1), cudaSuccess);  // past the rounding
  EXPECT_EQ(scangrade::emu::slack_write(), "a write 120 bytes past the end of the 400-byte allocation the slot made");
  EXPECT_EQ(cudaFree(g), cudaSuccess);
  scangrade::emu::watch_slack(false);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(scangrade::emu::slack_write(), "");
}

TEST_F(Arena, WriteFarBeforeTheStartFaults) {
  int* d = device_ints(100);
  EXPECT_EQ(arena_test::write_at(d, -kFrontSlack / 4 - 1, 1), cudaErrorIllegalAddress);
  EXPECT_TRUE(contains(diagnostic(), std::to_string(kFrontSlack + 4) + " bytes before the start of the 400-byte "
                                     "allocation")) << diagnostic();
}

TEST_F(Arena, UseAfterFreeFaults) {
  int* d = device_ints(100);
  ASSERT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(arena_test::write_at(d, 0, 1), cudaErrorIllegalAddress);
  EXPECT_TRUE(contains(diagnostic(), "which was freed")) << diagnostic();
}

TEST_F(Arena, DeviceStackOverflowIsAnIllegalAddress) {
  EXPECT_EQ(arena_test::recurse(10), cudaSuccess);
  EXPECT_EQ(arena_test::recurse(100000), cudaErrorIllegalAddress);
  EXPECT_TRUE(contains(diagnostic(), "stack overflow")) << diagnostic();
}

TEST_F(Arena, FaultWhileOtherThreadsWaitAtABarrier) {
  int* d = device_ints(16);
  const long long past = static_cast<long long>(scangrade::emu::mapped_bytes(64) / 4);
  EXPECT_EQ(arena_test::write_at_after_barrier(d, past), cudaErrorIllegalAddress);
  EXPECT_TRUE(contains(diagnostic(), "block (1,0,0) thread (5,0,0) (warp 0 lane 5)")) << diagnostic();
  scangrade::emu::clear_error();
  EXPECT_EQ(arena_test::write_at_after_barrier(d, 0), cudaSuccess);  // the scheduler recovered
}

TEST_F(Arena, ManyFaultsInOneProcess) {
  // every fault leaves the signal unblocked and the handler installed for the next launch
  int* d = device_ints(16);
  const long long past = static_cast<long long>(scangrade::emu::mapped_bytes(64) / 4);
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(arena_test::write_at(d, past + i, 1), cudaErrorIllegalAddress) << i;
    scangrade::emu::clear_error();
    ASSERT_EQ(arena_test::write_at(d, i, 1), cudaSuccess) << i;
  }
}

TEST_F(Arena, WildWritesLeaveTheHostHeapIntact) {
  std::vector<int> big(1 << 20);
  std::iota(big.begin(), big.end(), 0);
  std::vector<void*> small;
  for (int i = 0; i < 100; ++i) small.push_back(std::malloc(24 + i));
  int* d = device_ints(100);
  // a tile past the end (silent), then ever farther (faults), under each order
  EXPECT_EQ(arena_test::write_strided(d, 100, 1, 1024, -1), cudaSuccess);
  for (ThreadOrder order : {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random}) {
    scangrade::emu::set_thread_order(order, 11);
    EXPECT_EQ(arena_test::write_strided(d, 0, 4096, 1024, -1), cudaErrorIllegalAddress);
    scangrade::emu::clear_error();
  }
  for (int i = 0; i < (1 << 20); ++i) ASSERT_EQ(big[i], i);
  for (void* p : small) std::free(p);
  std::vector<std::string> strings(1000, std::string(100, 'x'));  // the allocator still works
  EXPECT_EQ(strings[999].size(), 100u);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
}

// ---- frees of pointers that are not live allocations --------------------------------------------

TEST_F(Arena, FreeOfAHostPointerReturnsInvalidValueAndFreesNothing) {
  int* host = static_cast<int*>(std::malloc(64 * sizeof(int)));
  host[0] = 42;
  int* d = device_ints(100);
  EXPECT_EQ(cudaFree(host), cudaErrorInvalidValue);
  EXPECT_TRUE(contains(diagnostic(), "was not returned by cudaMalloc")) << diagnostic();
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);  // recorded as the last error ...
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);            // ... and not sticky
  EXPECT_EQ(host[0], 42);
  std::free(host);  // still the heap's
  EXPECT_EQ(scangrade::emu::bytes_in_use(), 400u);
  EXPECT_EQ(arena_test::write_at(d, 99, 1), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
}

TEST_F(Arena, DoubleFreeReturnsInvalidValue) {
  int* d = device_ints(100);
  ASSERT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaErrorInvalidValue);
  EXPECT_TRUE(contains(diagnostic(), "already freed")) << diagnostic();
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 16), cudaSuccess);  // the process carries on
  EXPECT_EQ(cudaFree(p), cudaSuccess);
}

TEST_F(Arena, FreeOfAnInteriorPointerReturnsInvalidValueAndKeepsTheAllocation) {
  int* d = device_ints(100);
  EXPECT_EQ(cudaFree(d + 4), cudaErrorInvalidValue);
  EXPECT_TRUE(contains(diagnostic(), "points 16 bytes into the 400-byte allocation")) << diagnostic();
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(arena_test::write_at(d, 99, 1), cudaSuccess);  // still live
  EXPECT_EQ(scangrade::emu::bytes_in_use(), 400u);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
}

TEST_F(Arena, FreeAsyncAndFreeHostOfTheWrongKind) {
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  int x = 0;
  EXPECT_EQ(cudaFreeAsync(&x, stream), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  int* d = device_ints(8);
  EXPECT_EQ(cudaFreeHost(d), cudaErrorInvalidValue);
  EXPECT_TRUE(contains(diagnostic(), "is device memory: free it with cudaFree")) << diagnostic();
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  void* h = nullptr;
  ASSERT_EQ(cudaMallocHost(&h, 64), cudaSuccess);
  EXPECT_EQ(cudaFree(h), cudaErrorInvalidValue);
  EXPECT_TRUE(contains(diagnostic(), "free it with cudaFreeHost")) << diagnostic();
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFreeHost(h), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(h), cudaErrorInvalidValue);  // twice
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(nullptr), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(nullptr), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// ---- the grader's shared buffers ----------------------------------------------------------------

TEST_F(Arena, SharedMemoryFileGetsTheDeviceLayout) {
  const int fd = memfd_create("arena-test", 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 1000), 0);
  int* d = static_cast<int*>(scangrade::emu::map_shared_memory(fd, 1000));
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(d) % (2 * kMiB), 0u);
  EXPECT_EQ(arena_test::write_at(d, 249, 77), cudaSuccess);  // the file's last element
  EXPECT_EQ(arena_test::write_at(d, 2000, 1), cudaSuccess);  // slack past the file: silent
  EXPECT_EQ(arena_test::write_at(d, static_cast<long long>(scangrade::emu::mapped_bytes(1000) / 4), 1),
            cudaErrorIllegalAddress);
  scangrade::emu::clear_error();
  int back = 0;
  ASSERT_EQ(pread(fd, &back, sizeof back, 249 * sizeof(int)), static_cast<ssize_t>(sizeof back));
  EXPECT_EQ(back, 77);  // the owner sees the write
  EXPECT_EQ(cudaFree(d), cudaErrorInvalidValue);  // not the slot's to free
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(scangrade::emu::bytes_in_use(), 0u);  // in no balance
  scangrade::emu::unmap_shared_memory(d);
  EXPECT_EQ(arena_test::write_at(d, 0, 1), cudaErrorIllegalAddress);
  close(fd);
}

}  // namespace
