// A timed repetition's fresh input: the values of a case's `values` kind (inputs.h) drawn from a
// 64-bit seed that only the checker knows (a new one from the OS before every timed call), element
// by element, on the device or the host. Element i takes the draws of inputs.cpp's generator
// (splitmix64, a fixed number of draws per element), so a fresh input has the same distribution as
// the case's own input; test_fresh_input.cpp holds the two generators to the same values.
//
// Kinds with no freedom (zeros, ones, alternating) have one input per n: fresh_values() is false for
// them and the timed calls keep the case's own input (the timing method says so).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "scangrade/slots.h"  // ValueKind

#ifdef __CUDACC__
#define SCANGRADE_HD __host__ __device__
#else
#define SCANGRADE_HD
#endif

namespace scangrade::grader {

/// True when a `values` kind has values to draw (random, real, large).
inline bool fresh_values(ValueKind v) {
  return v == ValueKind::Random || v == ValueKind::Real || v == ValueKind::Large;
}

/// The largest magnitude an element of kind `values` can have (InputDraw below): random is an
/// integer in [-100, 100], real a float in [-1, 1), large real x 2^100 for float, below INT32_MAX
/// for int32.
SCANGRADE_HD inline double max_magnitude(ValueKind values) {
  switch (values) {
    case ValueKind::Random: return 100.0;
    case ValueKind::Real: return 1.0;
    case ValueKind::Large: return 0x1p100;  // float; int32 `large` has an exact band
    case ValueKind::Zeros: return 0.0;
    case ValueKind::Ones:
    case ValueKind::Alternating: return 1.0;
  }
  return 0x1p100;
}

/// True when every float element of kind `values` is an integer: random, zeros, ones, alternating,
/// and large (a multiple of 2^-23 times 2^100); real is not (its rare integer elements only make
/// the rule's band wider than needed, never narrower).
SCANGRADE_HD inline bool integer_values(ValueKind values) { return values != ValueKind::Real; }

/// The terms' magnitude sum of a fresh float input's prefix of `terms` elements, bounded from
/// the generator's parameters: at most terms x max_magnitude. The fresh band uses it in place of
/// the exact sum (tolerance::bound grows with the sum and is 0 only for all-integer terms, so the
/// bounded band holds the exact rule's band: an honest result inside the one is inside the other),
/// which leaves one float64 sum per element to scan instead of three values.
SCANGRADE_HD inline double fresh_abs_sum_bound(ValueKind values, std::size_t terms) {
  return static_cast<double>(terms) * max_magnitude(values);
}

/// Element i of an input of `n` elements of kind `values` drawn from `seed` (the generator's stream
/// seed: inputs.h's input_stream_seed for a case's own input, a random one for a fresh input).
template <typename T>
struct InputDraw {
  ValueKind values;
  std::uint64_t seed;
  std::size_t n;

  static constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;

  SCANGRADE_HD static std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  SCANGRADE_HD T operator()(std::size_t i) const {
    // the stream after the draws of the elements before i (one per element, two for int32 `large`)
    const std::uint64_t per = values == ValueKind::Large && std::is_integral<T>::value ? 2 : 1;
    std::uint64_t state = seed + static_cast<std::uint64_t>(i) * per * kGolden;
    const auto next = [&state] { return mix(state += kGolden); };
    // uniform real in [-1, 1) on a 2^-23 grid
    const auto real = [&next] {
      return static_cast<float>(static_cast<std::int64_t>(next() >> 40) - (1 << 23)) * 0x1p-23f;
    };
    switch (values) {
      case ValueKind::Random: return static_cast<T>(-100 + static_cast<std::int64_t>(next() % 201u));
      case ValueKind::Real: return static_cast<T>(real());
      case ValueKind::Zeros: return T(0);
      case ValueKind::Ones: return T(1);
      case ValueKind::Alternating: return i % 2 == 0 ? T(1) : T(-1);
      case ValueKind::Large:
        if constexpr (std::is_integral<T>::value) {
          const std::int64_t m = std::int64_t{2147483647} / static_cast<std::int64_t>(n);  // INT32_MAX / n
          const std::int64_t magnitude = m / 2 + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(m - m / 2 + 1));
          return static_cast<T>(next() & 1 ? magnitude : -magnitude);
        } else {
          return static_cast<T>(real() * 0x1p100f);  // ldexp(real, 100): exact
        }
    }
    return T(0);
  }
};

}  // namespace scangrade::grader
