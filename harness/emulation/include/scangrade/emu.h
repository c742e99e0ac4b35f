// ScanGrade CPU emulator: the emulator's own API (thread order, diagnostics, statistics).
//
// The model
// ---------
// Student .cu files are compiled unmodified for the CPU: harness/emulation/rewrite.py turns every
// `kernel<<<grid, block, smem, stream>>>(args)` into a call of the emulated launcher and every
// `__shared__` declaration into per-block storage; the rest is ordinary C++17 compiled by the host
// compiler against harness/emulation/include/cuda_runtime.h.
//
// * Every CUDA thread is a task run on a Boost.Context fiber. Fibers are pooled workers: a worker
//   whose thread has exited picks up the next thread that has not started yet, so a kernel without
//   barriers needs a single fiber, and stacks are reused across blocks and launches.
// * Blocks run one at a time, in increasing linear block order (x fastest, then y, then z). A block
//   may therefore wait (spin) for flags set by any *earlier* block: a single-pass scan with
//   decoupled look-back and a ticket counter makes progress. A block that spins on a flag no earlier
//   block sets hangs the process (see "fork-safety" below).
// * Within a block, threads run until they reach a rendezvous point, then the next runnable thread
//   runs. The order in which runnable threads are resumed is the *thread order*: Forward (thread 0
//   first), Reverse, or Random (a seeded permutation, redrawn on every pass over the block). Every
//   step between barriers starts a new pass from the order's first thread, so a yield before a
//   barrier (thread 0's atomic ticket) does not leave thread 0 last in every later step. Code
//   with a data race between rendezvous points (an in-place Hillis-Steele step, a warp-synchronous
//   reduction without __syncwarp) gives results that depend on the order: run a case under all three
//   and call it a race when they differ.
// * Rendezvous rules:
//     - __syncthreads (and _count/_and/_or) completes when every live (not yet exited) thread of the
//       block waits at a block barrier. If they wait at different barrier sites (file:line), that
//       is a divergent barrier: the launch fails with a diagnostic.
//     - __syncwarp, shuffles and votes are a rendezvous of the lanes named in the mask, within the
//       warp only (warpSize 32, lanes are consecutive linear thread ids). A mask that names a lane
//       that has exited, or that does not name the calling lane, fails the launch. Lanes beyond the
//       end of a partial last warp are ignored. A shuffle whose source lane is outside the group
//       returns the caller's own value.
//     - When no live thread can proceed (threads wait at barriers and warp operations that can
//       never complete), the launch fails with a deadlock diagnostic instead of hanging.
//   Atomics, __threadfence*, and __nanosleep are yield points: the calling thread lets the other
//   runnable threads of its block run first, so spin-locks within a block make progress.
// * Warp lockstep (set_warp_lockstep): a GPU's warp runs its lanes together, so warp-synchronous code
//   that passes values through `volatile` shared memory with no __syncwarp usually computes what its
//   author meant there. With lockstep on, every access through a volatile lvalue to the block's shared
//   memory is a yield point to the next runnable lane of the same warp (in the thread order's
//   direction): the lanes of a warp make their k-th such access in turn, so every lane's loads of a
//   step happen before any lane's store of the next one. Warps still take turns at barriers as before.
//   Student files are compiled with GCC's -fsanitize=thread instrumentation and
//   --param=tsan-distinguish-volatile=1, whose calls (__tsan_volatile_read4 before a volatile 4-byte
//   load, ...) the emulator implements itself (src/volatile_access.cpp; no sanitizer runtime).
// * Errors: launch configuration errors (more than 1024 threads per block, a zero dimension, too
//   much dynamic shared memory, an invalid stream) are returned by the next cudaGetLastError and
//   cleared, as in CUDA. Kernel faults (divergent barrier, deadlock, bad warp mask, an exception,
//   shared memory overflow) are sticky: every later runtime call returns cudaErrorLaunchFailure
//   until clear_error() or reset(); last_diagnostic() says what happened, with the student's
//   file:line and the block and thread coordinates.
// * Illegal addresses: an access that hits unmapped memory inside a kernel (past an allocation's
//   mapped part, a null pointer, past the end of a shared array, a fiber's stack overflow) raises
//   SIGSEGV; the emulator catches it and turns it into a sticky cudaErrorIllegalAddress ("an illegal
//   memory access was encountered", as a GPU reports it) whose diagnostic starts "segmentation fault
//   (invalid memory access) at address ..." and says where the address lies (so many bytes past the
//   end of which allocation), whether it was a read or a write, the launch site, block and thread.
//   The faulting thread's fiber is abandoned (never unwound), the process carries on. A SIGSEGV
//   outside a kernel thread still kills the process, after a report on stderr.
// * Memory: device memory (cudaMalloc, cudaMallocAsync, cudaMallocManaged, cudaMallocHost,
//   cudaHostAlloc) lives in an address range of its own, never in the malloc heap, laid out like a
//   GPU's (src/arena.h): 2 MiB aligned, the size plus 64 KiB rounded up to 2 MiB is mapped (a write
//   into that slack is silent, as on a GPU: the harness's guard zones catch it), then 64 MiB unmapped,
//   so a wild access faults instead of corrupting the host heap. New allocations are filled with 0xFF
//   bytes (garbage, like a GPU), shared memory with 0xFF at the start of every block. cudaMemGetInfo
//   and the default pool's cudaMemPoolAttrUsedMemCurrent track live allocations, so a leaked
//   temporary shows. cudaFree/cudaFreeAsync/cudaFreeHost of a pointer that is not a live allocation
//   of their kind (never allocated, already freed, an interior pointer) return cudaErrorInvalidValue
//   like the CUDA runtime (since CUDA 10.1), record it as the last error (not sticky), free nothing.
// * Not emulated: the memory model (missing __threadfence or volatile is never observable; all
//   writes are immediately visible), timing (events measure 0 ms), concurrency between streams or
//   between blocks, textures, cooperative groups, dynamic parallelism, __CUDA_ARCH__ (it is not
//   defined: host code paths are compiled), half precision, and the real device's limits on
//   registers and local memory (each thread has a 256 KiB stack, see SCANGRADE_EMU_STACK_KB).
//   Programmatic dependent launch (cudaLaunchAttributeProgrammaticStreamSerialization,
//   cudaGridDependencySynchronize, cudaTriggerProgrammaticLaunchCompletion) compiles and runs with
//   no overlap: a kernel starts when the previous one has finished.
//
// Fork-safety: the emulator is single-threaded (no threads are ever started) and holds no locks,
// so a harness may fork() a child per case, run the case there under a deadline, and kill it.
//
// Environment (read once, at the first launch): SCANGRADE_EMU_THREAD_ORDER=forward|reverse|
// random[:seed] sets the initial thread order; SCANGRADE_EMU_STACK_KB sets the fiber stack size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace scangrade::emu {

