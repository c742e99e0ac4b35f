// ScanGrade CPU emulator: the emulated device's address space (arena.cpp). Internal; not installed.
//
// Every emulated allocation (cudaMalloc, cudaMallocAsync, cudaMallocManaged, cudaMallocHost,
// cudaHostAlloc, and the grader's shared case buffers) lives in one reserved address range that the
// malloc heap never uses, laid out the way a GPU lays out device memory:
//
//   | guard | front slack | allocation .. rounding slack | guard (at least kGuard) | next allocation ...
//                           ^ 2 MiB aligned               ^ size rounded up to kGranule
//
// * Alignment: every pointer is 2 MiB aligned, which satisfies CUDA's promise that memory returned by
//   an allocation routine is aligned to at least 256 bytes (CUDA C++ Programming Guide, "Device Memory
//   Accesses"; GPUs since Kepler return 512-byte spaced pointers for small requests).
// * Rounding: the mapped part is the size rounded up to 2 MiB, the granularity the GPU maps device
//   memory in (cuMemGetAllocationGranularity returned 2 MiB on an H100 and an H200). On a GPU
//   the bytes after an allocation up to that boundary are mapped (the allocation's own slack, or a
//   small neighbour sub-allocated from the same 2 MiB page), so a write there goes unnoticed by the
//   hardware: here too. That is where the harness's guard zone around d_out and a tile kernel's
//   overflow past a small temporary land, and the harness's canary check reports them as on the GPU.
//   At least kMinSlack bytes of slack are always mapped (a size within 64 KiB of a 2 MiB multiple
//   gets one more granule): on a GPU the memory right after such an allocation is usually the next
//   allocation (consecutive allocations are adjacent), so a read or write a tile past the end goes
//   unnoticed there too; the emulator has no neighbours, so it maps that slack itself.
// * Front slack: the kMinSlack bytes before every allocation are mapped too. On a GPU the memory just
//   before an allocation is the previous allocation's slack or a neighbour in the same 2 MiB page, so a
//   write to p[-1] goes unnoticed by the hardware (compute-sanitizer's memcheck reports it, on the
//   cases it checks); it faulted here, and a slot graded crash on every case emulated had passes and one
//   memory_error on the GPU.
// * Guard: beyond the mapped part nothing is mapped for at least kGuard bytes (PROT_NONE). An access
//   there faults (SIGSEGV), which the scheduler turns into a sticky cudaErrorIllegalAddress, as a GPU
//   reports an access to unmapped device memory. The guard is wide so that a thread that writes far
//   past the end before its neighbours write just past it (reverse thread order) still faults.
//   A GPU may instead hit another live allocation there: not modelled (no neighbours).
// * Freed memory goes back to PROT_NONE at once (its pages are discarded): a later access faults
//   until the range is handed out again.
// * Pages are mapped lazily (MAP_NORESERVE, no huge pages): a 1 GiB allocation costs only what is
//   touched (the runtime's 0xFF poison touches the requested bytes, nothing more).
#pragma once

#include <cstddef>
#include <cstdint>

namespace scangrade::emu::detail {

inline constexpr std::size_t kGranule = std::size_t{2} << 20;  // 2 MiB
inline constexpr std::size_t kGuard = std::size_t{64} << 20;   // unmapped bytes after each span
inline constexpr std::size_t kMinSlack = std::size_t{64} << 10; // mapped bytes after every allocation, at least

/// Bytes an allocation of `size` bytes maps: size + kMinSlack rounded up to kGranule.
std::size_t arena_mapped_size(std::size_t size);

/// A fresh, zero-filled, read-write span of arena_mapped_size(size) bytes; nullptr when the address
/// space is exhausted or cannot be reserved.
void* arena_map(std::size_t size);

/// `size` bytes of the file `fd` (from offset 0, MAP_SHARED) at the start of a span; the rest of the
/// span up to the granule is private zero-filled slack. nullptr (errno set) when it cannot be mapped.
void* arena_map_file(int fd, std::size_t size);

/// Returns a span from arena_map/arena_map_file (its base and the size it was made with) to the
/// guard state: unmapped, its pages discarded.
void arena_unmap(void* base, std::size_t size);

/// Whether `p` lies in the arena's reserved range (mapped or not).
bool arena_contains(const void* p);

}  // namespace scangrade::emu::detail
