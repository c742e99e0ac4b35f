// Deterministic input generation: the same (seed, id) gives the same input on every machine.
//
// Value patterns (Case::values):
//   random       int32: uniform integers in [-100, 100]; float32: the same, as integer-valued floats
//   real         float32 only: uniform reals in [-1, 1) on a 2^-23 grid
//   zeros, ones  all 0, all 1
//   alternating  +1, -1, +1, ...
//   large        int32: |x| in [M/2, M] with random signs, M = INT32_MAX / n, so that no prefix sum
//                leaves the int32 range; float32: uniform reals in [-1, 1) scaled by 2^100
// The generator is splitmix64 seeded from the case's seed and id (no std:: distributions, whose
// output differs between standard libraries).
#pragma once

#include <cstdint>
#include <vector>

#include "scangrade/suite.h"

namespace scangrade {

/// The 64-bit stream seed of a case: mixes Case::seed with a hash of Case::id.
std::uint64_t input_stream_seed(const Case& c);

/// Mixes an instructor's secret into a seed (hidden suites: inputs cannot be predicted).
std::uint64_t mix_secret(std::uint64_t seed, const std::string& secret);

/// The case's input. Element i takes the same draws of the stream on every machine whatever the
/// thread count (a fixed number of draws per element, so a thread starts its range at its own place
/// in the stream): `threads` 0 means up to the machine's cores for large n (a 2^26-element case in
/// a tenth of the time), 1 one thread.
template <typename T>
std::vector<T> make_input(const Case& c, unsigned threads = 0);

}  // namespace scangrade
