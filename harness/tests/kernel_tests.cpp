// The kernel tests: one TEST_P body, instantiated per slot from the suite's rows, run over
// whichever implementation this binary is linked with (student, reference, gallery example).
//
//   scangrade_student_test [--suite=FILE] [gtest flags]     (`make test`)
//   scangrade_selftest     [--suite=FILE] [gtest flags]     (`make check`: the reference)
// The suite defaults to testcases/public.json; SCANGRADE_SUITE also sets it.
// Built twice: for the GPU, and for the CPU emulation backend (SCANGRADE_EMULATED, the *_emu
// binaries), where each case runs in a forked child under several thread orders.
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "scangrade/device_run.h"
#include "scangrade/inputs.h"
#include "scangrade/oracle.h"
#include "scangrade/suite.h"
#ifdef SCANGRADE_EMULATED
#include "scangrade/emulated_run.h"
#endif

namespace scangrade::testing {

/// Defined by the binding file this binary links (bind_student.cpp, bind_reference.cpp, ...).
Implementation implementation_under_test();

namespace {

std::string g_suite_path = SCANGRADE_DEFAULT_SUITE;
#ifdef SCANGRADE_EMULATED
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif

/// A test's parameter: a suite row, or a placeholder that explains why the slot has no rows.
struct KernelParam {
  Case c;
  std::string placeholder;  // non-empty: "[<dtype>_]not_implemented" or "suite_error"
  std::string detail;
};

void PrintTo(const KernelParam& p, std::ostream* os) { *os << (p.placeholder.empty() ? p.c.id : p.placeholder); }

const Implementation& implementation() {
  static const Implementation impl = implementation_under_test();
  return impl;
}

const Suite& suite() {
  static const Suite s = load_suite(g_suite_path);
  return s;
}

/// The starter files throw NotImplemented before touching their arguments: an n = 0 call tells.
bool slot_is_implemented(Slot slot, DType dtype) {
  const ScanKind kind = fixed_kind(slot).value_or(ScanKind::Inclusive);
  try {
    if (dtype == DType::Int32) implementation().get<std::int32_t>(slot, kind)(nullptr, nullptr, 0, nullptr);
    else implementation().get<float>(slot, kind)(nullptr, nullptr, 0, nullptr);
  } catch (const NotImplemented&) {
    return false;
  } catch (...) {
  }
  cudaGetLastError();
  return true;
}

// --- summary ---------------------------------------------------------------------------------

struct Tally {
  int passed = 0, failed = 0, skipped = 0;
  bool not_implemented = false;
  std::string skip_reason;
};
std::map<std::string, std::pair<Slot, DType>> g_test_owner;  // "Suite.Test" -> slot, dtype
std::map<std::pair<Slot, DType>, Tally> g_tally;

class SummaryPrinter : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const auto it = g_test_owner.find(std::string(info.test_suite_name()) + "." + info.name());
    if (it == g_test_owner.end()) return;
    Tally& t = g_tally[it->second];
    const ::testing::TestResult& r = *info.result();
    if (r.Skipped()) {
      ++t.skipped;
      if (t.skip_reason.empty() && r.total_part_count() > 0) t.skip_reason = r.GetTestPartResult(0).message();
    } else if (r.Passed()) {
      ++t.passed;
    } else {
      ++t.failed;
    }
  }
  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    std::cout << "\nScanGrade summary: " << implementation().name << " on "
              << (kEmulated ? "the CPU emulation backend (emulated: no timings)" : device_description()) << "\n";
    std::cout << std::left << std::setw(15) << "slot" << std::setw(32) << "int32" << "float32\n";
    for (Slot slot : kAllSlots) {
      std::cout << std::setw(15) << name(slot);
      for (DType dtype : kAllDTypes) {
        const auto it = g_tally.find({slot, dtype});
        std::ostringstream cell;
        if (it == g_tally.end()) {
          cell << "no cases";
        } else if (it->second.not_implemented) {
          cell << "NOT IMPLEMENTED";
        } else {
          const Tally& t = it->second;
          cell << t.passed << "/" << t.passed + t.failed + t.skipped << " passed";
          if (t.failed) cell << ", " << t.failed << " FAILED";
          if (t.skipped) cell << ", " << t.skipped << " skipped";
        }
        std::cout << std::setw(32) << cell.str();
      }
      std::cout << "\n";
    }
    for (const auto& [key, t] : g_tally)
      if (t.skipped && !t.not_implemented && !t.skip_reason.empty()) {
        std::cout << "skipped because: " << t.skip_reason.substr(0, t.skip_reason.find('\n')) << "\n";
        break;
      }
  }
};

// --- parameters --------------------------------------------------------------------------------

std::string param_name_of(const KernelParam& p) {
  return p.placeholder.empty() ? case_label(p.c) : p.placeholder;
}

