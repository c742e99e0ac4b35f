// Run-time policy monitor, CPU emulation backend (policy_monitor.h): the emulated runtime records
// what one slot call does (scangrade::emu::trace_begin / trace_end); this file turns that record into a
// policy::Trace, and evaluate() (policy_rules.h) decides exactly as on the GPU.
//
// The emulator knows no kernel names ("<kernel at FILE:LINE>", the launch site) and compiles no CUB or
// Thrust (the build refuses their headers first), so the library rule never fires here; the copy,
// host-memory, launch and pinned-leak evidence is the same as on the GPU.
#include <scangrade/emu.h>

#include <algorithm>
#include <string>

#include "policy_monitor.h"
#include "policy_rules.h"

namespace scangrade::grader::policy {
namespace {

Slot g_slot = Slot::Hierarchical;
bool g_open = false;
std::int64_t g_data_bytes = 0;

HostMemory host_memory(emu::Trace::HostKind kind) {
  switch (kind) {
    case emu::Trace::HostKind::Mapped: return HostMemory::Mapped;
    case emu::Trace::HostKind::DevicePointer: return HostMemory::DevicePointer;
    case emu::Trace::HostKind::Managed: return HostMemory::Managed;
    case emu::Trace::HostKind::Registered: return HostMemory::Registered;
    default: return HostMemory::Pinned;
  }
}

Trace translate(const emu::Trace& e) {
  Trace t;
  for (const emu::Trace::Copies& c : e.copies) {
    Trace::Copies& into = t.copies[c.api];
    into.d2h_bytes += std::int64_t(c.d2h_bytes);
    into.h2d_bytes += std::int64_t(c.h2d_bytes);
    into.largest = std::max(into.largest, std::int64_t(c.largest));
    into.count += std::int64_t(c.count);
  }
  for (const emu::Trace::Kernel& k : e.kernels) {
    t.kernels.push_back(Trace::Kernel{k.name, std::int64_t(k.launches), std::int64_t(k.max_blocks)});
  }
  t.d2h_so_far = std::int64_t(e.d2h_so_far);
  t.d2h_before_last_h2d = std::int64_t(e.d2h_before_last_h2d);
  t.h2d_after_first_d2h = std::int64_t(e.h2d_after_first_d2h);
  t.launches = std::int64_t(e.launches);
  for (const emu::Trace::HostEvent& h : e.host) {
    if (h.kind == emu::Trace::HostKind::FreeHost) {
      t.pinned_free(h.ptr);
      continue;
    }
    const bool mapped = h.kind == emu::Trace::HostKind::Mapped;
    t.host_use(host_memory(h.kind), mapped ? h.api + "(cudaHostAllocMapped)" : h.api, std::int64_t(h.bytes));
    if (h.kind == emu::Trace::HostKind::Pinned || mapped) t.pinned_alloc(h.ptr, std::int64_t(h.bytes), h.api);
  }
  return t;
}

}  // namespace

std::string install() { return ""; }

void begin(Slot slot, std::int64_t data_bytes, std::vector<DeviceRange>) {
  g_slot = slot;
  g_open = true;
  g_data_bytes = data_bytes;
  emu::trace_begin();
}

Findings end() {
  emu::Trace e = emu::trace_end();
  if (!g_open) return Findings{};
  g_open = false;
  Trace t = translate(e);
  t.data_bytes = g_data_bytes;
  return evaluate(t, g_slot);
}

}  // namespace scangrade::grader::policy
