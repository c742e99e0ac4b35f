// Launch and tile constants of the reference scans, kept apart from the algorithms (STYLE.md §2).
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

static_assert(kTileThreads % kWarpThreads == 0, "tile blocks are made of whole warps");
static_assert(kTileThreads / kWarpThreads <= kWarpThreads, "one warp scans the warp totals");

}  // namespace scangrade::reference::tuning
