// Run-time policy evidence: what the student's code does during one slot call (issue 11, item 3).
//
// The worker calls install() once at start, then around every slot call begin(slot), the slot, a
// synchronize, and end(). Two backends implement it: policy_monitor_cupti.cpp (the GPU: CUPTI
// callbacks on the runtime and driver APIs) and policy_monitor_emu.cpp (the CPU emulation backend:
// the emulated runtime records what it does). Both fill a policy::Trace; evaluate() in
// policy_rules.h turns it into Findings, so the rules and their messages are the same on both.
//
// In-process monitoring can be tampered with by code in the same process: treat it as evidence, not
// proof (the sandbox and the build-time checks are the other layers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scangrade/suite.h"  // Slot

namespace scangrade::grader::policy {

struct Findings {
  std::string violation;                 // "" when none; else one or more sentences naming the evidence
                                         // (rule + numbers + kernel names)
  std::string rule;                      // "" or the rule id of the first violation: "host_compute",
                                         // "library", "launch"
  std::int64_t pinned_leaked_bytes = 0;  // page-locked host memory allocated during the call and not freed
                                         // (cudaMallocHost/cudaHostAlloc/cuMemAllocHost/cuMemHostAlloc)
  std::string pinned_detail;             // e.g. "4096 bytes from cudaMallocHost without cudaFreeHost"
};

/// Once, at worker start, before any CUDA call of the student's. Returns "" or why monitoring is
/// unavailable (then every Findings says nothing, and the worker reports the reason).
std::string install();

/// Device memory the worker knows (the case's input and output mappings): copies from or to it are
/// device-side whatever the driver's pointer attributes say.
struct DeviceRange {
  const void* ptr;
  std::size_t bytes;
};

/// Around one slot call (the worker calls begin, the slot, synchronizes, then end). `data_bytes` is
/// the case's input size (n * sizeof(T)): it sets how much the host may send the device after a
/// read-back (policy_rules.h).
void begin(Slot slot, std::int64_t data_bytes, std::vector<DeviceRange> device);
Findings end();

}  // namespace scangrade::grader::policy
