// Comparison, diagnosis and verdict (check.h).
#include "scangrade/check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <sstream>

#include "scangrade/oracle.h"

namespace scangrade {

template <typename T>
T from_bits(std::uint32_t bits) {
  T value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
template <typename T>
std::uint32_t to_bits(T value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
template std::int32_t from_bits<std::int32_t>(std::uint32_t);
template float from_bits<float>(std::uint32_t);
template std::uint32_t to_bits<std::int32_t>(std::int32_t);
template std::uint32_t to_bits<float>(float);

namespace {

constexpr std::size_t kShownIndices = 8;

/// Walks the terms of each output element: visit(i, terms, abs_sum, all_integer).
template <typename T, typename Visit>
void for_each_prefix(const std::vector<T>& input, ScanKind kind, Visit visit) {
  double abs_sum = 0;
  bool all_integer = true;
  for (std::size_t i = 0; i < input.size(); ++i) {
    const auto add = [&] {
      abs_sum += std::fabs(static_cast<double>(input[i]));
      all_integer = all_integer && std::nearbyint(static_cast<double>(input[i])) == static_cast<double>(input[i]);
    };
    if (kind == ScanKind::Inclusive) add();
    visit(i, kind == ScanKind::Inclusive ? i + 1 : i, abs_sum, all_integer);
    if (kind == ScanKind::Exclusive) add();
  }
}

template <typename T>
bool within(double got, double expected, std::size_t terms, double abs_sum, bool all_integer) {
  if constexpr (std::is_integral_v<T>) {
    return got == expected;
  } else {
    if (!std::isfinite(got)) return false;
    return std::fabs(got - expected) <= float_tolerance(terms, abs_sum, all_integer);
  }
}

/// True when `got` is, within tolerance, the scan of the other kind (inclusive vs exclusive).
template <typename T>
bool is_other_kind(const std::vector<T>& input, ScanKind kind, const std::vector<double>& expected,
                   const std::vector<T>& got) {
  if (input.empty()) return false;
  const ScanKind other = kind == ScanKind::Inclusive ? ScanKind::Exclusive : ScanKind::Inclusive;
  bool all_match = true;
  bool differs_somewhere = false;  // the two kinds differ somewhere (an input element is not zero)
  bool not_a_copy = false;         // the other kind is not the input itself somewhere
  bool not_zeros = false;          // nor all zeros
  for_each_prefix(input, other, [&](std::size_t i, std::size_t terms, double abs_sum, bool all_integer) {
    if (!all_match) return;
    const double x = static_cast<double>(input[i]);
    const double other_expected = kind == ScanKind::Inclusive ? expected[i] - x : expected[i] + x;
    differs_somewhere = differs_somewhere || x != 0;
    not_a_copy = not_a_copy || !within<T>(x, other_expected, terms, abs_sum, all_integer);
    not_zeros = not_zeros || !within<T>(0.0, other_expected, terms, abs_sum, all_integer);
    all_match = within<T>(static_cast<double>(got[i]), other_expected, terms, abs_sum, all_integer);
  });
  // at n = 1 the inclusive scan is the input and the exclusive one a zero: an output that copied the
  // input, or wrote zeros, would pass for the other kind there; only an output that is neither tells
  return all_match && differs_somewhere && not_a_copy && not_zeros;
}

std::size_t lowest_power_of_two_factor(std::size_t x) { return x & (~x + 1); }

bool multi_block(Slot slot) { return slot == Slot::Hierarchical || slot == Slot::SinglePass; }

/// Each output element's number of terms and sum of |x| (for_each_prefix), for the pattern hints.
template <typename T>
struct Terms {
  std::vector<std::size_t> count;
  std::vector<double> abs_sum;
  Terms(const std::vector<T>& input, ScanKind kind) : count(input.size()), abs_sum(input.size()) {
    for_each_prefix(input, kind, [&](std::size_t i, std::size_t terms, double sum, bool) {
      count[i] = terms;
      abs_sum[i] = sum;
    });
  }
};

/// True when pred(i) holds for every shown wrong index, and there are at least `least` of them.
template <typename Pred>
bool every_shown(const Comparison& cmp, std::size_t least, Pred pred) {
  if (cmp.first_wrong.size() < least) return false;
  for (std::size_t i : cmp.first_wrong)
    if (!pred(i)) return false;
  return true;
}

/// int32 results that went through a float (24 significant bits): every shown wrong element is a value
/// a float holds exactly, its terms' magnitudes pass 2^24 (where a float starts to drop low bits), and
/// it is off by float rounding only (at most 2^-16 of the sum of |x|; an off-by-one is off by a whole
/// term, about 1/k of it).
template <typename T>
bool int_rounded_through_float(const Case& c, const std::vector<double>& expected, const std::vector<T>& got,
                               const Comparison& cmp, const Terms<T>& terms) {
  if (c.dtype != DType::Int32) return false;
  return every_shown(cmp, 1, [&](std::size_t i) {
    const double g = static_cast<double>(got[i]);
    const double error = std::fabs(g - expected[i]);
    return static_cast<double>(static_cast<float>(g)) == g && terms.abs_sum[i] > 0x1p24 &&
           error <= terms.abs_sum[i] * 0x1p-16;
  });
}

/// Inclusive outputs that sum only the last `window` inputs: got[i] = expected[i] - expected[i - window]
/// from i = window (a power of two, 2 at least: a window of 1 is the input itself, no evidence of a
/// loop that ran) on; a Hillis-Steele step loop that stops before its largest stride.
template <typename T>
bool sums_only_a_window(const Case& c, const std::vector<double>& expected, const std::vector<T>& got,
                        const Comparison& cmp, const Terms<T>& terms, std::size_t window) {
  if (c.kind != ScanKind::Inclusive || window < 2 || (window & (window - 1)) != 0) return false;
  return every_shown(cmp, 1, [&](std::size_t i) {
    if (i < window) return false;
    const double want = expected[i] - expected[i - window];
    return within<T>(static_cast<double>(got[i]), want, terms.count[i], terms.abs_sum[i], c.values != ValueKind::Real &&
                                                                                            c.values != ValueKind::Large);
  });
}

/// An exclusive tree scan whose down-sweep stopped before its last level (stride 1): each pair
/// (2k, 2k+1) holds (in[2k], expected[2k]) instead of (expected[2k], expected[2k+1]).
template <typename T>
bool down_sweep_missing_last_level(const Case& c, const std::vector<T>& input, const std::vector<double>& expected,
                                   const std::vector<T>& got, const Comparison& cmp) {
  if (c.kind != ScanKind::Exclusive) return false;
  bool even = false, odd = false;
  const bool pattern = every_shown(cmp, 2, [&](std::size_t i) {
    (i % 2 == 0 ? even : odd) = true;
    return i % 2 == 0 ? to_bits(got[i]) == to_bits(input[i]) : static_cast<double>(got[i]) == expected[i - 1];
  });
  return pattern && even && odd;
}

/// hint's float data: wrapped through an unsigned type, or truncated through an integer one.
template <typename T>
std::string float_type_hint(const std::vector<double>& expected, const std::vector<T>& got, const Comparison& cmp,
                            std::size_t f) {
  const bool wrapped = every_shown(cmp, 1, [&](std::size_t i) {
    const double g = static_cast<double>(got[i]);
    return g >= 0x1p31 && g <= 0x1p32 + 0x1p25 && std::fabs(expected[i]) < 0x1p24;
  });
  if (wrapped)
    return "out[" + std::to_string(f) + "] is about 2^32 = 4.29e9 where a small value was expected: a negative "
           "value converted to an unsigned type wraps around (a float summed in an unsigned temporary); keep float "
           "data in float";
  const bool whole = every_shown(cmp, 2, [&](std::size_t i) {
    const double g = static_cast<double>(got[i]);
    return std::isfinite(g) && std::nearbyint(g) == g && std::nearbyint(expected[i]) != expected[i];
  });
  if (whole)
    return "the wrong values are whole numbers where the right ones have fractions: the float data went through "
           "an integer type (an int or unsigned temporary, accumulator or shared buffer truncates it)";
  return "";
}

/// hint's multi-block slots: a missing level of the hierarchy, block sums not propagated, a partial
/// last block.
template <typename T>
std::string multi_block_hint(const Case& c, const std::vector<T>& input, const std::vector<T>& got,
                             const Comparison& cmp, std::size_t f) {
  if (c.slot == Slot::Hierarchical && f >= (std::size_t{1} << 16) && (f & (f - 1)) == 0) {
    // right up to a power of two that is a tile size squared (or cubed): the levels ran out
    int k = 0;
    while ((std::size_t{1} << k) < f) ++k;
    std::string as;
    if (k % 2 == 0) as += std::to_string(std::size_t{1} << (k / 2)) + " x " + std::to_string(std::size_t{1} << (k / 2));
    if (k % 3 == 0) {
      const std::string b = std::to_string(std::size_t{1} << (k / 3));
      as += (as.empty() ? "" : ", or ") + b + " x " + b + " x " + b;
    }
    return "right up to out[" + std::to_string(f - 1) + "], wrong from out[" + std::to_string(f) + "]" +
           (as.empty() ? "" : " = " + as) + " on: a missing level. A hierarchy with a fixed number of levels covers "
           "only so many elements (one block of B threads scans at most B block sums, so two levels of tiles of B "
           "cover B x B elements, three B x B x B): recurse, or loop over levels, until one block holds all the sums";
  }
  const std::size_t tile = lowest_power_of_two_factor(f);
  if (c.slot == Slot::Hierarchical && f >= (std::size_t{1} << 16) && tile >= 256 && tile <= 4096 &&
      c.n - f > tile && cmp.wrong > tile &&
      static_cast<double>(got[f]) != (c.kind == ScanKind::Inclusive ? static_cast<double>(input[f]) : 0.0)) {
    // right for many whole tiles, wrong over more than a tile from a tile boundary on (not a restart
    // from zero: that is the rule below): the tiles past that point were not covered by the levels above
    return "right up to out[" + std::to_string(f - 1) + "], wrong from out[" + std::to_string(f) + "] on: the first " +
           std::to_string(f / tile) + " tiles of " + std::to_string(tile) + " elements are scanned and the ones " +
           "after them are not carried. A hierarchy with a fixed number of levels covers only so many tiles (one " +
           "block scans at most so many block sums at the top level), and so does a grid capped at a fixed size: " +
           "recurse, or loop over levels, until one block holds all the sums";
  }
  if (multi_block(c.slot) && f >= 32 && f % 32 == 0) {  // block boundaries: only slots with several blocks
    const std::size_t block = lowest_power_of_two_factor(f);
    const double restart = c.kind == ScanKind::Inclusive ? static_cast<double>(input[f]) : 0.0;
    if (static_cast<double>(got[f]) == restart) {
      std::string text = "the scan restarts from zero at index " + std::to_string(f) +
                         ": each block of " + std::to_string(block) +
                         " elements looks scanned on its own, so the block sums are not propagated (or are added to "
                         "the wrong block)";
      if (f == std::size_t{2048} * 2048 || f == std::size_t{1024} * 1024)
        text += "; a hierarchy of two levels covers only " + std::to_string(f) +
                " elements: past that the block sums need a third level";
      return text;
    }
    if (c.n - f < block && cmp.wrong <= c.n - f)
      return "only the last, partial block is wrong (indices " + std::to_string(f) + ".." + std::to_string(c.n - 1) +
             "; n is not a multiple of " + std::to_string(block) +
             "): the tail that does not fill a whole block is dropped or mis-indexed";
  }
  return "";
}

template <typename T>
std::string hint(const Case& c, const std::vector<T>& input, const std::vector<double>& expected,
                 const std::vector<T>& got, const Comparison& cmp) {
  const std::size_t f = cmp.first_wrong.front();
  if (is_other_kind(input, c.kind, expected, got))
    return c.kind == ScanKind::Inclusive
               ? "the output is the EXCLUSIVE scan; this slot must return the inclusive scan (out[i] includes in[i])"
               : "the output is the INCLUSIVE scan; this slot must return the exclusive scan (out[0] = 0, out[i] "
                 "excludes in[i])";
  if (cmp.unwritten == cmp.wrong)
    return std::to_string(cmp.unwritten) + " element(s) were never written (they still hold the poison pattern " +
           "0xDEADBEEF): check the bounds of your loops and the number of blocks/threads you launch";
  const Terms<T> terms(input, c.kind);
  if (int_rounded_through_float(c, expected, got, cmp, terms))
    return "every wrong value is the right one rounded as a float would round it (sums above 2^24 = 16777216 "
           "lose their low bits): the int32 data went through a float (a float temporary, shared buffer or "
           "accumulator holds 24 significant bits); keep int32 data in an integer type";
  if (c.dtype == DType::Float32)
    if (std::string h = float_type_hint(expected, got, cmp, f); !h.empty()) return h;
  std::size_t window = 1;  // the largest power of two <= f (the elements before the first wrong one may be
  while (window * 2 <= f) window *= 2;  // right by chance: the window's first terms were zeros)
  if (c.slot == Slot::HillisSteele && f > 0 && sums_only_a_window(c, expected, got, cmp, terms, window))
    return "from out[" + std::to_string(window) + "] on each output sums only the last " + std::to_string(window) +
           " inputs (out[i] = in[i-" + std::to_string(window - 1) + "] + ... + in[i]): the step loop stops before "
           "stride " + std::to_string(window) + "; the strides must go 1, 2, 4, ... while stride < n";
  if (c.slot == Slot::Blelloch && down_sweep_missing_last_level(c, input, expected, got, cmp))
    return "out[2k] holds in[2k] and out[2k+1] holds the value expected at out[2k]: the last level of the "
           "down-sweep (stride 1, which swaps each pair and adds) did not run; the down-sweep must go down to "
           "stride 1";
  if (std::string h = multi_block_hint(c, input, got, cmp, f); !h.empty()) return h;
  // off by one: every shown wrong element (two at least) holds its neighbour's expected value
  if (every_shown(cmp, 2, [&](std::size_t i) { return i > 0 && static_cast<double>(got[i]) == expected[i - 1]; }))
    return "out[" + std::to_string(f) + "] holds the value expected one position earlier (and so do the other wrong "
           "elements shown): off by one in the index";
  if (every_shown(cmp, 2, [&](std::size_t i) { return i + 1 < c.n && static_cast<double>(got[i]) == expected[i + 1]; }))
    return "out[" + std::to_string(f) + "] holds the value expected one position later (and so do the other wrong "
           "elements shown): off by one in the index";
  if (c.dtype == DType::Float32 && (c.values == ValueKind::Real || c.values == ValueKind::Large))
    return "values are outside the float tolerance (see oracle.h): check what is added, not the rounding";
  return "";
}

std::string value_text(double v) {
  std::ostringstream out;
  out.precision(9);
  out << v;
  return out.str();
}

std::string case_heading(const Case& c) {
  std::ostringstream out;
  out << c.id << " (n=" << c.n << ", " << name(c.dtype) << ", " << name(c.kind) << ", values=" << name(c.values)
      << ", seed=" << c.seed << ")";
  return out.str();
}

template <typename T>
std::string guard_report(const std::vector<T>& guard, bool before) {
  for (std::size_t k = 0; k < guard.size(); ++k) {
    // Before d_out, the element nearest to it is the last of the guard zone.
    const std::size_t g = before ? guard.size() - 1 - k : k;
    if (to_bits(guard[g]) != kCanaryBits) {
      const long long index = before ? -static_cast<long long>(k) - 1 : static_cast<long long>(k);
      return before ? "wrote before the output: d_out[" + std::to_string(index) + "] changed"
                    : "wrote past the end of the output: d_out[n+" + std::to_string(index) + "] changed";
    }
  }
  return "";
}

}  // namespace

template <typename T>
Comparison compare_output(const std::vector<T>& input, ScanKind kind, const std::vector<double>& expected,
                          const std::vector<T>& got) {
  Comparison cmp;
  for_each_prefix(input, kind, [&](std::size_t i, std::size_t terms, double abs_sum, bool all_integer) {
    if (within<T>(static_cast<double>(got[i]), expected[i], terms, abs_sum, all_integer)) return;
    ++cmp.wrong;
    if (to_bits(got[i]) == kPoisonBits) ++cmp.unwritten;
    if (cmp.first_wrong.size() < kShownIndices) cmp.first_wrong.push_back(i);
  });
  return cmp;
}

std::string element_coordinates(Slot slot, std::size_t index) {
  const Layout layout = message_layout(slot);
  const std::size_t block = index / layout.elements_per_block;
  const std::size_t thread = (index % layout.elements_per_block) / layout.elements_per_thread;
  std::ostringstream out;
  out << "block " << block << ", thread " << thread << " (warp " << thread / 32 << ", lane " << thread % 32
      << ") if each block scans " << layout.elements_per_block << " elements, " << layout.elements_per_thread
      << " per thread";
  return out.str();
}

std::string timeout_causes(Slot slot) {
  switch (slot) {
    case Slot::HillisSteele:
    case Slot::Blelloch:
      return "a loop that never ends: a stride or counter that never reaches its bound (e.g. `d * 2;` where "
             "`d *= 2;` was meant, a stride that starts at 0, or `d >> 1` where `d >>= 1`), or threads of the block "
             "waiting at a __syncthreads() that others skip";
    case Slot::Hierarchical:
      return "a loop that never ends: a loop over the levels whose size never shrinks, a recursion called again "
             "with the same n, or a kernel loop whose stride or counter never reaches its bound";
    case Slot::SinglePass:
      break;
  }
  return "the kernel may spin forever, e.g. a block waiting for a flag that no other block sets: a tile index "
         "taken from blockIdx (blocks may start in any order; take it from an atomic counter), a flag never "
         "published, or a flag read without volatile or an atomic so the wait never sees it changed";
}

/// A hint for a CUDA error the slot returned, when its cause is the usual one ("" when none).
std::string error_hint(const Case& c, const std::string& error) {
  const bool configuration = error.find("invalid configuration") != std::string::npos;
  const bool argument = error.find("invalid argument") != std::string::npos ||
                        error.find("cudaErrorInvalidValue") != std::string::npos;
  if (c.n == 0 && (configuration || argument))
    return "\n  hint: at n = 0 a grid of (n + threads - 1) / threads = 0 blocks is not a valid launch, and a "
           "0-byte allocation or copy may fail too: return before launching when n == 0 (there is nothing to scan)";
  if (configuration)
    return "\n  hint: a launch asked for a grid or block the GPU cannot run: a grid dimension of 0, more than 1024 "
           "threads per block, or more shared memory than a block may have";
  return "";
}

/// What the record says before its data is read (not_implemented, crash, race, not recomputed).
template <typename T>
std::optional<Verdict> record_verdict(const Case& c, const RunRecord<T>& run) {
  if (run.not_implemented)
    return Verdict{Status::NotImplemented,
                   (run.not_implemented_at.empty() ? std::string(student_file(c.slot)) : run.not_implemented_at) +
                       " still calls not_implemented()"};
  if (!run.error.empty()) return Verdict{Status::Crash, case_heading(c) + ": " + run.error + error_hint(c, run.error)};
  if (!run.race.empty()) return Verdict{Status::Race, case_heading(c) + ": " + run.race};
  if (!run.not_recomputed.empty()) return Verdict{Status::Fail, case_heading(c) + ": " + run.not_recomputed};
  return std::nullopt;
}

/// What the record says after its data was found right: leak or pass.
template <typename T>
Verdict balance_verdict(const Case& c, const RunRecord<T>& run) {
  if (run.leaked_bytes > 0)
    return {Status::Leak, case_heading(c) + ": " + std::to_string(run.leaked_bytes) +
                              " bytes of device memory were not freed (" + run.leak_detail +
                              "); free every temporary before the slot returns"};
  // as memcheck on a GPU, which runs only on a case whose functional run passed
  if (!run.stray_write.empty())
    return {Status::MemoryError, case_heading(c) + ": " + run.stray_write +
                                     " (on a GPU: compute-sanitizer memcheck reports it as an invalid __global__ write "
                                     "on this case; the hardware does not stop it): check the bounds of the indices "
                                     "into your own temporaries"};
  return {Status::Pass, ""};
}

/// A verdict other than pass, with the operations C++ leaves undefined that the call ran (emulation):
/// where the emulator's CPU computes them differently from the GPU, they may be the whole difference.
Verdict with_undefined_note(Verdict v, const std::string& undefined) {
  if (v.status == Status::Pass || undefined.empty()) return v;
  std::string lines;
  for (std::size_t at = 0; at <= undefined.size();) {
    const std::size_t end = std::min(undefined.find('\n', at), undefined.size());
    lines += "\n    " + undefined.substr(at, end - at);
    at = end + 1;
  }
  v.message += "\n  note: while this case ran, your code executed operations whose result C++ leaves undefined "
               "(the emulator reports them; the GPU does not):" + lines;
  return v;
}

template <typename T>
Verdict judge_data(const Case& c, const std::vector<T>& input, const std::vector<double>& expected,
                   const RunRecord<T>& run) {
  if (auto v = record_verdict(c, run)) return *v;
  if (run.output.size() != c.n || run.input_after.size() != c.n)
    return {Status::InternalError, case_heading(c) + ": the run record is incomplete (please report)"};

  std::string guard = guard_report(run.guard_before, true);
  if (guard.empty()) guard = guard_report(run.guard_after, false);
  if (!guard.empty())
    return {Status::OutOfBoundsWrite,
            case_heading(c) + ": " + guard + " (a guard zone of " + std::to_string(kGuardElements) +
                " elements surrounds d_out; write only d_out[0..n-1])"};

  for (std::size_t i = 0; i < c.n; ++i)
    if (to_bits(run.input_after[i]) != to_bits(input[i]))
      return {Status::InputModified, case_heading(c) + ": d_in[" + std::to_string(i) + "] changed from " +
                                         value_text(input[i]) + " to " + value_text(run.input_after[i]) +
                                         " (the input is read-only: scan into d_out or a temporary)"};

  const Comparison cmp = compare_output(input, c.kind, expected, run.output);
  if (cmp.wrong > 0) {
    const std::size_t f = cmp.first_wrong.front();
    std::ostringstream msg;
    msg << case_heading(c) << ": " << cmp.wrong << " of " << c.n << " elements wrong\n"
        << "  first wrong: out[" << f << "] expected " << value_text(expected[f]) << ", got "
        << value_text(run.output[f]) << "\n"
        << "    = " << element_coordinates(c.slot, f) << "\n"
        << "  wrong indices:";
    for (std::size_t i : cmp.first_wrong) msg << " " << i;
    if (cmp.wrong > cmp.first_wrong.size()) msg << " ...";
    msg << "\n";
    const std::string h = hint(c, input, expected, run.output, cmp);
    if (!h.empty()) msg << "  hint: " << h << "\n";
    msg << "  why this case: " << c.why;
    return {Status::Fail, msg.str()};
  }
  return balance_verdict(c, run);
}

template <typename T>
Verdict judge(const Case& c, const std::vector<T>& input, const std::vector<double>& expected,
              const RunRecord<T>& run) {
  return with_undefined_note(judge_data(c, input, expected, run), run.undefined);
}

template <typename T>
Verdict judge_checked(const Case& c, const RunRecord<T>& run) {
  if (auto v = record_verdict(c, run)) return with_undefined_note(*v, run.undefined);
  return with_undefined_note(balance_verdict(c, run), run.undefined);
}

template <typename T>
Band<T> acceptance_band(const std::vector<T>& input, ScanKind kind, const std::vector<double>& expected) {
  Band<T> band;
  band.lo.resize(input.size());
  band.hi.resize(input.size());
  for_each_prefix(input, kind, [&](std::size_t i, std::size_t terms, double abs_sum, bool all_integer) {
    if constexpr (std::is_integral_v<T>) {
      band.lo[i] = band.hi[i] = static_cast<T>(expected[i]);
    } else {
      const double tol = float_tolerance(terms, abs_sum, all_integer);
      // the float nearest each end, moved outwards a step: what `within` accepts, and no less
      band.lo[i] = std::nextafter(static_cast<float>(expected[i] - tol), -INFINITY);
      band.hi[i] = std::nextafter(static_cast<float>(expected[i] + tol), INFINITY);
    }
  });
  return band;
}

template Band<std::int32_t> acceptance_band<std::int32_t>(const std::vector<std::int32_t>&, ScanKind,
                                                          const std::vector<double>&);
template Band<float> acceptance_band<float>(const std::vector<float>&, ScanKind, const std::vector<double>&);
template Comparison compare_output<std::int32_t>(const std::vector<std::int32_t>&, ScanKind,
                                                 const std::vector<double>&, const std::vector<std::int32_t>&);
template Comparison compare_output<float>(const std::vector<float>&, ScanKind, const std::vector<double>&,
                                          const std::vector<float>&);
template Verdict judge<std::int32_t>(const Case&, const std::vector<std::int32_t>&, const std::vector<double>&,
                                     const RunRecord<std::int32_t>&);
template Verdict judge<float>(const Case&, const std::vector<float>&, const std::vector<double>&,
                              const RunRecord<float>&);
/// Whether the suite has compute-sanitizer racecheck check this case on a GPU.
static bool racechecked(const Case& c) {
  return std::find(c.sanitize.begin(), c.sanitize.end(), "racecheck") != c.sanitize.end();
}

Verdict order_verdict(const Case& c, Verdict forward, const std::string& race,
                      const std::function<std::optional<Verdict>()>& reverse) {
  const auto data_right = [](Status s) { return s == Status::Pass || s == Status::Leak || s == Status::MemoryError; };
  const auto data_wrong = [](Status s) {
    return s == Status::Fail || s == Status::OutOfBoundsWrite || s == Status::InputModified;
  };
  std::string why = race;
  if (data_wrong(forward.status) && (!race.empty() || c.n > kOrdersComparedMaxN)) {
    // the hardware may well run the threads the other way: judge the data on the order that gives it right
    if (const std::optional<Verdict> other = reverse(); other && data_right(other->status)) {
      if (why.empty())
        why = "the forward thread order gives a wrong result and the reverse order the right one: the result depends "
              "on the order in which the threads run, so a data race decides it: look for shared or global memory "
              "that one thread writes and another reads with no barrier between them";
      forward = *other;
    } else if (!race.empty() && racechecked(c)) {
      // no order the emulator runs gets it right (the second look runs a warp's lanes together at
      // volatile shared accesses, as a GPU's warp does), and they disagree: where racecheck runs, the race
      return {Status::Race, case_heading(c) + ": " + race};
    }
  }
  if (!why.empty() && racechecked(c) && (forward.status == Status::Pass || forward.status == Status::MemoryError))
    return {Status::Race, case_heading(c) + ": " + why};
  return forward;
}

template Verdict judge_checked<std::int32_t>(const Case&, const RunRecord<std::int32_t>&);
template Verdict judge_checked<float>(const Case&, const RunRecord<float>&);

}  // namespace scangrade
