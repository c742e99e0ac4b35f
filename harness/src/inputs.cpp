// Deterministic input generation (inputs.h).
#include "scangrade/inputs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <type_traits>

namespace scangrade {
namespace {

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 0x100000001b3ull;
  }
  return h;
}

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  /// The generator after `draws` calls of next(): its state only advances by kGolden.
  static SplitMix64 after(std::uint64_t seed, std::uint64_t draws) { return SplitMix64(seed + draws * kGolden); }
  std::uint64_t next() {
    std::uint64_t z = (state_ += kGolden);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform integer in [lo, hi] (modulo bias below 2^-50 for these ranges).
  std::int64_t integer(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  /// Uniform real in [-1, 1) on a 2^-23 grid: exactly representable as float.
  float real() { return static_cast<float>(static_cast<std::int64_t>(next() >> 40) - (1 << 23)) * 0x1p-23f; }

 private:
  std::uint64_t state_;
};

/// How many next() calls draw() makes per element: fixed per pattern and type.
template <typename T>
std::uint64_t draws_per_element(ValueKind kind) {
  switch (kind) {
    case ValueKind::Random:
    case ValueKind::Real: return 1;
    case ValueKind::Large: return std::is_integral_v<T> ? 2 : 1;
    case ValueKind::Zeros:
    case ValueKind::Ones:
    case ValueKind::Alternating: return 0;
  }
  return 0;
}

template <typename T>
T draw(ValueKind kind, std::size_t i, std::size_t n, SplitMix64& rng) {
  switch (kind) {
    case ValueKind::Random: return static_cast<T>(rng.integer(-100, 100));
    case ValueKind::Real: return static_cast<T>(rng.real());
    case ValueKind::Zeros: return T(0);
    case ValueKind::Ones: return T(1);
    case ValueKind::Alternating: return i % 2 == 0 ? T(1) : T(-1);
    case ValueKind::Large:
      if constexpr (std::is_integral_v<T>) {
        const std::int64_t m = std::numeric_limits<std::int32_t>::max() / static_cast<std::int64_t>(n);
        const std::int64_t magnitude = rng.integer(m / 2, m);
        return static_cast<T>(rng.next() & 1 ? magnitude : -magnitude);
      } else {
        return static_cast<T>(std::ldexp(rng.real(), 100));
      }
  }
  return T(0);
}

}  // namespace

std::uint64_t input_stream_seed(const Case& c) { return SplitMix64(c.seed ^ fnv1a(c.id)).next(); }

std::uint64_t mix_secret(std::uint64_t seed, const std::string& secret) {
  return SplitMix64(seed ^ fnv1a("scangrade-secret:" + secret)).next();
}

template <typename T>
std::vector<T> make_input(const Case& c, unsigned threads) {
  const std::uint64_t seed = input_stream_seed(c), per = draws_per_element<T>(c.values);
  std::vector<T> values(c.n);
  const auto fill = [&](std::size_t from, std::size_t to) {
    SplitMix64 rng = SplitMix64::after(seed, static_cast<std::uint64_t>(from) * per);
    for (std::size_t i = from; i < to; ++i) values[i] = draw<T>(c.values, i, c.n, rng);
  };
  constexpr std::size_t kPerThread = 1 << 20;
  if (threads == 0) threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  const std::size_t parts = std::min<std::size_t>(threads, (c.n + kPerThread - 1) / kPerThread);
  if (parts <= 1) {
    fill(0, c.n);
    return values;
  }
  std::vector<std::thread> workers;
  const std::size_t step = (c.n + parts - 1) / parts;
  for (std::size_t from = step; from < c.n; from += step) workers.emplace_back(fill, from, std::min(c.n, from + step));
  fill(0, step);
  for (std::thread& t : workers) t.join();
  return values;
}

template std::vector<std::int32_t> make_input<std::int32_t>(const Case&, unsigned);
template std::vector<float> make_input<float>(const Case&, unsigned);

}  // namespace scangrade
