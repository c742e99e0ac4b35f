// Launch and tile constants of the reference scans, kept apart from the algorithms (as CUB keeps
// its tuning policies apart from its agents): a tuning is compared or changed here, not in a kernel.
#pragma once

#include <cstddef>

#include "scangrade/student_api.h"

namespace scangrade::reference::tuning {

/// Threads of a warp; the warp-level routines assume full 32-lane warps.
inline constexpr int kWarpThreads = 32;
/// log2 of the shared-memory bank count (32 banks of 4 bytes): index padding is one word per 32.
inline constexpr int kLogNumBanks = 5;

/// Hillis-Steele slot: one block, one element per thread, up to the contract's limit.
inline constexpr int kHillisSteeleMaxThreads = static_cast<int>(kHillisSteeleMaxN);  // 1024
/// Blelloch slot: one block, two elements per thread.
inline constexpr int kBlellochMaxItems = static_cast<int>(kBlellochMaxN);  // 2048

/// Multi-block slots (hierarchical, single-pass): threads per block and items per thread.
/// A tile of 256 x 16 = 4096 elements per block; 2^27 elements need 3 levels of block sums.
inline constexpr int kTileThreads = 256;
inline constexpr int kTileItemsPerThread = 16;
inline constexpr int kTileItems = kTileThreads * kTileItemsPerThread;  // 4096

/// Single-pass slot: its own tile shape, and the blocks per SM its launch bounds ask for. A build
/// may set them (-DSCANGRADE_SINGLE_PASS_THREADS=, _ITEMS=, _MIN_BLOCKS=) to compare tunings with
/// tools/bench_reference_variants.sh.
/// Tuning: tpb_256.ipt_16.min_blocks_8 (H100: 32 registers, no spills). What was measured against
/// it, and why the alternatives lost: TUNING.md in this folder.
#ifndef SCANGRADE_SINGLE_PASS_THREADS
#define SCANGRADE_SINGLE_PASS_THREADS 256
#endif
#ifndef SCANGRADE_SINGLE_PASS_ITEMS
#define SCANGRADE_SINGLE_PASS_ITEMS 16
#endif
#ifndef SCANGRADE_SINGLE_PASS_MIN_BLOCKS
#define SCANGRADE_SINGLE_PASS_MIN_BLOCKS 8  // 0: no launch bounds (the compiler picks the registers)
#endif
inline constexpr int kSinglePassThreads = SCANGRADE_SINGLE_PASS_THREADS;
inline constexpr int kSinglePassItemsPerThread = SCANGRADE_SINGLE_PASS_ITEMS;
inline constexpr int kSinglePassItems = kSinglePassThreads * kSinglePassItemsPerThread;
inline constexpr int kSinglePassMinBlocks = SCANGRADE_SINGLE_PASS_MIN_BLOCKS;
/// Reads of an earlier tile's invalid status word before the look-back sums that tile itself
/// (about 0.3 ms on an H100 at 0.6 us a read; a block that started in time publishes within a few
/// microseconds, so the limit only matters where blocks start out of order).
inline constexpr int kSinglePassSpinLimit = 512;

static_assert(kTileThreads % kWarpThreads == 0, "tile blocks are made of whole warps");
static_assert(kSinglePassThreads % kWarpThreads == 0 && kSinglePassThreads / kWarpThreads <= kWarpThreads,
              "single-pass blocks are made of at most 32 whole warps");
static_assert(kTileThreads / kWarpThreads <= kWarpThreads, "one warp scans the warp totals");

}  // namespace scangrade::reference::tuning
