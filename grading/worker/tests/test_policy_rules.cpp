// The run-time policy rules (policy_rules.h) on hand-made traces: each rule's evidence and message.
#include <gtest/gtest.h>

#include <string>

#include "policy_rules.h"

namespace scangrade::grader::policy {
namespace {

TEST(PolicyRules, CleanHierarchicalCallSaysNothing) {
  Trace t;
  t.launch("_ZN9scangrade7student12_GLOBAL__N_110scan_tilesIiEEvPKT_PS3_S6_mb", 3);
  t.launch("_ZN9scangrade7student12_GLOBAL__N_110scan_tilesIiEEvPKT_PS3_S6_mb", 1);
  t.copy("cudaMemcpyAsync", CopyDirection::DeviceToHost, 8);  // a tile count: under the limit
  t.copy("cudaMemcpy", CopyDirection::Other, 1 << 20);        // device to device
  Findings f = evaluate(t, Slot::Hierarchical);
  EXPECT_EQ(f.violation, "");
  EXPECT_EQ(f.rule, "");
  EXPECT_EQ(f.pinned_leaked_bytes, 0);
  EXPECT_EQ(f.pinned_detail, "");
}

TEST(PolicyRules, RoundTripOverTheLimitIsHostCompute) {
  Trace t;
  t.copy("cudaMemcpy", CopyDirection::DeviceToHost, 1048576);
  t.copy("cudaMemcpy", CopyDirection::HostToDevice, 1048576);
  Findings f = evaluate(t, Slot::Hierarchical);
  EXPECT_EQ(f.rule, "host_compute");
  EXPECT_EQ(f.violation,
            "the slot read 1048576 bytes back from the device and then sent 1048576 bytes to it (read: cudaMemcpy "
            "1048576 bytes; sent, in all: cudaMemcpy 1048576 bytes): data read on the host and results written back "
            "is a scan computed on the host, which is not allowed, whatever the door (copies of any kind, memsets, "
            "kernel parameters, symbols); keep the data on the device. A read-back followed by at most 2048 bytes "
            "sent to the device (one value per 16 elements, such as tile sums) is allowed, and so are copies in one "
            "direction only (a debug print, an upload of initial values).");
}

TEST(PolicyRules, RoundTripLimitIsEachWayAndInclusive) {
  Trace t;
  t.copy("cudaMemcpyAsync", CopyDirection::DeviceToHost, 2048);
  t.copy("cuMemcpyHtoD_v2", CopyDirection::HostToDevice, 2048);
  EXPECT_EQ(evaluate(t, Slot::SinglePass).rule, "");  // exactly 2048 each way: allowed
  t.copy("cudaMemcpyAsync", CopyDirection::DeviceToHost, 1);
  EXPECT_EQ(evaluate(t, Slot::SinglePass).rule, "") << "the last byte read came after the last write";
  t.copy("cuMemcpyHtoD_v2", CopyDirection::HostToDevice, 1);
  Findings f = evaluate(t, Slot::SinglePass);
  EXPECT_EQ(f.rule, "host_compute");
  EXPECT_NE(f.violation.find("read 2049 bytes back from the device and then sent 2049 bytes to it (read: "
                             "cudaMemcpyAsync 2049 bytes; sent, in all: cuMemcpyHtoD_v2 2049 bytes)"),
            std::string::npos)
      << f.violation;
}

TEST(PolicyRules, DebugPrintCopiesToTheHostAreAllowed) {
  // a hierarchical slot copying its block sums and a few tiles to the host to print them: 8 KiB, one way
  Trace t;
  t.launch("_ZN9scangrade7student10scan_tilesEPKiPiS2_m", 512);
  t.copy("cudaMemcpy", CopyDirection::DeviceToHost, 2048);
  t.copy("cudaMemcpy", CopyDirection::DeviceToHost, 6144);
  t.copy("cudaMemcpyAsync", CopyDirection::HostToDevice, 8);  // then a scalar goes back: still no round trip
  Findings f = evaluate(t, Slot::Hierarchical);
  EXPECT_EQ(f.rule, "") << f.violation;
}

TEST(PolicyRules, InitialUploadsAreAllowed) {
  // a single-pass slot uploading its initial flags and sums (host->device only, before anything is read back)
  Trace t;
  t.copy("cudaMemcpyAsync", CopyDirection::HostToDevice, 1 << 16);
  t.copy("cudaMemcpyAsync", CopyDirection::HostToDevice, 1 << 16);
  t.launch("_ZN9scangrade7student11single_passEPKiPim", 256);
  EXPECT_EQ(evaluate(t, Slot::SinglePass).rule, "");
  t.copy("cudaMemcpy", CopyDirection::DeviceToHost, 1 << 16);  // and a debug print afterwards
  EXPECT_EQ(evaluate(t, Slot::SinglePass).rule, "") << "uploads before the read-back depend on no device data";
  t.copy("cudaMemcpy", CopyDirection::HostToDevice, 1 << 16);  // the same data written back: a round trip
  EXPECT_EQ(evaluate(t, Slot::SinglePass).rule, "host_compute");
}

TEST(PolicyRules, PinnedStagingIsNamedOnlyWithLargeCopies) {
  Trace t;
  int buffer = 0;
  t.host_use(HostMemory::Pinned, "cudaMallocHost", 4096);
  t.pinned_alloc(&buffer, 4096, "cudaMallocHost");
  Findings alone = evaluate(t, Slot::Hierarchical);
  EXPECT_EQ(alone.rule, "") << "a pinned allocation alone is not a violation";
  EXPECT_EQ(alone.pinned_leaked_bytes, 4096);
  EXPECT_EQ(alone.pinned_detail, "4096 bytes from cudaMallocHost without cudaFreeHost");
  t.copy("cudaMemcpyAsync", CopyDirection::DeviceToHost, 8192);
  EXPECT_EQ(evaluate(t, Slot::Hierarchical).rule, "") << "a copy to the host alone is not a round trip";
  t.copy("cudaMemcpyAsync", CopyDirection::HostToDevice, 8192);
  Findings staged = evaluate(t, Slot::Hierarchical);
  EXPECT_EQ(staged.rule, "host_compute");
  EXPECT_NE(staged.violation.find(", staged in page-locked host memory (cudaMallocHost): data read on the host"),
            std::string::npos)
      << staged.violation;
}

TEST(PolicyRules, PinnedFreesAndLeaks) {
  Trace t;
  int a = 0, b = 0, c = 0, older = 0;
  t.pinned_alloc(&a, 100, "cudaMallocHost");
  t.pinned_alloc(&b, 200, "cudaMallocHost");
  t.pinned_alloc(&c, 50, "cuMemHostAlloc");
  t.pinned_free(&older);  // allocated before the call: changes nothing
  EXPECT_EQ(evaluate(t, Slot::Blelloch).pinned_leaked_bytes, 350);
  EXPECT_EQ(evaluate(t, Slot::Blelloch).pinned_detail,
            "300 bytes in 2 allocations from cudaMallocHost and 50 bytes from cuMemHostAlloc without "
            "cudaFreeHost/cuMemFreeHost");
  t.pinned_free(&a);
  t.pinned_free(&b);
  t.pinned_free(&c);
  EXPECT_EQ(evaluate(t, Slot::Blelloch).pinned_leaked_bytes, 0);
  EXPECT_EQ(evaluate(t, Slot::Blelloch).pinned_detail, "");
}

TEST(PolicyRules, ManagedMappedRegisteredAreHostCompute) {
  Trace managed;
  managed.host_use(HostMemory::Managed, "cudaMallocManaged", 4096);
  Findings f = evaluate(managed, Slot::Hierarchical);
  EXPECT_EQ(f.rule, "host_compute");
  EXPECT_EQ(f.violation,
            "the slot allocated managed memory (cudaMallocManaged, 4096 bytes): memory that both the host and the "
            "device can reach lets the host compute the scan, which is not allowed; keep the data in device memory "
            "(cudaMalloc/cudaMallocAsync).");

  Trace mapped;
  mapped.host_use(HostMemory::Mapped, "cudaHostAlloc(cudaHostAllocMapped)", 8192);
  mapped.host_use(HostMemory::DevicePointer, "cudaHostGetDevicePointer", 0);
  mapped.host_use(HostMemory::DevicePointer, "cudaHostGetDevicePointer", 0);  // said once
  f = evaluate(mapped, Slot::Hierarchical);
  EXPECT_EQ(f.rule, "host_compute");
  EXPECT_EQ(f.violation.substr(0, f.violation.find(':')),
            "the slot allocated mapped page-locked host memory (cudaHostAlloc(cudaHostAllocMapped), 8192 bytes) and "
            "took a device pointer to host memory (cudaHostGetDevicePointer)");

  Trace registered;
  registered.host_use(HostMemory::Registered, "cuMemHostRegister_v2", 64);
  EXPECT_EQ(evaluate(registered, Slot::SinglePass).rule, "host_compute");
}

TEST(PolicyRules, LibraryKernels) {
  EXPECT_TRUE(is_library_kernel("_ZN3cub18CUB_300000_SM_900_NS6detail4scan16DeviceScanKernelINS0_"));
  EXPECT_TRUE(is_library_kernel("void cub::CUB_300000_SM_900::DeviceScanKernel<...>(...)"));
  EXPECT_TRUE(is_library_kernel("_ZN6thrust20THRUST_300000_SM_900_NS8cuda_cub4core6_kernel_agentIN"));
  EXPECT_TRUE(is_library_kernel("_Z10my_wrapperIN4mgpu8scan_tEEvv"));
  EXPECT_FALSE(is_library_kernel("_ZN9scangrade7student12_GLOBAL__N_110scan_tilesIiEEvPKT_PS3_S6_mb"));
  EXPECT_FALSE(is_library_kernel("<kernel at student/hierarchical.cu:42>"));

  Trace t;
  std::string name = "_ZN3cub18CUB_300000_SM_900_NS6detail4scan16DeviceScanKernelINS0_" + std::string(200, 'x');
  t.launch(name, 40);
  Findings f = evaluate(t, Slot::Hierarchical);
  EXPECT_EQ(f.rule, "library");
  EXPECT_EQ(f.violation, "the slot launched a library kernel: " + name.substr(0, kNameShown) +
                             "... (CUB and Thrust are not allowed in this assignment).");
}

TEST(PolicyRules, SingleBlockSlotsLaunchOneBlock) {
  Trace t;
  t.launch("hs_kernel", 1);
  EXPECT_EQ(evaluate(t, Slot::HillisSteele).rule, "");
  t.launch("hs_kernel", 2);
  Findings f = evaluate(t, Slot::HillisSteele);
  EXPECT_EQ(f.rule, "launch");
  EXPECT_EQ(f.violation,
            "the slot launched kernel hs_kernel with a grid of 2 blocks: the Hillis-Steele slot is a single-block "
            "scan (one block, one element per thread, n <= kHillisSteeleMaxN = 1024); launch exactly one block.");
  t.launch("fixup", 3);
  f = evaluate(t, Slot::Blelloch);
  EXPECT_NE(f.violation.find("hs_kernel with a grid of 2 blocks (and 1 other kernel with a grid other than one block): "
                             "the Blelloch slot is a single-block scan (one block, two elements per thread, n <= "
                             "kBlellochMaxN = 2048)"),
            std::string::npos)
      << f.violation;
  EXPECT_EQ(evaluate(t, Slot::Hierarchical).rule, "") << "multi-block slots may launch any grid";
}

TEST(PolicyRules, SeveralViolationsFirstRuleWins) {
  Trace t;
  t.launch("_ZN6thrust8cuda_cub4core13_kernel_agentE", 4);
  t.copy("cudaMemcpy", CopyDirection::DeviceToHost, 1 << 16);
  t.copy("cudaMemcpy", CopyDirection::HostToDevice, 1 << 16);
  Findings f = evaluate(t, Slot::HillisSteele);
  EXPECT_EQ(f.rule, "library");
  EXPECT_NE(f.violation.find("library kernel"), std::string::npos);
  EXPECT_NE(f.violation.find("back from the device"), std::string::npos);
  EXPECT_NE(f.violation.find("single-block scan"), std::string::npos);
}

TEST(PolicyRules, EveryDoorToTheDeviceCountsAfterARead) {
  // the same host scan of 4096 int32 values sent back by memsets and kernel parameters instead of a copy
  Trace t;
  t.data_bytes = 4096 * 4;
  for (int i = 0; i < 100; ++i) t.upload("kernel parameters", 64);  // launches before any read: nothing depends on them
  t.copy("cudaMemcpy", CopyDirection::DeviceToHost, 4096 * 4);
  EXPECT_EQ(evaluate(t, Slot::Hierarchical).rule, "");
  for (int i = 0; i < 4; ++i) t.upload("kernel parameters", 4096);
  Findings f = evaluate(t, Slot::Hierarchical);
  EXPECT_EQ(f.rule, "host_compute");
  EXPECT_NE(f.violation.find("sent, in all: kernel parameters 22784 bytes"), std::string::npos) << f.violation;

  Trace m;
  m.data_bytes = 1024 * 4;
  m.copy("cudaMemcpy", CopyDirection::DeviceToHost, 1024 * 4);
  for (int i = 0; i < 256; ++i) m.upload("cudaMemsetAsync", kMemsetBytes);  // 2048 bytes: at the line
  EXPECT_EQ(evaluate(m, Slot::Hierarchical).rule, "");
  m.upload("cudaMemsetAsync", kMemsetBytes);
  EXPECT_EQ(evaluate(m, Slot::Hierarchical).rule, "host_compute");
}

TEST(PolicyRules, GatheringOneValuePerTileAfterAReadBackIsAllowed) {
  // a hierarchical scan that copies its 4 MiB output to the host to gather each 1024-element tile's
  // total and uploads the 1024 totals (4 KiB) for the next level
  Trace t;
  t.data_bytes = std::int64_t(1) << 22;
  t.copy("cudaMemcpy", CopyDirection::DeviceToHost, std::int64_t(1) << 22);
  t.copy("cudaMemcpy", CopyDirection::HostToDevice, 4096);
  for (int i = 0; i < 3; ++i) t.upload("kernel parameters", 32);
  EXPECT_EQ(t.upload_limit(), (std::int64_t(1) << 22) / 16);
  EXPECT_EQ(evaluate(t, Slot::Hierarchical).rule, "");
  t.copy("cudaMemcpy", CopyDirection::HostToDevice, std::int64_t(1) << 22);  // the whole array written back
  EXPECT_EQ(evaluate(t, Slot::Hierarchical).rule, "host_compute");
}

}  // namespace
}  // namespace scangrade::grader::policy
