// ScanGrade CPU emulator: host-side CUDA runtime API (types and functions).
//
// This header shadows the CUDA toolkit's cuda_runtime_api.h when harness/emulation/include comes
// first on the include path. It declares the subset of the runtime that the student contract
// allows (see scangrade/student_api.h) plus what the harness needs; everything runs synchronously
// on the host. See scangrade/emu.h for the execution model.
#pragma once

// Claim the real toolkit headers' include guards so that, should the real include directory also be
// on the path, its headers become no-ops instead of clashing with these definitions.
#ifndef __CUDA_RUNTIME_API_H__
#define __CUDA_RUNTIME_API_H__
#endif
#ifndef __DRIVER_TYPES_H__
#define __DRIVER_TYPES_H__
#endif
#ifndef __VECTOR_TYPES_H__
#define __VECTOR_TYPES_H__
#endif
#ifndef __DEVICE_TYPES_H__
#define __DEVICE_TYPES_H__
#endif

#include <cstddef>
#include <cstdint>
#include <type_traits>

#define SCANGRADE_EMULATION 1
#ifndef CUDART_VERSION
#define CUDART_VERSION 13000
#endif

// ---- vector types -------------------------------------------------------------------------------

struct uint3 {
  unsigned int x, y, z;
};

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

#define SCANGRADE_EMU_VECTOR2(name, T, align)                                                     \
  struct alignas(align) name {                                                                   \
    T x, y;                                                                                      \
  };                                                                                             \
  inline name make_##name(T x, T y) { return name{x, y}; }
#define SCANGRADE_EMU_VECTOR3(name, T)                                                            \
  struct name {                                                                                  \
    T x, y, z;                                                                                   \
  };                                                                                             \
  inline name make_##name(T x, T y, T z) { return name{x, y, z}; }
#define SCANGRADE_EMU_VECTOR4(name, T, align)                                                     \
  struct alignas(align) name {                                                                   \
    T x, y, z, w;                                                                                \
  };                                                                                             \
  inline name make_##name(T x, T y, T z, T w) { return name{x, y, z, w}; }

SCANGRADE_EMU_VECTOR2(int2, int, 8)
SCANGRADE_EMU_VECTOR2(uint2, unsigned int, 8)
SCANGRADE_EMU_VECTOR2(float2, float, 8)
SCANGRADE_EMU_VECTOR2(double2, double, 16)
SCANGRADE_EMU_VECTOR2(longlong2, long long, 16)
SCANGRADE_EMU_VECTOR2(ulonglong2, unsigned long long, 16)
SCANGRADE_EMU_VECTOR3(int3, int)
SCANGRADE_EMU_VECTOR3(float3, float)
SCANGRADE_EMU_VECTOR4(int4, int, 16)
SCANGRADE_EMU_VECTOR4(uint4, unsigned int, 16)
SCANGRADE_EMU_VECTOR4(float4, float, 16)
inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { return uint3{x, y, z}; }

#undef SCANGRADE_EMU_VECTOR2
#undef SCANGRADE_EMU_VECTOR3
#undef SCANGRADE_EMU_VECTOR4

// ---- error codes and enums ----------------------------------------------------------------------

enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorCudartUnloading = 4,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidPitchValue = 12,
  cudaErrorInvalidSymbol = 13,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidKernelImage = 200,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchTimeout = 702,
  cudaErrorAssert = 710,
  cudaErrorIllegalInstruction = 715,
  cudaErrorMisalignedAddress = 716,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotSupported = 801,
  cudaErrorUnknown = 999,
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaMemPoolAttr {
  cudaMemPoolReuseFollowEventDependencies = 0x1,
  cudaMemPoolReuseAllowOpportunistic = 0x2,
  cudaMemPoolReuseAllowInternalDependencies = 0x3,
  cudaMemPoolAttrReleaseThreshold = 0x4,
  cudaMemPoolAttrReservedMemCurrent = 0x5,
  cudaMemPoolAttrReservedMemHigh = 0x6,
  cudaMemPoolAttrUsedMemCurrent = 0x7,
  cudaMemPoolAttrUsedMemHigh = 0x8,
};

enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};

enum cudaFuncCache {
  cudaFuncCachePreferNone = 0,
  cudaFuncCachePreferShared = 1,
  cudaFuncCachePreferL1 = 2,
  cudaFuncCachePreferEqual = 3,
};

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxBlockDimX = 2,
  cudaDevAttrMaxBlockDimY = 3,
  cudaDevAttrMaxBlockDimZ = 4,
  cudaDevAttrMaxGridDimX = 5,
  cudaDevAttrMaxGridDimY = 6,
  cudaDevAttrMaxGridDimZ = 7,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrTotalConstantMemory = 9,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMaxRegistersPerBlock = 12,
  cudaDevAttrClockRate = 13,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrL2CacheSize = 38,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
  cudaDevAttrMaxBlocksPerMultiprocessor = 106,
};

#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04
#define cudaHostRegisterDefault 0x00
#define cudaHostRegisterPortable 0x01
#define cudaHostRegisterMapped 0x02
#define cudaHostRegisterIoMemory 0x04
#define cudaHostRegisterReadOnly 0x08
#define cudaMemAttachGlobal 0x01
#define cudaMemAttachHost 0x02
#define cudaMemAttachSingle 0x04
#define cudaDeviceScheduleAuto 0x00
#define cudaDeviceMapHost 0x08
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02

struct CUstream_st;
struct CUevent_st;
struct CUmemPoolHandle_st;
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef struct CUmemPoolHandle_st* cudaMemPool_t;

#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

/// Properties of the emulated device (a subset of the real struct's fields, same names).
struct cudaDeviceProp {
  char name[256];
  std::size_t totalGlobalMem;
  std::size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  std::size_t memPitch;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;
  std::size_t totalConstMem;
  int major;
  int minor;
  std::size_t textureAlignment;
  int deviceOverlap;
  int multiProcessorCount;
  int kernelExecTimeoutEnabled;
  int integrated;
  int canMapHostMemory;
  int computeMode;
  int concurrentKernels;
  int ECCEnabled;
  int pciBusID;
  int pciDeviceID;
  int asyncEngineCount;
  int unifiedAddressing;
  int memoryClockRate;
  int memoryBusWidth;
  int l2CacheSize;
  int maxThreadsPerMultiProcessor;
  std::size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor;
  int managedMemory;
  int isMultiGpuBoard;
  std::size_t sharedMemPerBlockOptin;
  int maxBlocksPerMultiProcessor;
  int cooperativeLaunch;
};

// ---- runtime API --------------------------------------------------------------------------------
// Every call returns the sticky kernel error (see scangrade/emu.h) once one has occurred.

// errors
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);

// device
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaDeviceReset();
cudaError_t cudaMemGetInfo(std::size_t* free, std::size_t* total);

// memory
cudaError_t cudaMalloc(void** ptr, std::size_t size);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMallocHost(void** ptr, std::size_t size);
cudaError_t cudaFreeHost(void* ptr);
// Page-locked, mapped, registered and managed host memory: ordinary host memory, one address space.
// Mapped (cudaHostAllocMapped), registered and managed memory is accepted by kernels and copies as
// device memory; cudaHostGetDevicePointer returns the host pointer itself.
cudaError_t cudaHostAlloc(void** ptr, std::size_t size, unsigned int flags);
cudaError_t cudaHostGetDevicePointer(void** device_ptr, void* host_ptr, unsigned int flags);
cudaError_t cudaHostRegister(void* ptr, std::size_t size, unsigned int flags);
cudaError_t cudaHostUnregister(void* ptr);
cudaError_t cudaMallocManaged(void** ptr, std::size_t size, unsigned int flags = cudaMemAttachGlobal);
cudaError_t cudaSetDeviceFlags(unsigned int flags);
cudaError_t cudaMallocAsync(void** ptr, std::size_t size, cudaStream_t stream);
cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream);
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream = 0);
cudaError_t cudaMemset(void* ptr, int value, std::size_t count);
cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t count, cudaStream_t stream = 0);

