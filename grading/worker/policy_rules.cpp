// Run-time policy rules (policy_rules.h): recording into a Trace, and the rules with their messages.
#include "policy_rules.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace scangrade::grader::policy {

// ---- recording ----------------------------------------------------------------------------------

void Trace::copy(const std::string& api, CopyDirection direction, std::int64_t bytes) {
  if (direction == CopyDirection::Other || bytes <= 0) return;
  Copies& c = copies[api];
  (direction == CopyDirection::DeviceToHost ? c.d2h_bytes : c.h2d_bytes) += bytes;
  c.largest = std::max(c.largest, bytes);
  ++c.count;
  if (direction == CopyDirection::DeviceToHost) {
    d2h_so_far += bytes;
  } else if (d2h_so_far > 0) {
    h2d_after_first_d2h += bytes;
    d2h_before_last_h2d = d2h_so_far;
  }
}

void Trace::launch(const std::string& kernel, std::int64_t blocks) {
  ++launches;
  for (Kernel& k : kernels) {
    if (k.name == kernel) {
      ++k.launches;
      k.max_blocks = std::max(k.max_blocks, blocks);
      return;
    }
  }
  if (kernels.size() < kKernelsKept) {
    kernels.push_back(Kernel{kernel, 1, blocks});
  } else if (blocks > 1) {  // keep the evidence of a multi-block launch in the last entry
    Kernel& last = kernels.back();
    if (last.max_blocks <= 1) last = Kernel{kernel, 1, blocks};
  }
}

void Trace::host_use(HostMemory kind, const std::string& api, std::int64_t bytes) {
  if (host_memory.size() < kKernelsKept) host_memory.push_back(HostUse{kind, api, bytes});
}

void Trace::pinned_alloc(const void* ptr, std::int64_t bytes, const std::string& api) {
  if (ptr != nullptr) pinned_live[reinterpret_cast<std::uintptr_t>(ptr)] = Pinned{api, bytes};
}

void Trace::pinned_free(const void* ptr) { pinned_live.erase(reinterpret_cast<std::uintptr_t>(ptr)); }

// ---- rules --------------------------------------------------------------------------------------

namespace {

std::string shown(const std::string& name) {
  return name.size() <= kNameShown ? name : name.substr(0, kNameShown) + "...";
}

std::string plural(std::int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) s += i + 1 == parts.size() ? " and " : ", ";
    s += parts[i];
  }
  return s;
}

std::string slot_title(Slot slot) {
  switch (slot) {
    case Slot::HillisSteele: return "Hillis-Steele";
    case Slot::Blelloch: return "Blelloch";
    case Slot::Hierarchical: return "hierarchical";
    case Slot::SinglePass: return "single-pass";
  }
  return "this";
}

// library: the first library kernel
std::string library_rule(const Trace& t) {
  for (const Trace::Kernel& k : t.kernels) {
    if (is_library_kernel(k.name)) {
      return "the slot launched a library kernel: " + shown(k.name) +
             " (CUB and Thrust are not allowed in this assignment).";
    }
  }
  return "";
}

// host_compute (a): data read back from the device, then more than the upload limit sent to it
std::string copy_rule(const Trace& t) {
  const std::int64_t read = t.d2h_before_last_h2d, written = t.h2d_after_first_d2h;
  if (read <= kRoundTripLimit || written <= t.upload_limit()) return "";
  std::vector<std::string> reads, sends;
  for (const auto& [api, c] : t.copies) {
    if (c.d2h_bytes > 0) reads.push_back(api + " " + plural(c.d2h_bytes, "byte", "bytes"));
    if (c.h2d_bytes > 0) sends.push_back(api + " " + plural(c.h2d_bytes, "byte", "bytes"));
  }
  std::vector<std::string> pinned;
  for (const Trace::HostUse& u : t.host_memory) {
    if (u.kind == HostMemory::Pinned && std::find(pinned.begin(), pinned.end(), u.api) == pinned.end()) {
      pinned.push_back(u.api);
    }
  }
  std::string s = "the slot read " + plural(read, "byte", "bytes") + " back from the device and then sent " +
                  plural(written, "byte", "bytes") + " to it (read: " + join(reads) + "; sent, in all: " +
                  join(sends) + ")";
  if (!pinned.empty()) s += ", staged in page-locked host memory (" + join(pinned) + ")";
  return s + ": data read on the host and results written back is a scan computed on the host, which is not "
             "allowed, whatever the door (copies of any kind, memsets, kernel parameters, symbols); keep the data "
             "on the device. A read-back followed by at most " + plural(t.upload_limit(), "byte", "bytes") +
         " sent to the device (one value per " + std::to_string(kUploadFraction) +
         " elements, such as tile sums) is allowed, and so are copies in one direction only (a debug print, an "
         "upload of initial values).";
}

