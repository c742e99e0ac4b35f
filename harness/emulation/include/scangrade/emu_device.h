// ScanGrade CPU emulator: device-side built-ins (internal; included by cuda_runtime.h).
//
// Qualifiers, built-in variables, barriers, warp operations, atomics, intrinsics, and the launcher
// that rewrite.py's output calls. Calls that wait for other threads (barriers, warp operations)
// are macros that record the caller's __FILE__/__LINE__; rewrite.py's #line directives make those
// the student's file and line. See scangrade/emu.h for the execution model.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../cuda_runtime_api.h"
#include "emu_shift.h"

// ---- qualifiers ---------------------------------------------------------------------------------

#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
// __restrict__ is a GNU C++ keyword already.
// rewrite.py replaces every __shared__ declaration; one it could not see (e.g. behind a macro) must
// not silently become a per-thread variable, so this makes it a compile error.
#define __shared__ __scangrade_emu_shared_declaration_not_rewritten__

// ---- built-in variables -------------------------------------------------------------------------
// Set by the scheduler before a thread resumes; student code only reads them.
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;
static const int warpSize = 32;

namespace scangrade::emu::detail {

// ---- runtime entry points (src/scheduler.cpp) ---------------------------------------------------

enum class WarpOp : int {
  Sync, ShflIdx, ShflUp, ShflDown, ShflXor, Ballot, Any, All,
  ReduceAddU, ReduceMinU, ReduceMaxU, ReduceMinI, ReduceMaxI, ReduceAnd, ReduceOr, ReduceXor,
};
enum class BarrierOp : int { Sync, Count, And, Or };

int block_barrier(BarrierOp op, int predicate, const char* file, int line);
std::uint64_t warp_op(WarpOp op, unsigned mask, std::uint64_t value, int arg, int width, const char* file,
                      int line);
unsigned active_mask();
void yield_point();
[[noreturn]] void trap(const char* what, const char* file, int line);

/// The kernel that is running: rewrite.py starts each kernel body it registers with
/// `kernel_entered("name", __FILE__, __LINE__)` (the line of the body's `{`), recorded once per launch
/// for the messages that name the kernel (emu::launched_kernels()).
extern const char* g_entered_kernel;
void kernel_entered_first(const char* name, const char* file, int line);
inline void kernel_entered(const char* name, const char* file, int line) {
  if (g_entered_kernel == nullptr) kernel_entered_first(name, file, line);
}

// shared memory
extern std::uint64_t g_block_generation;  // changes at the start of every block
extern unsigned char* g_dynamic_shared;   // this launch's dynamic shared memory
void* static_shared_alloc(std::size_t size, std::size_t align);

struct SharedSlot {
  std::uint64_t generation = 0;
  void* ptr = nullptr;
};
template <class S>
inline SharedSlot shared_slot{};

/// Storage of one static `__shared__` declaration site (S is a local struct rewrite.py declares at
/// the site, so a template instantiated with another type gets another slot): fresh per block.
template <class S>
inline S& block_shared() {
  SharedSlot& slot = shared_slot<S>;
  if (slot.generation != g_block_generation) {
    slot.ptr = static_shared_alloc(sizeof(S), alignof(S));
    slot.generation = g_block_generation;
  }
  return *static_cast<S*>(slot.ptr);
}

/// `extern __shared__ T name[];` becomes `T* name = dynamic_shared<T>();`.
template <class T>
inline T* dynamic_shared() {
  return reinterpret_cast<T*>(g_dynamic_shared);
}

// ---- launcher -----------------------------------------------------------------------------------

struct LaunchConfig {
  dim3 grid;
  dim3 block;
  std::size_t shared_bytes;
  cudaStream_t stream;
  std::size_t param_bytes = 0;  // the kernel's arguments, set by launch(): what the host sends with it
  LaunchConfig(dim3 g, dim3 b, std::size_t smem = 0, cudaStream_t s = nullptr)
      : grid(g), block(b), shared_bytes(smem), stream(s) {}
};

using ThreadBody = void (*)(void* closure);
void run_launch(const LaunchConfig& config, const char* file, int line, ThreadBody body, void* closure);

/// What `kernel<<<config>>>(args...)` becomes: the arguments are evaluated once, copied (kernel
/// parameters are by value), and every thread calls `call(args...)`, a generic lambda wrapping the
/// kernel so that kernel templates deduce their arguments as usual.
template <class Call, class... Args>
inline void launch(const char* file, int line, Call&& call, const LaunchConfig& config, Args&&... args) {
  std::tuple<std::decay_t<Args>...> params(std::forward<Args>(args)...);
  auto body = [&]() { std::apply(call, params); };
  using Body = decltype(body);
  LaunchConfig with_params = config;
  with_params.param_bytes = sizeof(params);
  run_launch(with_params, file, line, [](void* closure) { (*static_cast<Body*>(closure))(); }, &body);
}

// ---- call-site helpers --------------------------------------------------------------------------

template <class T>
inline std::uint64_t to_bits(T v) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "shuffle of an unsupported type");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}
template <class T>
inline T from_bits(std::uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

/// `__syncthreads()` expands to `Site{__FILE__, __LINE__}.syncthreads()`, and so on.
struct Site {
  const char* file;
  int line;

  void syncthreads() const { block_barrier(BarrierOp::Sync, 1, file, line); }
  int syncthreads_count(int p) const { return block_barrier(BarrierOp::Count, p, file, line); }
  int syncthreads_and(int p) const { return block_barrier(BarrierOp::And, p, file, line); }
  int syncthreads_or(int p) const { return block_barrier(BarrierOp::Or, p, file, line); }
  void syncwarp(unsigned mask = 0xffffffffu) const { warp_op(WarpOp::Sync, mask, 0, 0, 32, file, line); }

  template <class T>
  T shfl(unsigned mask, T v, int src, int width = 32) const {
    return from_bits<T>(warp_op(WarpOp::ShflIdx, mask, to_bits(v), src, width, file, line));
  }
  template <class T>
  T shfl_up(unsigned mask, T v, unsigned delta, int width = 32) const {
    return from_bits<T>(warp_op(WarpOp::ShflUp, mask, to_bits(v), static_cast<int>(delta), width, file, line));
  }
  template <class T>
  T shfl_down(unsigned mask, T v, unsigned delta, int width = 32) const {
    return from_bits<T>(warp_op(WarpOp::ShflDown, mask, to_bits(v), static_cast<int>(delta), width, file, line));
  }
  template <class T>
  T shfl_xor(unsigned mask, T v, int lane_mask, int width = 32) const {
    return from_bits<T>(warp_op(WarpOp::ShflXor, mask, to_bits(v), lane_mask, width, file, line));
  }
  unsigned ballot(unsigned mask, int p) const {
    return static_cast<unsigned>(warp_op(WarpOp::Ballot, mask, p != 0, 0, 32, file, line));
  }
  int any(unsigned mask, int p) const { return static_cast<int>(warp_op(WarpOp::Any, mask, p != 0, 0, 32, file, line)); }
  int all(unsigned mask, int p) const { return static_cast<int>(warp_op(WarpOp::All, mask, p != 0, 0, 32, file, line)); }

  unsigned reduce_add(unsigned mask, unsigned v) const { return unsigned(warp_op(WarpOp::ReduceAddU, mask, v, 0, 32, file, line)); }
  int reduce_add(unsigned mask, int v) const { return int(warp_op(WarpOp::ReduceAddU, mask, unsigned(v), 0, 32, file, line)); }
  unsigned reduce_min(unsigned mask, unsigned v) const { return unsigned(warp_op(WarpOp::ReduceMinU, mask, v, 0, 32, file, line)); }
  int reduce_min(unsigned mask, int v) const { return int(warp_op(WarpOp::ReduceMinI, mask, unsigned(v), 0, 32, file, line)); }
  unsigned reduce_max(unsigned mask, unsigned v) const { return unsigned(warp_op(WarpOp::ReduceMaxU, mask, v, 0, 32, file, line)); }
  int reduce_max(unsigned mask, int v) const { return int(warp_op(WarpOp::ReduceMaxI, mask, unsigned(v), 0, 32, file, line)); }
  unsigned reduce_and(unsigned mask, unsigned v) const { return unsigned(warp_op(WarpOp::ReduceAnd, mask, v, 0, 32, file, line)); }
  unsigned reduce_or(unsigned mask, unsigned v) const { return unsigned(warp_op(WarpOp::ReduceOr, mask, v, 0, 32, file, line)); }
  unsigned reduce_xor(unsigned mask, unsigned v) const { return unsigned(warp_op(WarpOp::ReduceXor, mask, v, 0, 32, file, line)); }

  [[noreturn]] void trap() const { detail::trap("__trap() called", file, line); }
};

}  // namespace scangrade::emu::detail

