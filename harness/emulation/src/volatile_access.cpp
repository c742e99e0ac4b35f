// ScanGrade CPU emulator: the calls that GCC's -fsanitize=thread instrumentation puts into emulated
// student code. No sanitizer runtime is linked; the emulator needs only one thing from the
// instrumentation: to know when a thread is about to access memory through a volatile lvalue
// (--param=tsan-distinguish-volatile=1 gives those accesses calls of their own), so that warp
// lockstep can let the other lanes of the warp make the same access first (Scheduler::volatile_access,
// set_warp_lockstep in scangrade/emu.h). Every other call does nothing, or performs the atomic
// operation it stands for, as the uninstrumented code would.
//
// The names and signatures are the instrumentation's ABI as GCC emits it (gcc/sanitizer.def): plain
// and unaligned reads and writes of 1, 2, 4, 8 and 16 bytes, ranges, volatile reads and writes,
// virtual-pointer updates, function entry and exit, and the __tsan_atomic* family with a memory-order
// argument (0 relaxed, 1 consume, 2 acquire, 3 release, 4 acq_rel, 5 seq_cst, the order of the C++
// enumeration).

#include <cstdint>

#include "internal.h"

using scangrade::emu::detail::volatile_access;

#define SG_EXPORT extern "C" __attribute__((visibility("default")))

SG_EXPORT void __tsan_init() {}
SG_EXPORT void __tsan_func_entry(void*) {}
SG_EXPORT void __tsan_func_exit() {}
SG_EXPORT void __tsan_vptr_update(void**, void*) {}
SG_EXPORT void __tsan_vptr_read(void**) {}
SG_EXPORT void __tsan_read_range(void*, unsigned long) {}
SG_EXPORT void __tsan_write_range(void*, unsigned long) {}

#define SG_PLAIN(N)                                       \
  SG_EXPORT void __tsan_read##N(void*) {}                 \
  SG_EXPORT void __tsan_write##N(void*) {}                \
  SG_EXPORT void __tsan_unaligned_read##N(void*) {}       \
  SG_EXPORT void __tsan_unaligned_write##N(void*) {}      \
  SG_EXPORT void __tsan_volatile_read##N(void* p) { volatile_access(p); } \
  SG_EXPORT void __tsan_volatile_write##N(void* p) { volatile_access(p); }
SG_PLAIN(1)
SG_PLAIN(2)
SG_PLAIN(4)
SG_PLAIN(8)
SG_PLAIN(16)
#undef SG_PLAIN

// Atomics: every memory order is performed as sequentially consistent (stronger is always correct).
#define SG_ATOMIC(N, T)                                                                                    \
  SG_EXPORT T __tsan_atomic##N##_load(const volatile T* a, int) { return __atomic_load_n(a, __ATOMIC_SEQ_CST); } \
  SG_EXPORT void __tsan_atomic##N##_store(volatile T* a, T v, int) { __atomic_store_n(a, v, __ATOMIC_SEQ_CST); } \
  SG_EXPORT T __tsan_atomic##N##_exchange(volatile T* a, T v, int) {                                        \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                                      \
  }                                                                                                          \
  SG_EXPORT T __tsan_atomic##N##_fetch_add(volatile T* a, T v, int) {                                       \
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                                       \
  }                                                                                                          \
  SG_EXPORT T __tsan_atomic##N##_fetch_sub(volatile T* a, T v, int) {                                       \
    return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                                       \
  }                                                                                                          \
  SG_EXPORT T __tsan_atomic##N##_fetch_and(volatile T* a, T v, int) {                                       \
    return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                                       \
  }                                                                                                          \
  SG_EXPORT T __tsan_atomic##N##_fetch_or(volatile T* a, T v, int) {                                        \
    return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                                        \
  }                                                                                                          \
  SG_EXPORT T __tsan_atomic##N##_fetch_xor(volatile T* a, T v, int) {                                       \
    return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                                       \
  }                                                                                                          \
  SG_EXPORT T __tsan_atomic##N##_fetch_nand(volatile T* a, T v, int) {                                      \
    return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                                      \
  }                                                                                                          \
  SG_EXPORT int __tsan_atomic##N##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {            \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                 \
  }                                                                                                          \
  SG_EXPORT int __tsan_atomic##N##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {              \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                 \
  }                                                                                                          \
  SG_EXPORT T __tsan_atomic##N##_compare_exchange_val(volatile T* a, T c, T v, int, int) {                  \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                       \
    return c;                                                                                                \
  }
SG_ATOMIC(8, std::uint8_t)
SG_ATOMIC(16, std::uint16_t)
SG_ATOMIC(32, std::uint32_t)
SG_ATOMIC(64, std::uint64_t)
#undef SG_ATOMIC

// 16 bytes: plain operations (the __atomic builtins would need libatomic). Emulated code runs on one
// OS thread (kernel threads are fibers, and a slot may not start host threads), so nothing interleaves.
using u128 = unsigned __int128;
SG_EXPORT u128 __tsan_atomic128_load(const volatile u128* a, int) { return *a; }
SG_EXPORT void __tsan_atomic128_store(volatile u128* a, u128 v, int) { *a = v; }
#define SG_RMW128(name, expr)                                   \
  SG_EXPORT u128 __tsan_atomic128_##name(volatile u128* a, u128 v, int) { \
    const u128 old = *a;                                        \
    *a = (expr);                                                \
    return old;                                                 \
  }
SG_RMW128(exchange, v)
SG_RMW128(fetch_add, old + v)
SG_RMW128(fetch_sub, old - v)
SG_RMW128(fetch_and, old & v)
SG_RMW128(fetch_or, old | v)
SG_RMW128(fetch_xor, old ^ v)
SG_RMW128(fetch_nand, ~(old & v))
#undef SG_RMW128
SG_EXPORT int __tsan_atomic128_compare_exchange_strong(volatile u128* a, u128* c, u128 v, int, int) {
  if (*a == *c) {
    *a = v;
    return 1;
  }
  *c = *a;
  return 0;
}
SG_EXPORT int __tsan_atomic128_compare_exchange_weak(volatile u128* a, u128* c, u128 v, int, int) {
  return __tsan_atomic128_compare_exchange_strong(a, c, v, 0, 0);
}
SG_EXPORT u128 __tsan_atomic128_compare_exchange_val(volatile u128* a, u128 c, u128 v, int, int) {
  __tsan_atomic128_compare_exchange_strong(a, &c, v, 0, 0);
  return c;
}

SG_EXPORT void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
SG_EXPORT void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