std::vector<KernelParam> params_for(Slot slot) {
  std::vector<KernelParam> params;
  const std::string suite_name = std::string(camel_name(slot)) + "/Kernel";
  try {
    std::vector<DType> missing;  // dtypes with cases whose slot still throws NotImplemented
    for (DType dtype : kAllDTypes) {
      const bool implemented = slot_is_implemented(slot, dtype);
      for (const Case& c : suite().cases) {
        if (c.slot != slot || c.dtype != dtype) continue;
        if (!implemented) {
          missing.push_back(dtype);
          break;
        }
        params.push_back({c, "", ""});
        g_test_owner[suite_name + ".Case/" + case_label(c)] = {slot, dtype};
      }
    }
    // One line per slot when nothing is written yet; one per dtype when only one is missing.
    for (DType dtype : missing) {
      const bool both = missing.size() == 2;
      KernelParam p{Case{}, both ? "not_implemented" : std::string(name(dtype)) + "_not_implemented",
                    std::string(student_file(slot)) + (both ? "" : " (" + std::string(name(dtype)) + ")") +
                        " still calls not_implemented(): fill in the slot"};
      p.c.slot = slot;
      p.c.dtype = dtype;
      for (DType d : missing) g_tally[{slot, d}].not_implemented = true;
      g_test_owner[suite_name + ".Case/" + param_name_of(p)] = {slot, dtype};
      params.push_back(p);
      if (both) break;
    }
  } catch (const std::exception& e) {
    params.clear();
    params.push_back({Case{}, "suite_error", e.what()});
  }
  return params;
}

std::string param_name(const ::testing::TestParamInfo<KernelParam>& info) { return param_name_of(info.param); }

// --- the test body -------------------------------------------------------------------------------

std::string g_broken_by;  // the case that left the CUDA context unusable, if any

#ifdef SCANGRADE_EMULATED
/// Emulated: the case runs in a forked child (a spinning kernel or a segfault costs only this
/// case) under several thread orders (emulated_run.h).
template <typename T>
Verdict run_case(const Case& c) {
  const std::vector<T> input = make_input<T>(c);
  const std::vector<double> expected = oracle_scan(input, c.kind);
  const ScanFn<T> fn = implementation().get<T>(c.slot, c.kind);
  const Isolated child = run_isolated(
      [&] {
        const Verdict v = judge(c, input, expected, run_emulated(fn, input));
        return std::string(name(v.status)) + "\n" + v.message;
      },
      default_deadline_s(c.n, true));
  if (!child.finished) return {child.status, c.id + ": " + child.message};
  const auto split = child.payload.find('\n');
  const std::optional<Status> status = parse_status(child.payload.substr(0, split));
  if (!status) return {Status::InternalError, c.id + ": unreadable result from the test child: " + child.payload};
  return {*status, split == std::string::npos ? "" : child.payload.substr(split + 1)};
}
#else
template <typename T>
Verdict run_case(const Case& c) {
  const std::vector<T> input = make_input<T>(c);
  const std::vector<double> expected = oracle_scan(input, c.kind);
  const RunRecord<T> run = run_on_device(implementation().get<T>(c.slot, c.kind), input);
  if (run.context_broken) g_broken_by = c.id;
  return judge(c, input, expected, run);
}
#endif

class Kernel : public ::testing::TestWithParam<KernelParam> {};

TEST_P(Kernel, Case) {
  const KernelParam& p = GetParam();
  if (p.placeholder == "suite_error") FAIL() << "cannot load the suite: " << p.detail;
  if (p.placeholder.find("not_implemented") != std::string::npos) GTEST_SKIP() << "NOT IMPLEMENTED: " << p.detail;
  if (const auto why = device_unavailable()) {
    const char* backend = std::getenv("SCANGRADE_BACKEND");
    if (backend && std::string(backend) == "gpu") FAIL() << "SCANGRADE_BACKEND=gpu insists on a GPU, but: " << *why;
    GTEST_SKIP() << "GPU test skipped: " << *why << " (make test uses the emulation backend then)";
  }
  if (!g_broken_by.empty())
    GTEST_SKIP() << "not run: case " << g_broken_by
                 << " left the CUDA context unusable (a sticky error such as an illegal address); fix that case first";

  const Case& c = p.c;
#ifdef SCANGRADE_EMULATED
  if (c.n > kEmulationMaxN)
    GTEST_SKIP() << "n = " << c.n << " is above the emulation cap of " << kEmulationMaxN
                 << " (2^22 + 1) elements: this case runs on a GPU only";
#endif
  const Verdict v = c.dtype == DType::Int32 ? run_case<std::int32_t>(c) : run_case<float>(c);
  if (v.status == Status::NotImplemented) GTEST_SKIP() << "NOT IMPLEMENTED: " << v.message;
  if (v.status != Status::Pass) FAIL() << name(v.status) << ": " << v.message;
}

INSTANTIATE_TEST_SUITE_P(HillisSteele, Kernel, ::testing::ValuesIn(params_for(Slot::HillisSteele)), param_name);
INSTANTIATE_TEST_SUITE_P(Blelloch, Kernel, ::testing::ValuesIn(params_for(Slot::Blelloch)), param_name);
INSTANTIATE_TEST_SUITE_P(Hierarchical, Kernel, ::testing::ValuesIn(params_for(Slot::Hierarchical)), param_name);
INSTANTIATE_TEST_SUITE_P(SinglePass, Kernel, ::testing::ValuesIn(params_for(Slot::SinglePass)), param_name);

}  // namespace
}  // namespace scangrade::testing

int main(int argc, char** argv) {
  // Load every kernel at context creation, so module loading is not mistaken for a leak.
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  if (const char* env = std::getenv("SCANGRADE_SUITE")) scangrade::testing::g_suite_path = env;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--suite=", 0) == 0) scangrade::testing::g_suite_path = arg.substr(8);
  }
  ::testing::InitGoogleTest(&argc, argv);
  if (scangrade::testing::kEmulated)
    std::cout << "ScanGrade: running the kernels on the CPU emulation backend (no GPU used; results are labelled "
                 "emulated, sizes above 2^22 + 1 are skipped)\n";
  ::testing::UnitTest::GetInstance()->listeners().Append(new scangrade::testing::SummaryPrinter);
  return RUN_ALL_TESTS();
}
