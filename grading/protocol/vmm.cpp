// Shareable device memory (vmm.h).
#include "vmm.h"

#include <cstdint>

#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

namespace scangrade::grader::vmm {
namespace {

/// The driver functions this file uses, looked up once through the runtime.
struct Driver {
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemExportToShareableHandle) export_handle = nullptr;
  decltype(&cuMemImportFromShareableHandle) import_handle = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
  std::string error;
};

template <typename F>
void find(const char* symbol, F& fn, std::string& error) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || p == nullptr) {
    cudaGetLastError();
    if (error.empty()) error = std::string("the driver has no ") + symbol;
    return;
  }
  fn = reinterpret_cast<F>(p);
}

const Driver& driver() {
  static const Driver d = [] {
    Driver d;
    find("cuMemGetAllocationGranularity", d.granularity, d.error);
    find("cuMemCreate", d.create, d.error);
    find("cuMemRelease", d.release, d.error);
    find("cuMemExportToShareableHandle", d.export_handle, d.error);
    find("cuMemImportFromShareableHandle", d.import_handle, d.error);
    find("cuMemAddressReserve", d.reserve, d.error);
    find("cuMemAddressFree", d.address_free, d.error);
    find("cuMemMap", d.map, d.error);
    find("cuMemUnmap", d.unmap, d.error);
    find("cuMemSetAccess", d.set_access, d.error);
    return d;
  }();
  return d;
}

std::string failed(const char* what, CUresult r) { return std::string(what) + " failed (CUresult " + std::to_string(r) + ")"; }

int current_device() {
  int device = 0;
  cudaGetDevice(&device);
  return device;
}

CUmemAllocationProp properties() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = current_device();
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

/// Reserves an address range for `m.handle` (m.size bytes), maps it and makes it read-write here.
std::string map_here(Mapping& m) {
  const Driver& d = driver();
  CUdeviceptr ptr = 0;
  if (const CUresult r = d.reserve(&ptr, m.size, 0, 0, 0); r != CUDA_SUCCESS) return failed("cuMemAddressReserve", r);
  if (const CUresult r = d.map(ptr, m.size, 0, m.handle, 0); r != CUDA_SUCCESS) {
    d.address_free(ptr, m.size);
    return failed("cuMemMap", r);
  }
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = current_device();
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (const CUresult r = d.set_access(ptr, m.size, &access, 1); r != CUDA_SUCCESS) {
    d.unmap(ptr, m.size);
    d.address_free(ptr, m.size);
    return failed("cuMemSetAccess", r);
  }
  m.ptr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(ptr));
  return "";
}

}  // namespace

std::size_t granularity(std::string& why) {
  const Driver& d = driver();
  if (!d.error.empty()) {
    why = d.error;
    return 0;
  }
  cudaFree(nullptr);  // the primary context, current on this thread
  const CUmemAllocationProp prop = properties();
  std::size_t g = 0;
  if (const CUresult r = d.granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM); r != CUDA_SUCCESS || g == 0) {
    why = failed("cuMemGetAllocationGranularity", r);
    return 0;
  }
  return g;
}

std::size_t rounded(std::size_t bytes, std::size_t granule) {
  if (bytes == 0) bytes = 1;
  return (bytes + granule - 1) / granule * granule;
}

std::string create(std::size_t bytes, Mapping& m, int& fd) {
  std::string why;
  const std::size_t g = granularity(why);
  if (g == 0) return why;
  const Driver& d = driver();
  m = Mapping{};
  m.size = rounded(bytes, g);
  const CUmemAllocationProp prop = properties();
  CUmemGenericAllocationHandle handle = 0;
  if (const CUresult r = d.create(&handle, m.size, &prop, 0); r != CUDA_SUCCESS) return failed("cuMemCreate", r);
  m.handle = handle;
  int exported = -1;
  if (const CUresult r = d.export_handle(&exported, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
      r != CUDA_SUCCESS) {
    d.release(handle);
    m = Mapping{};
    return failed("cuMemExportToShareableHandle", r);
  }
  if (std::string e = map_here(m); !e.empty()) {
    d.release(handle);
    m = Mapping{};
    ::close(exported);
    return e;
  }
  fd = exported;
  return "";
}

std::string share(const Mapping& m, int& fd) {
  const Driver& d = driver();
  if (!d.error.empty()) return d.error;
  int exported = -1;
  if (const CUresult r = d.export_handle(&exported, m.handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
      r != CUDA_SUCCESS)
    return failed("cuMemExportToShareableHandle", r);
  fd = exported;
  return "";
}

std::string import(int fd, std::size_t size, Mapping& m) {
  const Driver& d = driver();
  if (!d.error.empty()) return d.error;
  cudaFree(nullptr);
  m = Mapping{};
  m.size = size;
  CUmemGenericAllocationHandle handle = 0;
  if (const CUresult r = d.import_handle(&handle, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)),
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      r != CUDA_SUCCESS)
    return failed("cuMemImportFromShareableHandle", r);
  m.handle = handle;
  if (std::string e = map_here(m); !e.empty()) {
    d.release(handle);
    m = Mapping{};
    return e;
  }
  return "";
}

void release(Mapping& m) {
  if (m.handle == 0) return;
  const Driver& d = driver();
  if (m.ptr) {
    const CUdeviceptr ptr = reinterpret_cast<std::uintptr_t>(m.ptr);
    d.unmap(ptr, m.size);
    d.address_free(ptr, m.size);
  }
  d.release(m.handle);
  m = Mapping{};
}

}  // namespace scangrade::grader::vmm
