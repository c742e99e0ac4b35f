// An implementation of the contract as values: lets one test body run over the reference
// solutions, the student's slots and every gallery example alike.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "scangrade/slots.h"

namespace scangrade {

template <typename T>
using ScanFn = std::function<void(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream)>;

struct Implementation {
  std::string name;
  ScanFn<std::int32_t> (*int32)(Slot, ScanKind);
  ScanFn<float> (*float32)(Slot, ScanKind);

  template <typename T>
  ScanFn<T> get(Slot slot, ScanKind kind) const {
    if constexpr (std::is_same_v<T, float>) return float32(slot, kind);
    else return int32(slot, kind);
  }
};

}  // namespace scangrade

/// Defines `scangrade::Implementation FUNC()` over the eight functions of namespace NS, which
/// has the contract's signatures (scangrade::student, scangrade::reference).
#define SCANGRADE_IMPLEMENTATION(FUNC, LABEL, NS)                                                     \
  namespace {                                                                                        \
  template <typename T>                                                                              \
  scangrade::ScanFn<T> scangrade_pick_slot(scangrade::Slot slot, scangrade::ScanKind kind) {         \
    using scangrade::Slot;                                                                           \
    switch (slot) {                                                                                  \
      case Slot::HillisSteele:                                                                       \
        return [](const T* in, T* out, std::size_t n, cudaStream_t s) { NS::hillis_steele_inclusive(in, out, n, s); }; \
      case Slot::Blelloch:                                                                           \
        return [](const T* in, T* out, std::size_t n, cudaStream_t s) { NS::blelloch_exclusive(in, out, n, s); }; \
      case Slot::Hierarchical:                                                                       \
        return [kind](const T* in, T* out, std::size_t n, cudaStream_t s) { NS::hierarchical_scan(in, out, n, kind, s); }; \
      case Slot::SinglePass:                                                                         \
        return [](const T* in, T* out, std::size_t n, cudaStream_t s) { NS::single_pass_inclusive(in, out, n, s); }; \
    }                                                                                                \
    return {};                                                                                       \
  }                                                                                                  \
  }                                                                                                  \
  scangrade::Implementation FUNC() {                                                                 \
    return {LABEL, &scangrade_pick_slot<std::int32_t>, &scangrade_pick_slot<float>};                 \
  }
