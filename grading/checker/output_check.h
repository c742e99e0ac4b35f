// The checker's device-side check of a timed repetition's output: every element inside its
// acceptance band (check.h, acceptance_band), so that a call is timed only when it computed its
// result (a slot that returns a remembered result at once gets no time). The band itself is made
// here too, from the input alone, so that the judge sends a timed case's input and nothing else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include <cuda_runtime.h>

#include "scangrade/slots.h"        // ValueKind
#include "scangrade/student_api.h"  // ScanKind

namespace scangrade::grader {

/// The first index i < n with d_out[i] outside [d_lo[i], d_hi[i]] (NaN is outside), or nullopt.
/// Runs on `stream` and waits for it; `d_first` is one unsigned long long of device scratch.
template <typename T>
std::optional<std::size_t> first_outside(const T* d_out, const T* d_lo, const T* d_hi, std::size_t n,
                                         unsigned long long* d_first, cudaStream_t stream);

/// The acceptance band of the `kind` scan of d_in[0..n) into d_lo, d_hi (n elements each): what
/// acceptance_band (check.h) makes on the host, here on `stream` (then waited for). int32: the exact
/// scan, lo = hi. float: the float64 scan, the sum of the terms' magnitudes and whether they are all
/// integers (three scans in one, in float64), then the tolerance rule (tolerance.h) around it, each
/// end moved outwards one float step. The float64 sums are added in another order than the CPU
/// oracle's; the difference (below n * 2^-53 of the magnitudes' sum) is far inside the rule's
/// float32 term and inside the step each end is moved. Throws std::runtime_error on a CUDA error.
template <typename T>
void acceptance_band_on_device(const T* d_in, std::size_t n, ScanKind kind, T* d_lo, T* d_hi, cudaStream_t stream);

/// A timed repetition's fresh input and its acceptance band, on `stream` (then waited for), with no
/// host round trip: d_in[0..n) gets the values of kind `values` drawn from `seed` (fresh_input.h),
/// and the band is made from the seed, not read back from d_in (a process that maps d_in and writes
/// it meanwhile changes nothing the band is made of). Two launches: a generator kernel, then one CUB
/// scan whose input draws the values again and whose output writes the band (no intermediate
/// array): int32 writes the exact scan to d_lo only (the band of int32 is lo = hi: pass d_lo as both
/// ends to first_outside); float writes both ends, with the rule of acceptance_band_on_device
/// around a float64 scan of the values, the terms' magnitude sum bounded from the generator
/// (fresh_input.h, fresh_abs_sum_bound: never narrower than the exact rule's band, about
/// max_magnitude / mean magnitude wider: 2x for `real`, `random` and `large`).
/// Device traffic per call: int32 8 bytes per element, float 12. Throws std::runtime_error on a
/// CUDA error.
template <typename T>
void fresh_input_and_band_on_device(ValueKind values, std::uint64_t seed, std::size_t n, ScanKind kind, T* d_in,
                                    T* d_lo, T* d_hi, cudaStream_t stream);

/// True when a check case's call left everything as a pass needs it, found on the device without
/// reading anything back: the guard zones around the output still hold kCanaryBits (check.h), the
/// input is bit for bit the pristine copy, and every output element is the `kind` scan of the input
/// within the tolerance rule (`within` of check.cpp: int32 exactly, float by tolerance::bound). The
/// float64 sums are added in CUB's order, not the CPU oracle's: the rule's g64 term is the budget
/// for an oracle's own rounding, in any order. False means "not shown here": the judge reads the
/// case back and judge() (check.h) decides and explains it, as on the emulation backend; so is an
/// int32 case whose sums leave the int32 range (the oracle reports that). `zone` is n + 2 * guard
/// elements. Throws std::runtime_error on a CUDA error.
template <typename T>
bool verified_on_device(const T* zone, std::size_t guard, const T* in, const T* pristine, std::size_t n, ScanKind kind,
                        cudaStream_t stream);

/// Fills `count` 32-bit words at `p` with `value` on `stream` (no wait).
void fill_words(void* p, std::size_t count, std::uint32_t value, cudaStream_t stream);

}  // namespace scangrade::grader


