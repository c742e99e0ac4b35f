// Names of the shared vocabulary (slots.h, status.h): one table per enum, read both ways.
#include <cstdint>
#include <utility>

#include "scangrade/slots.h"
#include "scangrade/status.h"

namespace scangrade {
namespace {

template <typename E, std::size_t N>
using Table = std::pair<E, std::string_view>[N];

constexpr Table<Slot, 4> kSlotNames = {{Slot::HillisSteele, "hillis_steele"},
                                       {Slot::Blelloch, "blelloch"},
                                       {Slot::Hierarchical, "hierarchical"},
                                       {Slot::SinglePass, "single_pass"}};
constexpr Table<Slot, 4> kSlotCamel = {{Slot::HillisSteele, "HillisSteele"},
                                       {Slot::Blelloch, "Blelloch"},
                                       {Slot::Hierarchical, "Hierarchical"},
                                       {Slot::SinglePass, "SinglePass"}};
constexpr Table<Slot, 4> kSlotFiles = {{Slot::HillisSteele, "student/hillis_steele.cu"},
                                       {Slot::Blelloch, "student/blelloch.cu"},
                                       {Slot::Hierarchical, "student/hierarchical.cu"},
                                       {Slot::SinglePass, "student/single_pass.cu"}};
constexpr Table<DType, 2> kDTypeNames = {{DType::Int32, "int32"}, {DType::Float32, "float32"}};
constexpr Table<ScanKind, 2> kKindNames = {{ScanKind::Inclusive, "inclusive"},
                                           {ScanKind::Exclusive, "exclusive"}};
constexpr Table<ValueKind, 6> kValueNames = {{ValueKind::Random, "random"}, {ValueKind::Real, "real"},
                                             {ValueKind::Zeros, "zeros"},   {ValueKind::Ones, "ones"},
                                             {ValueKind::Alternating, "alternating"},
                                             {ValueKind::Large, "large"}};
constexpr Table<Visibility, 4> kVisibilityNames = {{Visibility::Visible, "visible"},
                                                   {Visibility::Hidden, "hidden"},
                                                   {Visibility::AfterDueDate, "after_due_date"},
                                                   {Visibility::AfterPublished, "after_published"}};
constexpr Table<Status, 13> kStatusNames = {
    {Status::Pass, "pass"},
    {Status::Fail, "fail"},
    {Status::NotImplemented, "not_implemented"},
    {Status::Crash, "crash"},
    {Status::Timeout, "timeout"},
    {Status::CompileError, "compile_error"},
    {Status::PolicyViolation, "policy_violation"},
    {Status::OutOfBoundsWrite, "out_of_bounds_write"},
    {Status::InputModified, "input_modified"},
    {Status::Leak, "leak"},
    {Status::Race, "race"},
    {Status::MemoryError, "memory_error"},
    {Status::InternalError, "internal_error"},
};

template <typename E, std::size_t N>
std::string_view lookup(const Table<E, N>& table, E value) {
  for (const auto& [e, text] : table)
    if (e == value) return text;
  return "?";
}

template <typename E, std::size_t N>
std::optional<E> reverse_lookup(const Table<E, N>& table, std::string_view text) {
  for (const auto& [e, t] : table)
    if (t == text) return e;
  return std::nullopt;
}

}  // namespace

std::string_view name(Slot s) { return lookup(kSlotNames, s); }
std::string_view name(DType d) { return lookup(kDTypeNames, d); }
std::string_view name(ScanKind k) { return lookup(kKindNames, k); }
std::string_view name(ValueKind v) { return lookup(kValueNames, v); }
std::string_view name(Visibility v) { return lookup(kVisibilityNames, v); }
std::string_view name(Status s) { return lookup(kStatusNames, s); }
std::string_view camel_name(Slot s) { return lookup(kSlotCamel, s); }
std::string_view student_file(Slot s) { return lookup(kSlotFiles, s); }

std::optional<Slot> parse_slot(std::string_view s) { return reverse_lookup(kSlotNames, s); }
std::optional<DType> parse_dtype(std::string_view s) { return reverse_lookup(kDTypeNames, s); }
std::optional<ScanKind> parse_kind(std::string_view s) { return reverse_lookup(kKindNames, s); }
std::optional<ValueKind> parse_value_kind(std::string_view s) { return reverse_lookup(kValueNames, s); }
std::optional<Visibility> parse_visibility(std::string_view s) { return reverse_lookup(kVisibilityNames, s); }
std::optional<Status> parse_status(std::string_view s) { return reverse_lookup(kStatusNames, s); }

std::size_t max_n(Slot s) {
  switch (s) {
    case Slot::HillisSteele: return kHillisSteeleMaxN;
    case Slot::Blelloch: return kBlellochMaxN;
    default: return SIZE_MAX;
  }
}

std::optional<ScanKind> fixed_kind(Slot s) {
  switch (s) {
    case Slot::Blelloch: return ScanKind::Exclusive;
    case Slot::Hierarchical: return std::nullopt;
    default: return ScanKind::Inclusive;
  }
}

Layout message_layout(Slot s) {
  switch (s) {
    case Slot::HillisSteele: return {1, kHillisSteeleMaxN};
    default: return {2, kBlellochMaxN};
  }
}

}  // namespace scangrade
