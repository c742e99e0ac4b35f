// A case's data in the judge: the case (Entry), its input, the oracle's output, and the case cache
// that makes them once per batch; following one case through the functional pass stays in this file
// pair until Session::grade (functional.cpp) runs it.
//
// The case cache: a case's input and oracle output made once per batch and shared, read-only, by
// the batch's judges (--case-cache DIR). Every judge of a batch grades the same suites with the same
// seed and secret, so for the 2^26-element cases each judge would otherwise spend about a second per
// case making the same data.
//
// A file <dir>/<key>.case holds one case: a 64-byte header (magic, format version, dtype, n, element
// sizes, the key), the input's bytes, then the expected doubles. The key is a sha256 over the format
// version, the harness version, the judge's build (sha256 of its executable) and everything that
// determines the data: the input case's id, dtype, n, values and seed (the secret already mixed in
// for hidden suites) and the kind. A file is trusted only when it is a regular file of this user,
// writable by no one else, with the right header and size; anything else is made again and replaced
// (a temporary file, O_EXCL, 0600, then a rename: judges making the same case at once both rename).
//
// The cache only ever holds what a judge made from the suite, never anything from a worker, and the
// folder must be out of every worker's reach (the batch makes it 0700 outside the sandboxes). A cache
// problem of any kind falls back to making the data here: it never changes a verdict.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "case_memory.h"  // CachedInput
#include "scangrade/suite.h"

namespace scangrade::grader {

/// One case to grade, with where it came from.
struct Entry {
  const Suite* suite = nullptr;
  Case c;           // as written (c.seed is what results record)
  Case input_case;  // the case whose seed makes the input (the secret mixed in when hidden)
};

/// A case's input, in its element type (the other vector stays empty).
struct CaseInput {
  std::vector<std::int32_t> i32;
  std::vector<float> f32;
  const void* data() const { return i32.empty() ? static_cast<const void*>(f32.data()) : i32.data(); }
  std::size_t bytes() const { return i32.size() * sizeof(std::int32_t) + f32.size() * sizeof(float); }
};

/// The input of a case (Entry::input_case), made the one way every pass makes it (inputs.h).
CaseInput make_case_input(const Entry& e);

/// The oracle's output for a case's input (oracle.h); throws std::range_error as oracle_scan does.
std::vector<double> case_oracle(const Entry& e, const CaseInput& input);

/// What the judge makes for a case before a worker runs it: the input and the oracle's output
/// (made ahead, on another thread, while the worker runs the previous case). On the GPU backend a
/// case that passes needs neither in the judge (the checker reads the input from the case cache
/// and checks the output on the device): `in_cache` says the data is only in the cache,
/// `has_expected` false that the oracle has not run; complete_case_data makes both when needed.
struct CaseData {
  CaseInput input;
  std::vector<double> expected;
  bool in_cache = false;
  bool has_expected = true;
  std::string error;  // why they could not be made
  template <typename T>
  const std::vector<T>& values() const {
    if constexpr (std::is_same_v<T, float>) return input.f32;
    else return input.i32;
  }
};

/// The input and the oracle's output, made here (no cache); error says why they could not be.
CaseData make_case_data(const Entry& e);

// --- the case cache -------------------------------------------------------------------------------

/// What cached_case_data did.
enum class CacheUse {
  Off,       // no cache folder: made here
  Hit,       // read from the cache
  Stored,    // made here and written to the cache
  Fallback,  // made here; the cache could not be used (see the judge's stderr)
};

/// make_case_data(e), through the cache in `cache_dir` ("" = no cache). `use`, when given, says how.
CaseData cached_case_data(const Entry& e, const std::string& cache_dir, CacheUse* use = nullptr);

/// A case's input as a read-only descriptor of its cache file and the byte offset of the input in
/// it, for the checker (a timed case's input needs no copy); fd -1 when the cache has no valid file
/// for the case (the same checks as cached_case_data: owner, mode, size, header). The caller closes it.
CachedInput cached_input(const Entry& e, const std::string& cache_dir);

/// A case's data for a functional run. Without `device_checks` (emulation): cached_case_data. With
/// them (GPU: the checker checks a passing output itself): when the cache holds the case, nothing
/// but in_cache; without a cache, the input only (no oracle yet); else made and stored.
CaseData case_data_for_run(const Entry& e, const std::string& cache_dir, bool device_checks);

/// Makes what a CaseData from case_data_for_run lacks (read from the cache, or the oracle run), for
/// a case the judge must judge itself; sets d.error when it cannot.
void complete_case_data(const Entry& e, const std::string& cache_dir, CaseData& d);

/// The cache file of a case: <cache_dir>/<key>.case.
std::string case_cache_path(const Entry& e, const std::string& cache_dir);

}  // namespace scangrade::grader
