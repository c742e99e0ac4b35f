// Per-process accounting of device memory taken with cudaMalloc, for the leak check.
//
// cudaMemGetInfo is device-wide: another process allocating at the same time (ctest -j, a grader
// running several submissions on one GPU) looks like a leak. So the test and worker executables
// interpose cudaMalloc/cudaFree (alloc_tracker.cpp forwards to the CUDA runtime's own through
// dlsym(RTLD_NEXT, ...)) and count the bytes still allocated. Stream-ordered allocations
// (cudaMallocAsync) are counted by the default memory pool, which is per process already.
#pragma once

#include <cstddef>

namespace scangrade {

/// Bytes allocated with cudaMalloc in this process and not yet freed.
std::size_t tracked_device_bytes();

}  // namespace scangrade
