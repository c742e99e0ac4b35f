// The vocabulary every part of ScanGrade shares: slots, element types, value patterns, visibility.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "scangrade/student_api.h"

namespace scangrade {

/// One kernel slot of the contract (student_api.h).
enum class Slot { HillisSteele, Blelloch, Hierarchical, SinglePass };
inline constexpr Slot kAllSlots[] = {Slot::HillisSteele, Slot::Blelloch, Slot::Hierarchical, Slot::SinglePass};

enum class DType { Int32, Float32 };
inline constexpr DType kAllDTypes[] = {DType::Int32, DType::Float32};

/// How a case's input values are drawn (see inputs.h for the exact rules).
enum class ValueKind { Random, Real, Zeros, Ones, Alternating, Large };

enum class Visibility { Visible, Hidden, AfterDueDate, AfterPublished };

/// Snake-case names as they appear in suite files and results ("hillis_steele", "int32", ...).
std::string_view name(Slot s);
std::string_view name(DType d);
std::string_view name(ScanKind k);
std::string_view name(ValueKind v);
std::string_view name(Visibility v);

/// CamelCase slot names for test names ("HillisSteele").
std::string_view camel_name(Slot s);
/// The starter file a student fills for a slot ("student/hillis_steele.cu").
std::string_view student_file(Slot s);

std::optional<Slot> parse_slot(std::string_view s);
std::optional<DType> parse_dtype(std::string_view s);
std::optional<ScanKind> parse_kind(std::string_view s);
std::optional<ValueKind> parse_value_kind(std::string_view s);
std::optional<Visibility> parse_visibility(std::string_view s);

/// Largest n a slot accepts (the contract's limits); SIZE_MAX for the multi-block slots.
std::size_t max_n(Slot s);
/// True when the slot fixes the scan kind (every slot but the hierarchical one), and which.
std::optional<ScanKind> fixed_kind(Slot s);

/// The work layout that failure messages use to name a block/thread/warp for an element index:
/// Hillis-Steele one element per thread in blocks of 1024 elements; every other slot two elements
/// per thread in blocks of 2048 (the Blelloch slot's limits; the reference's multi-block tiles are
/// 4096 elements). Students may lay work out differently, so each message states the block size and
/// elements per thread it assumes.
struct Layout {
  std::size_t elements_per_thread;
  std::size_t elements_per_block;
};
Layout message_layout(Slot s);

}  // namespace scangrade