// The C++ overloads below take any T** as CUDA's cuda_runtime.h does, whose templates convert it with
// `(void**)(void*)ptr`: T may be cv-qualified (`volatile int* p; cudaMalloc(&p, bytes)` compiles with nvcc).
// The pointer-taking functions above (cudaFree, cudaMemcpy, cudaMemset, ...) take void* as CUDA's do, so a
// volatile or const pointer needs a cast there, as with nvcc.
namespace scangrade::emu::detail {
template <class T>
inline void** as_void_out(T** ptr) {
  return static_cast<void**>(static_cast<void*>(ptr));
}
}  // namespace scangrade::emu::detail

inline cudaError_t cudaMallocHost(void** ptr, std::size_t size, unsigned int flags) {
  return cudaHostAlloc(ptr, size, flags);
}
cudaError_t cudaMallocFromPoolAsync(void** ptr, std::size_t size, cudaMemPool_t pool, cudaStream_t stream);
inline cudaError_t cudaMallocAsync(void** ptr, std::size_t size, cudaMemPool_t pool, cudaStream_t stream) {
  return cudaMallocFromPoolAsync(ptr, size, pool, stream);
}

template <class T>
inline cudaError_t cudaMalloc(T** ptr, std::size_t size) {
  return cudaMalloc(::scangrade::emu::detail::as_void_out(ptr), size);
}
template <class T>
inline cudaError_t cudaMallocHost(T** ptr, std::size_t size, unsigned int flags = 0) {
  return cudaMallocHost(::scangrade::emu::detail::as_void_out(ptr), size, flags);
}
template <class T>
inline cudaError_t cudaHostAlloc(T** ptr, std::size_t size, unsigned int flags) {
  return cudaHostAlloc(::scangrade::emu::detail::as_void_out(ptr), size, flags);
}
template <class T>
inline cudaError_t cudaHostGetDevicePointer(T** device_ptr, void* host_ptr, unsigned int flags) {
  return cudaHostGetDevicePointer(::scangrade::emu::detail::as_void_out(device_ptr), host_ptr, flags);
}
template <class T>
inline cudaError_t cudaMallocManaged(T** ptr, std::size_t size, unsigned int flags = cudaMemAttachGlobal) {
  return cudaMallocManaged(::scangrade::emu::detail::as_void_out(ptr), size, flags);
}
template <class T>
inline cudaError_t cudaMallocAsync(T** ptr, std::size_t size, cudaStream_t stream) {
  return cudaMallocAsync(::scangrade::emu::detail::as_void_out(ptr), size, stream);
}
template <class T>
inline cudaError_t cudaMallocAsync(T** ptr, std::size_t size, cudaMemPool_t pool, cudaStream_t stream) {
  return cudaMallocFromPoolAsync(::scangrade::emu::detail::as_void_out(ptr), size, pool, stream);
}
template <class T>
inline cudaError_t cudaMallocFromPoolAsync(T** ptr, std::size_t size, cudaMemPool_t pool, cudaStream_t stream) {
  return cudaMallocFromPoolAsync(::scangrade::emu::detail::as_void_out(ptr), size, pool, stream);
}

// memory pools (the default pool is the only one; it counts cudaMallocAsync bytes in use)
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device);
cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* pool, int device);
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value);
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value);
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, std::size_t min_bytes_to_keep);

// streams (all work is synchronous; streams only have to be valid handles)
cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);

// events (no timing: elapsed time is always 0 ms)
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags = 0);

// kernel attributes: cudaFuncAttributeMaxDynamicSharedMemorySize raises the dynamic shared memory
// limit of every later launch (up to the opt-in maximum); everything else is accepted and ignored.
cudaError_t scangrade_emu_func_set_attribute(cudaFuncAttribute attr, int value);
template <class F>
inline cudaError_t cudaFuncSetAttribute(F*, cudaFuncAttribute attr, int value) {
  return scangrade_emu_func_set_attribute(attr, value);
}
inline cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute attr, int value) {
  return scangrade_emu_func_set_attribute(attr, value);
}
template <class F>
inline cudaError_t cudaFuncSetCacheConfig(F*, cudaFuncCache) {
  return cudaSuccess;
}
/// Occupancy: the emulated SM holds 2048 threads and 228 KiB of shared memory, at most 32 blocks.
cudaError_t scangrade_emu_occupancy(int* num_blocks, int block_size, std::size_t dynamic_smem);
template <class F>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* num_blocks, F*, int block_size,
                                                                 std::size_t dynamic_smem) {
  return scangrade_emu_occupancy(num_blocks, block_size, dynamic_smem);
}