#define SCANGRADE_EMU_SITE ::scangrade::emu::detail::Site{__FILE__, __LINE__}
#define __syncthreads SCANGRADE_EMU_SITE.syncthreads
#define __syncthreads_count SCANGRADE_EMU_SITE.syncthreads_count
#define __syncthreads_and SCANGRADE_EMU_SITE.syncthreads_and
#define __syncthreads_or SCANGRADE_EMU_SITE.syncthreads_or
#define __syncwarp SCANGRADE_EMU_SITE.syncwarp
#define __shfl_sync SCANGRADE_EMU_SITE.shfl
#define __shfl_up_sync SCANGRADE_EMU_SITE.shfl_up
#define __shfl_down_sync SCANGRADE_EMU_SITE.shfl_down
#define __shfl_xor_sync SCANGRADE_EMU_SITE.shfl_xor
#define __ballot_sync SCANGRADE_EMU_SITE.ballot
#define __any_sync SCANGRADE_EMU_SITE.any
#define __all_sync SCANGRADE_EMU_SITE.all
#define __reduce_add_sync SCANGRADE_EMU_SITE.reduce_add
#define __reduce_min_sync SCANGRADE_EMU_SITE.reduce_min
#define __reduce_max_sync SCANGRADE_EMU_SITE.reduce_max
#define __reduce_and_sync SCANGRADE_EMU_SITE.reduce_and
#define __reduce_or_sync SCANGRADE_EMU_SITE.reduce_or
#define __reduce_xor_sync SCANGRADE_EMU_SITE.reduce_xor
#define __trap SCANGRADE_EMU_SITE.trap