/// True when this build runs kernels on the CPU emulator (the real runtime has no such header).
constexpr bool is_emulated() { return true; }

/// Order in which the runnable threads of a block are resumed between rendezvous points.
enum class ThreadOrder { Forward, Reverse, Random };

/// Selects the thread order for every later launch. `seed` only matters for Random; the random
/// sequence restarts from `seed` on every call, so a case is reproducible.
void set_thread_order(ThreadOrder order, std::uint64_t seed = 0);
ThreadOrder thread_order();
/// "forward", "reverse" or "random".
const char* to_string(ThreadOrder order);

/// Warp lockstep at volatile shared-memory accesses (see above) for every later launch; off by default.
void set_warp_lockstep(bool on);
bool warp_lockstep();

/// The detailed message of the most recent launch error or kernel fault ("" when none): what went
/// wrong, the student's file:line, the launch site, block and thread coordinates.
const char* last_diagnostic();

/// Clears the sticky kernel error, the last error and the diagnostic. Allocations are kept.
void clear_error();

/// Frees every emulated allocation and stream, clears errors, and resets statistics (like
/// cudaDeviceReset, which calls it).
void reset();

/// Counters since the last reset_stats() (or reset()).
struct Stats {
  std::uint64_t launches = 0;         // kernel launches that ran (valid configuration)
  std::uint64_t blocks = 0;           // blocks run
  std::uint64_t threads = 0;          // threads run
  std::uint64_t rendezvous = 0;       // barrier and warp-operation arrivals
  std::uint64_t bytes_h2d = 0;        // cudaMemcpy* host to device
  std::uint64_t bytes_d2h = 0;        // cudaMemcpy* device to host
  std::uint64_t bytes_d2d = 0;        // cudaMemcpy* device to device
  std::uint64_t allocations = 0;      // cudaMalloc + cudaMallocAsync calls that succeeded
};
Stats stats();
void reset_stats();

/// Bytes currently allocated with cudaMalloc/cudaMallocAsync, and by cudaMallocAsync alone.
std::size_t bytes_in_use();
std::size_t pool_bytes_in_use();

/// Bytes mapped for a device allocation of `size` bytes, from its start: an access below that is
/// silent (the allocation and its slack), an access beyond it faults (cudaErrorIllegalAddress).
/// `size` plus 64 KiB rounded up to 2 MiB: see the model in src/arena.h.
std::size_t mapped_bytes(std::size_t size);

