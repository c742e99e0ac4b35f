// ScanGrade CPU emulator: state shared by the runtime API (runtime.cpp) and the scheduler
// (scheduler.cpp). Internal; not installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cuda_runtime_api.h"
#include "scangrade/emu.h"

namespace scangrade::emu::detail {

inline constexpr std::size_t kSharedPerBlock = 48 * 1024;         // default limit (static + dynamic)
inline constexpr std::size_t kSharedPerBlockOptin = 227 * 1024;   // cudaFuncSetAttribute maximum
inline constexpr int kMaxThreadsPerBlock = 1024;
inline constexpr int kMultiProcessors = 132;

struct ErrorState {
  cudaError_t last = cudaSuccess;    // returned (and cleared) by cudaGetLastError
  cudaError_t sticky = cudaSuccess;  // kernel fault: returned by every call until clear_error()
  std::string diagnostic;
};
ErrorState& errors();
Stats& mutable_stats();
bool poison_enabled();
std::size_t dynamic_shared_limit();

/// Records a non-sticky error (launch configuration, bad argument) and its diagnostic; returns it.
cudaError_t api_error(cudaError_t error, std::string diagnostic);
/// Records a sticky kernel fault with its diagnostic: cudaErrorLaunchFailure (divergent barrier,
/// deadlock, ...) or cudaErrorIllegalAddress (an access to unmapped memory).
void kernel_fault(std::string diagnostic, cudaError_t code = cudaErrorLaunchFailure);
/// Where `addr` lies with respect to the emulated device memory, for the report of an access that
/// faulted: "1024 bytes past the end of the 4096-byte allocation at 0x..., beyond ...".
std::string describe_address(const void* addr);
/// The sticky error if there is one, else `result` (recorded as the last error when it failed).
cudaError_t api_result(cudaError_t result);

bool stream_is_valid(cudaStream_t stream);
/// Called by reset(): forget the scheduler's per-launch settings (not the thread order).
void reset_scheduler_limits();
/// A launch that runs (valid configuration), for the trace (trace_begin .. trace_end).
void trace_launch(const char* file, int line, std::uint64_t blocks, std::size_t param_bytes);
/// The same launch, for launched_kernels(): its site, and the kernel the rewriter named (nullptr: none).
void note_launch(const char* file, int line, const char* kernel, const char* kernel_file, int kernel_line);
/// "the kernel `k` (student/x.cu:14) launched at student/x.cu:40 ..., block (0,0,0) thread (3,0,0)" while
/// a kernel thread runs, else "".
std::string current_kernel_where();
bool in_kernel_thread();
/// Called before an access through a volatile lvalue (volatile_access.cpp): a warp-lockstep yield
/// when it lands in the block's shared memory (Scheduler::volatile_access).
void volatile_access(const void* addr);
/// SIGFPE during a launch: a trapping integer division completes with the GPU's value (undefined.cpp).
void install_division_handler();
void restore_division_handler();

}  // namespace scangrade::emu::detail