inline unsigned __activemask() { return ::scangrade::emu::detail::active_mask(); }

// ---- fences, sleep, clocks ----------------------------------------------------------------------
// All writes are immediately visible; fences and sleep only let the other threads of the block run.

inline void __threadfence() { ::scangrade::emu::detail::yield_point(); }
inline void __threadfence_block() { ::scangrade::emu::detail::yield_point(); }
inline void __threadfence_system() { ::scangrade::emu::detail::yield_point(); }
inline void __nanosleep(unsigned) { ::scangrade::emu::detail::yield_point(); }

// Programmatic dependent launch: emulated kernels run one after another in stream order, so the
// previous kernel has always finished (and its writes are visible) when a kernel starts.
inline void cudaGridDependencySynchronize() {}
inline void cudaTriggerProgrammaticLaunchCompletion() {}
long long clock64();

// ---- atomics ------------------------------------------------------------------------------------
// The emulator runs one thread at a time, so a read-modify-write is atomic by construction; each
// atomic is a yield point (see scangrade/emu.h).

namespace scangrade::emu::detail {
template <class T, class F>
inline T atomic_rmw(T* address, F op) {
  yield_point();
  T old = *address;
  *address = op(old);
  return old;
}
}  // namespace scangrade::emu::detail

#define SCANGRADE_EMU_ATOMIC(name, T, expr)                                                          \
  inline T name(T* address, T val) {                                                               \
    return ::scangrade::emu::detail::atomic_rmw(address, [val]([[maybe_unused]] T old) -> T { return expr; });      \
  }                                                                                                \
  inline T name##_block(T* address, T val) { return name(address, val); }                          \
  inline T name##_system(T* address, T val) { return name(address, val); }

SCANGRADE_EMU_ATOMIC(atomicAdd, int, old + val)
SCANGRADE_EMU_ATOMIC(atomicAdd, unsigned int, old + val)
SCANGRADE_EMU_ATOMIC(atomicAdd, unsigned long long, old + val)
SCANGRADE_EMU_ATOMIC(atomicAdd, float, old + val)
SCANGRADE_EMU_ATOMIC(atomicAdd, double, old + val)
SCANGRADE_EMU_ATOMIC(atomicSub, int, old - val)
SCANGRADE_EMU_ATOMIC(atomicSub, unsigned int, old - val)
SCANGRADE_EMU_ATOMIC(atomicExch, int, val)
SCANGRADE_EMU_ATOMIC(atomicExch, unsigned int, val)
SCANGRADE_EMU_ATOMIC(atomicExch, unsigned long long, val)
SCANGRADE_EMU_ATOMIC(atomicExch, float, val)
SCANGRADE_EMU_ATOMIC(atomicMax, int, old > val ? old : val)
SCANGRADE_EMU_ATOMIC(atomicMax, unsigned int, old > val ? old : val)
SCANGRADE_EMU_ATOMIC(atomicMax, long long, old > val ? old : val)
SCANGRADE_EMU_ATOMIC(atomicMax, unsigned long long, old > val ? old : val)
SCANGRADE_EMU_ATOMIC(atomicMin, int, old < val ? old : val)
SCANGRADE_EMU_ATOMIC(atomicMin, unsigned int, old < val ? old : val)
SCANGRADE_EMU_ATOMIC(atomicMin, long long, old < val ? old : val)
SCANGRADE_EMU_ATOMIC(atomicMin, unsigned long long, old < val ? old : val)
SCANGRADE_EMU_ATOMIC(atomicAnd, int, old & val)
SCANGRADE_EMU_ATOMIC(atomicAnd, unsigned int, old & val)
SCANGRADE_EMU_ATOMIC(atomicAnd, unsigned long long, old & val)
SCANGRADE_EMU_ATOMIC(atomicOr, int, old | val)
SCANGRADE_EMU_ATOMIC(atomicOr, unsigned int, old | val)
SCANGRADE_EMU_ATOMIC(atomicOr, unsigned long long, old | val)
SCANGRADE_EMU_ATOMIC(atomicXor, int, old ^ val)
SCANGRADE_EMU_ATOMIC(atomicXor, unsigned int, old ^ val)
SCANGRADE_EMU_ATOMIC(atomicXor, unsigned long long, old ^ val)
SCANGRADE_EMU_ATOMIC(atomicInc, unsigned int, old >= val ? 0u : old + 1u)
SCANGRADE_EMU_ATOMIC(atomicDec, unsigned int, (old == 0u || old > val) ? val : old - 1u)
#undef SCANGRADE_EMU_ATOMIC

