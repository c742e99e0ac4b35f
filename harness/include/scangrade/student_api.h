// ScanGrade student contract: the one header every submission is graded against.
//
// This file IS the assignment's specification. Each function below is a *slot*: you fill it in
// under student/, ScanGrade calls it on randomized and edge-case inputs and compares the result
// with a CPU oracle. Do not edit this header; the grader uses its own copy.
//
// Promises that hold for every slot (the harness keeps them, your code may rely on them):
//   * d_in and d_out are device pointers returned by cudaMalloc; they never overlap.
//   * n may be 0: then there is nothing to do and the call must succeed without error.
//   * The operator is integer/floating addition, with identity 0.
//
// Rules your code must follow (the harness checks them and reports a precise status):
//   * Do not modify d_in (reported as `input_modified`).
//   * Write exactly d_out[0] .. d_out[n-1]; a write before or after that range is reported as
//     `out_of_bounds_write` even when no memory checker would notice it.
//   * Enqueue all work on `stream`; the harness synchronizes after the call returns.
//   * Temporaries are allowed (cudaMallocAsync/cudaFreeAsync on `stream`, or cudaMalloc/cudaFree),
//     but every temporary must be freed before the slot returns (otherwise: `leak`).
//   * Compute on the GPU: copying the data to the host and scanning it there is not allowed.
//   * CUB, Thrust and other library scans are not allowed in student code.
//
// Until a slot is written it calls scangrade::not_implemented(...), which the harness reports as
// the slot's own status ("not implemented"), one line per slot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include <cuda_runtime.h>

namespace scangrade {

/// Which scan a slot computes.
///   Inclusive: out[i] = in[0] + in[1] + ... + in[i]
///   Exclusive: out[0] = 0, out[i] = in[0] + ... + in[i-1]
enum class ScanKind { Inclusive, Exclusive };

/// Largest n the Hillis-Steele slot is called with: one block, one element per thread.
inline constexpr std::size_t kHillisSteeleMaxN = 1024;
/// Largest n the Blelloch slot is called with: one block, two elements per thread.
inline constexpr std::size_t kBlellochMaxN = 2048;

/// Thrown by a slot that has not been written yet (the starter files do this). `where` is the call's
/// "student/<file>:<line>" when not_implemented() threw it.
struct NotImplemented : std::logic_error {
  explicit NotImplemented(const std::string& what, std::string at = "")
      : std::logic_error(what), where(std::move(at)) {}
  std::string where;
};

/// Marks a slot as not written yet; the harness reports it as "not implemented" and names the line
/// that called it (the default arguments are the caller's file and line, as GCC, Clang and nvcc give them).
[[noreturn]] inline void not_implemented(const char* slot, const char* file = __builtin_FILE(),
                                         int line = __builtin_LINE()) {
  std::string at(file);
  at = "student/" + at.substr(at.find_last_of('/') + 1) + ":" + std::to_string(line);
  throw NotImplemented(std::string(slot) + " is not implemented yet (" + at + ")", at);
}

}  // namespace scangrade

namespace scangrade::student {

/// Slot 1: inclusive scan with the Hillis-Steele (Kogge-Stone) algorithm in a single thread block.
/// 0 <= n <= kHillisSteeleMaxN. Launch exactly one block.
/// Beware: updating the array in place without double buffering (or a barrier between the read and
/// the write of each step) is a race, even when the GPU happens to give the right answer.
void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream);
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream);

/// Slot 2: exclusive scan with the Blelloch (Brent-Kung) work-efficient algorithm — up-sweep
/// (reduce) then down-sweep — in a single thread block, two elements per thread.
/// 0 <= n <= kBlellochMaxN, and n need not be a power of two.
void blelloch_exclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream);
void blelloch_exclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream);

/// Slot 3: hierarchical scan for any n (multi-block): scan each block's section, scan the block
/// sums (recursively, as many levels as n needs), then add each block's offset to its section.
/// `kind` selects an inclusive or an exclusive result.
void hierarchical_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, ScanKind kind, cudaStream_t stream);
void hierarchical_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind, cudaStream_t stream);

/// Slot 4 (bonus): single-pass inclusive scan for any n (stream scan / decoupled look-back).
/// Blocks must obtain their tile index dynamically (an atomic counter), not from blockIdx, so that
/// a block only ever waits for tiles that have already started: otherwise the scan can deadlock.
void single_pass_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream);
void single_pass_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream);

}  // namespace scangrade::student