// launch API types (the functions are in cuda_runtime.h, beside the launcher they call)

/// Attributes of cudaLaunchKernelEx: accepted and ignored (the emulator has no clusters, priorities
/// or cooperative grids).
enum cudaLaunchAttributeID {
  cudaLaunchAttributeIgnore = 0,
  cudaLaunchAttributeAccessPolicyWindow = 1,
  cudaLaunchAttributeCooperative = 2,
  cudaLaunchAttributeSynchronizationPolicy = 3,
  cudaLaunchAttributeClusterDimension = 4,
  cudaLaunchAttributeClusterSchedulingPolicyPreference = 5,
  cudaLaunchAttributeProgrammaticStreamSerialization = 6,
  cudaLaunchAttributeProgrammaticEvent = 7,
  cudaLaunchAttributePriority = 8,
};
union cudaLaunchAttributeValue {
  char pad[64];
  int cooperative;
  struct {
    unsigned int x;
    unsigned int y;
    unsigned int z;
  } clusterDim;
  int programmaticStreamSerializationAllowed;
  int priority;
};
struct cudaLaunchAttribute {
  cudaLaunchAttributeID id;
  char pad[8 - sizeof(cudaLaunchAttributeID)];
  cudaLaunchAttributeValue val;
};
struct cudaLaunchConfig_t {
  dim3 gridDim;
  dim3 blockDim;
  std::size_t dynamicSmemBytes;
  cudaStream_t stream;
  cudaLaunchAttribute* attrs;
  unsigned int numAttrs;
};

/// What cudaFuncGetAttributes reports for every kernel (a subset of the real struct's fields).
struct cudaFuncAttributes {
  std::size_t sharedSizeBytes;     // 0: static shared memory is allocated when a block declares it
  std::size_t constSizeBytes;      // 0
  std::size_t localSizeBytes;      // 0
  int maxThreadsPerBlock;          // 1024
  int numRegs;                     // 0: registers are not emulated
  int ptxVersion;                  // 90
  int binaryVersion;               // 90
  int cacheModeCA;                 // 0
  int maxDynamicSharedSizeBytes;   // 48 KiB, the default limit
  int preferredShmemCarveout;      // -1
};

// symbols (__device__ / __constant__ variables are ordinary host globals; a copy from or to host memory
// is traced as a host<->device copy, see scangrade::emu::trace_begin). As CUDA's templates, these take
// the symbol as `const T&` (any cv-qualification) and its size is sizeof(T). The copy itself is
// scangrade_emu_symbol_copy (runtime.cpp), which refuses what the CUDA runtime refuses (measured on an
// H200, CUDA 13.0): a kind the direction does not allow (to a symbol: cudaMemcpyHostToHost,
// cudaMemcpyDeviceToHost; from a symbol: cudaMemcpyHostToHost, cudaMemcpyHostToDevice; any value
// outside the enum) is cudaErrorInvalidMemcpyDirection, cudaMemcpyDeviceToDevice with memory that is
// not the device's and offset + count past the symbol's end are cudaErrorInvalidValue; each is also
// left for cudaGetLastError.
cudaError_t scangrade_emu_symbol_copy(const char* api, void* symbol, std::size_t symbol_size, std::size_t offset,
                                      void* other, std::size_t count, cudaMemcpyKind kind, bool to_symbol,
                                      cudaStream_t stream);