#define SCANGRADE_EMU_ATOMIC_CAS(T)                                                                  \
  inline T atomicCAS(T* address, T compare, T val) {                                               \
    return ::scangrade::emu::detail::atomic_rmw(                                                   \
        address, [compare, val](T old) -> T { return old == compare ? val : old; });               \
  }                                                                                                \
  inline T atomicCAS_block(T* address, T compare, T val) { return atomicCAS(address, compare, val); } \
  inline T atomicCAS_system(T* address, T compare, T val) { return atomicCAS(address, compare, val); }
SCANGRADE_EMU_ATOMIC_CAS(int)
SCANGRADE_EMU_ATOMIC_CAS(unsigned int)
SCANGRADE_EMU_ATOMIC_CAS(unsigned long long)
SCANGRADE_EMU_ATOMIC_CAS(unsigned short)
#undef SCANGRADE_EMU_ATOMIC_CAS

// ---- integer and float intrinsics ---------------------------------------------------------------

inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x) {
  unsigned int r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline int __mul24(int a, int b) { return (a << 8 >> 8) * (b << 8 >> 8); }
inline unsigned int __umul24(unsigned int a, unsigned int b) { return (a & 0xffffffu) * (b & 0xffffffu); }
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned int __umulhi(unsigned int a, unsigned int b) {
  return static_cast<unsigned int>((static_cast<unsigned long long>(a) * b) >> 32);
}

inline unsigned int __float_as_uint(float x) { return ::scangrade::emu::detail::from_bits<unsigned int>(::scangrade::emu::detail::to_bits(x)); }
inline int __float_as_int(float x) { return ::scangrade::emu::detail::from_bits<int>(::scangrade::emu::detail::to_bits(x)); }
inline float __uint_as_float(unsigned int x) { return ::scangrade::emu::detail::from_bits<float>(::scangrade::emu::detail::to_bits(x)); }
inline float __int_as_float(int x) { return ::scangrade::emu::detail::from_bits<float>(::scangrade::emu::detail::to_bits(x)); }
inline long long __double_as_longlong(double x) { return ::scangrade::emu::detail::from_bits<long long>(::scangrade::emu::detail::to_bits(x)); }
inline double __longlong_as_double(long long x) { return ::scangrade::emu::detail::from_bits<double>(::scangrade::emu::detail::to_bits(x)); }

inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline int __float2int_rz(float x) { return static_cast<int>(x); }
inline int __float2int_rn(float x) { return static_cast<int>(std::nearbyint(x)); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }

// cache-hinted loads and stores are plain accesses
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline T __ldcv(const T* p) { return *p; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
template <class T> inline void __stwb(T* p, T v) { *p = v; }
template <class T> inline void __stwt(T* p, T v) { *p = v; }

// ---- min / max (CUDA declares these overloads in the global namespace) ---------------------------

#define SCANGRADE_EMU_MINMAX(T)                                                                      \
  inline T min(T a, T b) { return b < a ? b : a; }                                                 \
  inline T max(T a, T b) { return a < b ? b : a; }
SCANGRADE_EMU_MINMAX(int)
SCANGRADE_EMU_MINMAX(unsigned int)
SCANGRADE_EMU_MINMAX(long)
SCANGRADE_EMU_MINMAX(unsigned long)
SCANGRADE_EMU_MINMAX(long long)
SCANGRADE_EMU_MINMAX(unsigned long long)
SCANGRADE_EMU_MINMAX(float)
SCANGRADE_EMU_MINMAX(double)
#undef SCANGRADE_EMU_MINMAX
template <class A, class B,
          class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B> && !std::is_same_v<A, B>>>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b) : static_cast<C>(a);
}
template <class A, class B,
          class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B> && !std::is_same_v<A, B>>>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
}