// host_compute (b): managed, mapped, registered host memory
std::string host_memory_rule(const Trace& t) {
  std::vector<std::string> said;
  for (const Trace::HostUse& u : t.host_memory) {
    std::string bytes = u.bytes > 0 ? ", " + plural(u.bytes, "byte", "bytes") : "";
    std::string what;
    switch (u.kind) {
      case HostMemory::Pinned: continue;
      case HostMemory::Managed: what = "allocated managed memory (" + u.api + bytes + ")"; break;
      case HostMemory::Mapped: what = "allocated mapped page-locked host memory (" + u.api + bytes + ")"; break;
      case HostMemory::DevicePointer: what = "took a device pointer to host memory (" + u.api + ")"; break;
      case HostMemory::Registered: what = "registered host memory with the device (" + u.api + bytes + ")"; break;
    }
    if (std::find(said.begin(), said.end(), what) == said.end()) said.push_back(what);
    if (said.size() == 3) break;
  }
  if (said.empty()) return "";
  return "the slot " + join(said) +
         ": memory that both the host and the device can reach lets the host compute the scan, which is not "
         "allowed; keep the data in device memory (cudaMalloc/cudaMallocAsync).";
}

// launch: single-block slots
std::string launch_rule(const Trace& t, Slot slot) {
  if (slot != Slot::HillisSteele && slot != Slot::Blelloch) return "";
  const Trace::Kernel* first = nullptr;
  std::int64_t others = 0;
  for (const Trace::Kernel& k : t.kernels) {
    if (k.max_blocks == 1) continue;
    if (first == nullptr) first = &k;
    else ++others;
  }
  if (first == nullptr) return "";
  std::string contract = slot == Slot::HillisSteele
                             ? "one block, one element per thread, n <= kHillisSteeleMaxN = 1024"
                             : "one block, two elements per thread, n <= kBlellochMaxN = 2048";
  std::string s = "the slot launched kernel " + shown(first->name) + " with a grid of " +
                  plural(first->max_blocks, "block", "blocks");
  if (others > 0) s += " (and " + plural(others, "other kernel", "other kernels") + " with a grid other than one block)";
  return s + ": the " + slot_title(slot) + " slot is a single-block scan (" + contract +
         "); launch exactly one block.";
}

std::string pinned_detail(const Trace& t, std::int64_t& total) {
  std::vector<std::pair<std::string, std::pair<std::int64_t, std::int64_t>>> by_api;  // api -> (bytes, count)
  total = 0;
  for (const auto& [ptr, p] : t.pinned_live) {
    total += p.bytes;
    auto it = std::find_if(by_api.begin(), by_api.end(), [&](const auto& e) { return e.first == p.api; });
    if (it == by_api.end()) by_api.push_back({p.api, {p.bytes, 1}});
    else {
      it->second.first += p.bytes;
      ++it->second.second;
    }
  }
  if (by_api.empty()) return "";
  std::vector<std::string> parts;
  bool driver = false;
  for (const auto& [api, bc] : by_api) {
    std::string s = plural(bc.first, "byte", "bytes");
    if (bc.second > 1) s += " in " + std::to_string(bc.second) + " allocations";
    parts.push_back(s + " from " + api);
    driver = driver || api.rfind("cuMem", 0) == 0;
  }
  return join(parts) + " without " + (driver ? "cudaFreeHost/cuMemFreeHost" : "cudaFreeHost");
}

}  // namespace

bool is_library_kernel(const std::string& name) {
  static const char* const kMarks[] = {"cub::",  "thrust::",         "mgpu::",     "N3cub",  "N6thrust", "N4mgpu",
                                       "cudpp",  "DeviceScanKernel", "DeviceScanInitKernel", "CUDPP"};
  for (const char* m : kMarks) {
    if (name.find(m) != std::string::npos) return true;
  }
  return false;
}

Findings evaluate(const Trace& trace, Slot slot) {
  Findings f;
  const std::pair<const char*, std::string> found[] = {
      {"library", library_rule(trace)},
      {"host_compute", copy_rule(trace)},
      {"host_compute", host_memory_rule(trace)},
      {"launch", launch_rule(trace, slot)},
  };
  for (const auto& [rule, text] : found) {
    if (text.empty()) continue;
    if (f.rule.empty()) f.rule = rule;
    if (!f.violation.empty()) f.violation += " ";
    f.violation += text;
  }
  f.pinned_detail = pinned_detail(trace, f.pinned_leaked_bytes);
  return f;
}

}  // namespace scangrade::grader::policy