namespace scangrade::emu::detail {
/// The symbol's address, or nullptr when the emulator cannot use it as one: a const object (a string
/// literal, a variable declared const: read-only memory here) as the destination of a copy.
template <class T>
inline void* symbol_address(const T& symbol, bool written) {
  if (written && std::is_const_v<T>) return nullptr;
  return const_cast<void*>(static_cast<const volatile void*>(&symbol));
}
}  // namespace scangrade::emu::detail
template <class T>
inline cudaError_t cudaMemcpyToSymbol(const T& symbol, const void* src, std::size_t count, std::size_t offset = 0,
                                      cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
  return scangrade_emu_symbol_copy("cudaMemcpyToSymbol", ::scangrade::emu::detail::symbol_address(symbol, true),
                                   sizeof(T), offset, const_cast<void*>(src), count, kind, true, 0);
}
template <class T>
inline cudaError_t cudaMemcpyToSymbolAsync(const T& symbol, const void* src, std::size_t count,
                                           std::size_t offset = 0, cudaMemcpyKind kind = cudaMemcpyHostToDevice,
                                           cudaStream_t stream = 0) {
  return scangrade_emu_symbol_copy("cudaMemcpyToSymbolAsync", ::scangrade::emu::detail::symbol_address(symbol, true),
                                   sizeof(T), offset, const_cast<void*>(src), count, kind, true, stream);
}
template <class T>
inline cudaError_t cudaMemcpyFromSymbol(void* dst, const T& symbol, std::size_t count, std::size_t offset = 0,
                                        cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
  return scangrade_emu_symbol_copy("cudaMemcpyFromSymbol", ::scangrade::emu::detail::symbol_address(symbol, false),
                                   sizeof(T), offset, dst, count, kind, false, 0);
}
template <class T>
inline cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const T& symbol, std::size_t count, std::size_t offset = 0,
                                             cudaMemcpyKind kind = cudaMemcpyDeviceToHost, cudaStream_t stream = 0) {
  return scangrade_emu_symbol_copy("cudaMemcpyFromSymbolAsync", ::scangrade::emu::detail::symbol_address(symbol, false),
                                   sizeof(T), offset, dst, count, kind, false, stream);
}
// A temporary (`cudaMemcpyToSymbol(&table, ...)`) binds CUDA's `const T&` too, and the runtime finds no
// symbol at its address: cudaErrorInvalidSymbol. These overloads take the temporaries here.
template <class T>
inline cudaError_t cudaMemcpyToSymbol(const T&&, const void* src, std::size_t count, std::size_t offset = 0,
                                      cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
  return scangrade_emu_symbol_copy("cudaMemcpyToSymbol", nullptr, sizeof(T), offset, const_cast<void*>(src), count,
                                   kind, true, 0);
}
template <class T>
inline cudaError_t cudaMemcpyToSymbolAsync(const T&&, const void* src, std::size_t count, std::size_t offset = 0,
                                           cudaMemcpyKind kind = cudaMemcpyHostToDevice, cudaStream_t stream = 0) {
  return scangrade_emu_symbol_copy("cudaMemcpyToSymbolAsync", nullptr, sizeof(T), offset, const_cast<void*>(src),
                                   count, kind, true, stream);
}
template <class T>
inline cudaError_t cudaMemcpyFromSymbol(void* dst, const T&&, std::size_t count, std::size_t offset = 0,
                                        cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
  return scangrade_emu_symbol_copy("cudaMemcpyFromSymbol", nullptr, sizeof(T), offset, dst, count, kind, false, 0);
}
template <class T>
inline cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const T&&, std::size_t count, std::size_t offset = 0,
                                             cudaMemcpyKind kind = cudaMemcpyDeviceToHost, cudaStream_t stream = 0) {
  return scangrade_emu_symbol_copy("cudaMemcpyFromSymbolAsync", nullptr, sizeof(T), offset, dst, count, kind, false,
                                   stream);
}
template <class T>
inline cudaError_t cudaGetSymbolAddress(void** dev_ptr, const T& symbol) {
  if (dev_ptr == nullptr) return cudaErrorInvalidValue;
  *dev_ptr = ::scangrade::emu::detail::symbol_address(symbol, false);
  return cudaSuccess;
}
template <class T>
inline cudaError_t cudaGetSymbolSize(std::size_t* size, const T&) {
  if (size == nullptr) return cudaErrorInvalidValue;
  *size = sizeof(T);
  return cudaSuccess;
}