/// Emulated device memory (default 8 GiB): allocations beyond it fail with cudaErrorMemoryAllocation.
void set_memory_limit(std::size_t bytes);

/// Fill new allocations (their requested bytes rounded up to 256, not the slack) and each block's
/// shared memory with 0xFF bytes (default true).
void set_poison(bool enabled);

/// What the emulated runtime did between trace_begin() and trace_end(): the grader's run-time policy
/// monitor (grading/worker/policy_monitor_emu.cpp) reads it around one slot call. Nothing is recorded
/// outside a trace. Copies count only when one side is host memory and the other device memory
/// (cudaMemcpyDefault resolved by the allocation the pointer is in); managed, mapped and registered
/// memory count as device memory.
struct Trace {
  struct Copies {
    std::string api;  // "cudaMemcpy", "cudaMemcpyToSymbol", ...; uploads by other doors: "cudaMemset", "kernel parameters"
    std::uint64_t h2d_bytes = 0, d2h_bytes = 0;
    std::uint64_t largest = 0;  // largest single copy
    std::uint64_t count = 0;
  };
  struct Kernel {
    std::string name;  // the emulator knows no kernel names: "<kernel at FILE:LINE>" (the launch site)
    std::uint64_t launches = 0;
    std::uint64_t max_blocks = 0;  // largest grid (x*y*z blocks) of its launches
  };
  enum class HostKind {
    Pinned,         // cudaMallocHost, cudaHostAlloc without cudaHostAllocMapped
    Mapped,         // cudaHostAlloc with cudaHostAllocMapped
    DevicePointer,  // cudaHostGetDevicePointer
    Managed,        // cudaMallocManaged
    Registered,     // cudaHostRegister
    FreeHost,       // cudaFreeHost
  };
  struct HostEvent {
    HostKind kind;
    std::string api;
    const void* ptr;
    std::size_t bytes;  // 0 for DevicePointer and FreeHost
    unsigned flags;
  };
  std::vector<Copies> copies;   // one entry per API
  // the order of the copies, all APIs together (the policy's round-trip rule)
  std::uint64_t d2h_so_far = 0;           // device->host bytes copied so far
  std::uint64_t d2h_before_last_h2d = 0;  // device->host bytes copied before the last host->device copy
  std::uint64_t h2d_after_first_d2h = 0;  // host->device bytes copied after the first device->host copy
  std::vector<Kernel> kernels;  // one entry per launch site, in order (the first 4096)
  std::uint64_t launches = 0;   // every launch that ran
  std::vector<HostEvent> host;  // in order (the first 4096)
};
void trace_begin();
Trace trace_end();

/// The kernels launched since clear_launched_kernels(), one line per launch site in the order of
/// their first launch (the first 8): "`scan_block` (student/x.cu:14) launched at student/x.cu:40",
/// or "the kernel launched at student/x.cu:40" when the rewriter could not name it.
std::vector<std::string> launched_kernels();
void clear_launched_kernels();

/// Operations whose result C++ leaves undefined that ran since clear_undefined_operations(), one
/// line each ("student/x.cu:12: a shift of the 32-bit int 5 by 32 bits: undefined in C++ ... on the GPU
/// ..."; "" when none). The emulated build compiles student code with GCC's checks for them
/// (SCANGRADE_EMU_STUDENT_FLAGS); see src/undefined.cpp for what the GPU and the emulator compute:
/// a shift count of at least the width and a float converted out of range keep the CPU's value
/// (which differs from the GPU's), an integer division by zero or INT_MIN / -1 gives the GPU's value.
std::string undefined_operations();
/// True when one of them kept the CPU's value, which is not the GPU's (a shift count out of range, a
/// float converted out of range); a division by zero or INT_MIN / -1 gives the GPU's value.
bool undefined_operations_differ_from_gpu();
void clear_undefined_operations();
/// Memory someone else owns (the grader's shared case buffers, mapped into this process) made a
/// device allocation, so that kernels and copies accept it; it counts in no balance (a leak check
/// measures the student's allocations only). forget_memory ends it (the mapping stays the owner's).
void adopt_memory(void* ptr, std::size_t size);
void forget_memory(void* ptr);
/// The grader's shared case buffer `fd` (`size` bytes from offset 0) mapped into the emulated
/// device's address space with a device allocation's layout (2 MiB slack after it, unmapped beyond),
/// and adopted (adopt_memory): a slot's write past the buffer's slack faults as an illegal address
/// instead of landing in whatever the process mapped next. nullptr (errno set) when it cannot be
/// mapped. unmap_shared_memory forgets and unmaps it (do not munmap it yourself).
void* map_shared_memory(int fd, std::size_t size);
void unmap_shared_memory(void* ptr);

}  // namespace scangrade::emu
