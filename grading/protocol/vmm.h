// Device memory one process owns and another maps: the driver's virtual memory management API
// (cuMemCreate + a POSIX file descriptor as the shareable handle). The checker (trusted, outside
// the sandbox) creates a case's buffers and exports them; the worker imports and maps them for the
// slot call, and the checker reads them afterwards with its own context, whatever the worker did to
// its own. The handles work across pid namespaces and users: measured on an H100, a child in its
// own pid namespace, one under uid 65534 and one in bubblewrap 0.8.0 each imported and mapped the
// buffer and wrote it with a kernel, and the parent read the values back. The driver's entry
// points come through the runtime (cudaGetDriverEntryPointByVersion): nothing links libcuda.
#pragma once

#include <cstddef>
#include <string>

namespace scangrade::grader::vmm {

/// One mapping of a shareable allocation in this process.
struct Mapping {
  void* ptr = nullptr;
  std::size_t size = 0;              // bytes mapped (a multiple of the granularity)
  unsigned long long handle = 0;     // CUmemGenericAllocationHandle
  bool mapped() const { return ptr != nullptr; }
};

/// The allocation granularity on the current device, or 0 with `why` set.
std::size_t granularity(std::string& why);
/// `bytes` rounded up to the granularity (at least one granule).
std::size_t rounded(std::size_t bytes, std::size_t granule);

/// Creates `bytes` (rounded) of device memory, maps it read-write here and exports a descriptor
/// (`fd`, the caller's to close). "" or what failed.
std::string create(std::size_t bytes, Mapping& m, int& fd);
/// Exports another descriptor of an allocation `create` made (`fd`, the caller's to close): for a
/// process that maps the same memory again. "" or what failed.
std::string share(const Mapping& m, int& fd);
/// Imports a descriptor of `size` bytes (as created) and maps it read-write here (the fd stays the
/// caller's). "" or what failed.
std::string import(int fd, std::size_t size, Mapping& m);
/// Unmaps and releases (never fails loudly: after a sticky error the driver may refuse).
void release(Mapping& m);

}  // namespace scangrade::grader::vmm
