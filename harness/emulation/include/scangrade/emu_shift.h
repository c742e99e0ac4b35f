// ScanGrade CPU emulator: shifts in device code computed as the GPU computes them (internal;
// included by emu_device.h).
//
// C++ leaves a shift by a count < 0 or >= the width of the (promoted) left operand undefined. The GPU's
// shift instructions clamp the count (PTX shl/shr: x << 32 == 0, unsigned x >> 32 == 0, signed
// x >> 32 == 0 or -1 by its sign); x86 takes it modulo the width (x << 32 == x). rewrite.py turns every
// shift in a __device__/__global__ function body and in a function-like macro's body into the same
// operator with a mark after it, which keeps the expression's grammar (same operator, same precedence,
// same associativity):
//     a << b     becomes   a << SITE << b      (a << SITE) is a shift_operand; (that << b) the shift
// (`<<=` and `>>=` are left alone: their left operand may be a bit-field, which no operator function
// can take by reference)
// where SITE is __sg_shift, a shift_site{__FILE__, __LINE__} where it is used (the student's file:line
// through the rewriter's #line; a short name keeps the columns of compiler messages close).
// A count in range is the C++ shift itself; one out of range gives the GPU's value and is recorded for
// the case's note (src/undefined.cpp). Every function is constexpr: a shift in a constant expression is
// still one, and one out of range there is not a constant expression (an error, as nvcc's).
// An operand that is not an integer (a stream, a class with its own operator<<) passes through untouched.
#pragma once

#include <type_traits>

namespace scangrade::emu::detail {

struct shift_site {
  const char* file;
  unsigned line;
};

/// Records a shift whose count was out of range (src/undefined.cpp).
void record_clamped_shift(const shift_site& at, bool left, unsigned width, bool is_signed, unsigned long long bits,
                          long long count);

template <class T>
inline constexpr bool shift_integer = std::is_integral_v<T> || (std::is_enum_v<T> && std::is_convertible_v<T, int>);

template <class T>
struct shift_operand {
  T value;
  shift_site at;
};

/// `a << b` (left) or `a >> b`, with the GPU's value for a count out of range.
template <class T, class U>
constexpr auto gpu_shift(T a, U b, bool left, const shift_site& at) {
  using P = decltype(+a);  // the promoted type: the result's
  constexpr unsigned width = sizeof(P) * 8;
  const auto count = +b;
  bool in_range = static_cast<unsigned long long>(count) < width;
  if constexpr (std::is_signed_v<decltype(count)>) in_range = in_range && count >= 0;
  if (in_range) return left ? static_cast<P>(+a << count) : static_cast<P>(+a >> count);
  record_clamped_shift(at, left, width, std::is_signed_v<P>, static_cast<unsigned long long>(+a),
                       static_cast<long long>(count));
  if constexpr (std::is_signed_v<P>) {
    if (!left && +a < 0) return static_cast<P>(-1);
  }
  return static_cast<P>(0);
}

// a << SITE, a >> SITE: an integer left operand is kept for the shift that follows
template <class T, std::enable_if_t<shift_integer<T>, int> = 0>
constexpr shift_operand<T> operator<<(T a, shift_site at) {
  return {a, at};
}
template <class T, std::enable_if_t<shift_integer<T>, int> = 0>
constexpr shift_operand<T> operator>>(T a, shift_site at) {
  return {a, at};
}
// ... anything else passes through to its own operator
template <class T, std::enable_if_t<!shift_integer<std::decay_t<T>>, int> = 0>
constexpr T&& operator<<(T&& a, shift_site) {
  return static_cast<T&&>(a);
}
template <class T, std::enable_if_t<!shift_integer<std::decay_t<T>>, int> = 0>
constexpr T&& operator>>(T&& a, shift_site) {
  return static_cast<T&&>(a);
}

// (a << SITE) << b, (a >> SITE) >> b
template <class T, class U, std::enable_if_t<shift_integer<U>, int> = 0>
constexpr auto operator<<(shift_operand<T> a, U b) {
  return gpu_shift(a.value, b, true, a.at);
}
template <class T, class U, std::enable_if_t<shift_integer<U>, int> = 0>
constexpr auto operator>>(shift_operand<T> a, U b) {
  return gpu_shift(a.value, b, false, a.at);
}
template <class T, class U, std::enable_if_t<!shift_integer<std::decay_t<U>>, int> = 0>
constexpr auto operator<<(shift_operand<T> a, U&& b) -> decltype(a.value << static_cast<U&&>(b)) {
  return a.value << static_cast<U&&>(b);
}
template <class T, class U, std::enable_if_t<!shift_integer<std::decay_t<U>>, int> = 0>
constexpr auto operator>>(shift_operand<T> a, U&& b) -> decltype(a.value >> static_cast<U&&>(b)) {
  return a.value >> static_cast<U&&>(b);
}

}  // namespace scangrade::emu::detail

#define __sg_shift ::scangrade::emu::detail::shift_site{__FILE__, __LINE__}
