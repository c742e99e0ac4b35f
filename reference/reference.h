// ScanGrade reference solutions: the model answers to the four slots of
// harness/include/scangrade/student_api.h, plus a CUB speed baseline.
//
// Every function here has exactly the signature and the promises of its scangrade::student
// counterpart: d_in/d_out are non-overlapping cudaMalloc pointers, n may be 0 (then nothing is
// launched), only d_out[0..n) is written, d_in is never modified, all work is enqueued on `stream`
// (the caller synchronizes), and every temporary (cudaMallocAsync/cudaFreeAsync on `stream`) is
// released before the call returns. Errors are thrown as std::runtime_error with CUDA's message.
//
// The 8 reference slots use only plain CUDA (no CUB, no cooperative groups, no inline PTX), so
// that they also run under the course's CPU emulation backend. Tile sizes: reference/tuning.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "scangrade/student_api.h"

namespace scangrade::reference {

/// Slot 1: inclusive Hillis-Steele (Kogge-Stone) scan in one block, one element per thread,
/// double-buffered in shared memory. 0 <= n <= kHillisSteeleMaxN (1024); throws std::invalid_argument
/// above.
void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream);
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream);

/// Slot 2: exclusive Blelloch (Brent-Kung) scan in one block, two elements per thread: up-sweep,
/// clear the root, down-sweep, with bank-conflict-avoiding index padding. n need not be a power of
/// two (the tree is padded with zeros). 0 <= n <= kBlellochMaxN (2048); throws std::invalid_argument
/// above.
void blelloch_exclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream);
void blelloch_exclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream);

/// Slot 3: hierarchical scan, any n. Each block scans a tile of tuning::kTileItems elements
/// (coalesced loads, several items per thread) and writes the tile's total; the tile totals are
/// scanned (exclusive) by the same routine, recursively, with as many levels as n needs; then
/// each tile's offset is added to it. `kind` selects an inclusive or an exclusive result.
void hierarchical_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, ScanKind kind, cudaStream_t stream);
void hierarchical_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind, cudaStream_t stream);

/// Slot 4: single-pass inclusive scan, any n (decoupled look-back). Block b scans tile b,
/// publishes its tile's aggregate (A), looks back over earlier tiles' 64-bit status words
/// (X invalid / A aggregate / P inclusive prefix) until it reaches a P, then publishes its own
/// inclusive prefix (P). The status words: one temporary, zeroed by a first kernel that the scan
/// kernel follows as a programmatic dependent launch (sm_90 and up). A block waits for an earlier
/// tile's status word a bounded time, then sums that tile from the input itself, so it makes
/// progress whatever order the GPU starts blocks in (single_pass.cu says why).
void single_pass_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream);
void single_pass_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream);

/// The parts a single_pass_inclusive call is made of, for measuring what each costs
/// (tools/bench_reference.py --parts). A call is: a workspace of workspace_bytes(n) from
/// cudaMallocAsync, clear_workspace (a kernel), scan_kernel, cudaFreeAsync. n > 0.
namespace single_pass_parts {
std::size_t workspace_bytes(std::size_t n);
void clear_workspace(void* workspace, std::size_t n, cudaStream_t stream);
/// Which tile a block scans: tile b by block b (what a call does), or the tiles in reverse, so that
/// every block starts before the tiles it waits on, as a GPU that starts blocks in any order may:
/// the look-back must still finish (its bounded wait, then its own sum of the tile).
enum class TileOrder { ByBlock, Reversed };
/// The scan kernel alone, on a workspace that clear_workspace cleared since its last use.
void scan_kernel(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, void* workspace, cudaStream_t stream,
                 TileOrder order = TileOrder::ByBlock);
void scan_kernel(const float* d_in, float* d_out, std::size_t n, void* workspace, cudaStream_t stream,
                 TileOrder order = TileOrder::ByBlock);
}  // namespace single_pass_parts

}  // namespace scangrade::reference

namespace scangrade::baseline {

/// Speed baseline: cub::DeviceScan::InclusiveSum / ExclusiveSum (per `kind`), any n. Its temporary
/// storage comes from cudaMallocAsync on `stream` and is freed (cudaFreeAsync) before returning.
void cub_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, ScanKind kind, cudaStream_t stream);
void cub_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind, cudaStream_t stream);

}  // namespace scangrade::baseline
