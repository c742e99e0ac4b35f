// The judge's pieces on their own: SHA-256, the compute-sanitizer XML reader, the performance rule,
// the command line.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>

#include "checker_messages.h"
#include "messages.h"
#include "judge.h"
#include "outside.h"
#include "session.h"
#include "sanitizer_xml.h"
#include "scoring.h"
#include "sha256.h"
#include "timing_method.h"

namespace scangrade::grader {
namespace {

TEST(TimingMethod, MedianIntervalIsTheOrderStatisticsOfTheBinomial) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  // ranks floor(50 - 9.8) = 40 and ceil(1 + 50 + 9.8) = 61 (1-based)
  EXPECT_EQ(timing::median_interval(v), std::make_pair(40.0, 61.0));
  // below a handful of values: the whole range
  EXPECT_EQ(timing::median_interval({3.0, 1.0, 2.0}), std::make_pair(1.0, 3.0));
  EXPECT_EQ(timing::median_interval({}), std::make_pair(0.0, 0.0));
}

TEST(TimingMethod, BenchmarkVariationsAreParsedAndNamed) {
  // grading: no variation, nothing in the method
  EXPECT_FALSE(timing::parse_bench_variation(nullptr).any());
  EXPECT_FALSE(timing::parse_bench_variation("").any());
  EXPECT_EQ(timing::describe(timing::parse_bench_variation(nullptr)), "");
  const timing::BenchVariation v = timing::parse_bench_variation("default_pool,no_fresh,fixed_reps=50,shift=4096");
  EXPECT_TRUE(v.error.empty()) << v.error;
  EXPECT_TRUE(v.default_pool);
  EXPECT_TRUE(v.no_fresh);
  EXPECT_EQ(v.fixed_reps, 50);
  EXPECT_EQ(v.shift, 4096u);
  EXPECT_NE(timing::describe(v).find("BENCHMARK VARIATION"), std::string::npos);
  // anything else is refused as a whole (the judge then times nothing rather than something else)
  for (const char* bad : {"fast", "fixed_reps=0", "fixed_reps=201", "fixed_reps=x", "shift=100", "shift=2097152"}) {
    const timing::BenchVariation b = timing::parse_bench_variation(bad);
    EXPECT_FALSE(b.error.empty()) << bad;
    EXPECT_FALSE(b.any()) << bad;
  }
  // a fixed number of pairs replaces the interval rule
  std::vector<double> noisy;
  for (int i = 0; i < 20; ++i) noisy.push_back(1.0 + 0.01 * ((i * 7) % 21 - 10));
  timing::BenchVariation fixed;
  fixed.fixed_reps = 20;
  EXPECT_TRUE(timing::series_done(noisy, 0.1, fixed));
  fixed.fixed_reps = 21;
  EXPECT_FALSE(timing::series_done(noisy, 100.0, fixed));  // no time budget either
  EXPECT_FALSE(timing::series_done(noisy, 0.1, timing::BenchVariation{}));
}

TEST(TimingMethod, TheJudgesBoundTakesTheCalibratedOverheadOffItsClock) {
  // the reference's calls through the worker path: judge's clock less event time 0.05, 0.06, 0.30
  // (an outlier), 0.07, 0.055 ms: the second largest, 0.07, is the overhead
  EXPECT_DOUBLE_EQ(timing::calibrated_overhead_ms({1.05, 1.06, 1.30, 1.07, 1.055}, {1, 1, 1, 1, 1}), 0.07);
  EXPECT_DOUBLE_EQ(timing::calibrated_overhead_ms({1.05, 1.30}, {1, 1}), 0.30);  // below 4 calls: the largest
  EXPECT_DOUBLE_EQ(timing::calibrated_overhead_ms({}, {}), 0.0);
  EXPECT_DOUBLE_EQ(timing::calibrated_overhead_ms({0.5, 0.5, 0.5, 0.5}, {1, 1, 1, 1}), 0.0);  // never below 0
  // a call the judge saw take 2.07 ms took at least 98% of that less 0.07 ms, whatever the worker says
  EXPECT_DOUBLE_EQ(timing::judge_bound_ms(2.07, 0.07), 0.98 * 2.07 - 0.07);
  EXPECT_DOUBLE_EQ(timing::judge_bound_ms(0.05, 0.07), 0.0);
}

TEST(TimingMethod, TheFairShareIsCallsAtFiveTimesTheReference) {
  // 203 calls (3 warm-up, 200 pairs) at 5x a 0.2 ms reference: 0.203 s
  EXPECT_DOUBLE_EQ(timing::allowance_s(timing::kWarmup + timing::kMaxPairs, 0.2), 0.203);
  EXPECT_DOUBLE_EQ(timing::allowance_s(timing::kMaxPairs, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(timing::allowance_s(10, -1.0), 0.0);
  // a submission that still earns points (less than 4x slower) gets its whole series
  EXPECT_GT(timing::kAllowanceRatio, 1.0 / kPerfZeroRatio);
}

TEST(TimingMethod, APairedSeriesStopsOnceTheRatioIsKnownWithinOnePercent) {
  std::vector<double> steady(timing::kMinReps - 1, 0.5);
  EXPECT_FALSE(timing::ratio_known(steady, 0.1));  // fewer than kMinReps pairs
  steady.push_back(0.5);
  EXPECT_TRUE(timing::ratio_known(steady, 0.1));
  // ratios spread over +-10%: the interval of 20 is wider than +-1%, so the series goes on
  std::vector<double> noisy;
  for (int i = 0; i < 20; ++i) noisy.push_back(1.0 + 0.01 * ((i * 7) % 21 - 10));
  EXPECT_FALSE(timing::ratio_known(noisy, 0.1));
  EXPECT_TRUE(timing::ratio_known(noisy, timing::kPairedBudgetSeconds));  // the budget
  EXPECT_TRUE(timing::ratio_known(std::vector<double>(timing::kMaxPairs, 1.0), 0.1));
}

TEST(DeathHint, SegfaultAtTinyNNamesDeepRecursion) {
  ExitInfo segv;
  segv.signaled = true;
  segv.signal = SIGSEGV;
  const std::string at_zero = death_hint(segv, "", 0);
  EXPECT_NE(at_zero.find("deep recursion"), std::string::npos);
  EXPECT_NE(at_zero.find("n = 0"), std::string::npos);
  ExitInfo sandboxed;  // 128 + 11 from a sandboxed process
  sandboxed.code = 139;
  EXPECT_NE(death_hint(sandboxed, "", 4096).find("deep recursion"), std::string::npos);
  EXPECT_EQ(death_hint(sandboxed, "", 4096).find("n = "), std::string::npos);
}

TEST(DeathHint, AbortQuotesTheFailedAssertion) {
  ExitInfo abrt;
  abrt.code = 134;
  const std::string out = "some output\nworker: hierarchical.cu:40: void scan(): Assertion `n <= 2048 * 2048' failed.\n";
  const std::string hint = death_hint(abrt, out, 4194305);
  EXPECT_NE(hint.find("(Assertion `n <= 2048 * 2048' failed.)"), std::string::npos) << hint;
  EXPECT_NE(hint.find("the slot must handle every n"), std::string::npos);
  EXPECT_NE(death_hint(abrt, "terminate called after throwing an instance of 'std::bad_alloc'\n", 5)
                .find("terminate called"),
            std::string::npos);
  ExitInfo killed;
  killed.signaled = true;
  killed.signal = SIGKILL;
  EXPECT_EQ(death_hint(killed, out, 5), "");
}

TEST(Sha256, KnownVectors) {
  // FIPS 180-4 examples (and the empty message)
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // 55, 56 and 64 bytes: the padding's edge cases
  EXPECT_EQ(sha256_hex(std::string(55, 'a')), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(sha256_hex(std::string(56, 'a')), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(sha256_hex(std::string(64, 'a')), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

// A racecheck report shaped like compute-sanitizer's --xml --save output (hand-written sample).
const char* kRaceXml = R"(<?xml version="1.0" encoding="utf-8"?>
<ComputeSanitizerOutput>
  <record>
    <kind>Race</kind>
    <level>Error</level>
    <what>
      <text>Race reported between Write access at void hs_kernel&lt;int&gt;(const int *, int *, unsigned long)+0x1f0 and Read access at ...+0x1c0 [2048 hazards]</text>
      <space>shared</space>
      <size>4</size>
    </what>
    <where>
      <func>void hs_kernel&lt;int&gt;(const int *, int *, unsigned long)</func>
      <path>/subs/alice/student/hillis_steele.cu</path>
      <line>17</line>
      <pc>0x1f0</pc>
    </where>
    <hostStack><frame><func>cudaLaunchKernel</func><module>libcudart.so</module></frame></hostStack>
  </record>
  <record>
    <kind>Race</kind>
    <level>Warning</level>
    <what><text>Race reported between Read access and Write access</text></what>
    <where><func>hs_kernel</func><path>hillis_steele.cu</path><line>19</line></where>
  </record>
  <record>
    <kind>Summary</kind>
    <level>Info</level>
    <what><text>RACECHECK SUMMARY: 2 hazards displayed</text></what>
  </record>
</ComputeSanitizerOutput>
)";

TEST(SanitizerXml, RacecheckRecordsBecomeFindings) {
  const SanitizerReport r = parse_sanitizer_xml(kRaceXml, "racecheck");
  ASSERT_TRUE(r.readable) << r.problem;
  EXPECT_EQ(r.records, 2u);  // the Info record is not a finding
  ASSERT_EQ(r.findings.size(), 2u);
  const SanitizerFinding& f = r.findings[0];
  EXPECT_EQ(f.tool, "racecheck");
  EXPECT_EQ(f.kind, "race");
  EXPECT_EQ(f.kernel, "void hs_kernel<int>(const int *, int *, unsigned long)");
  EXPECT_EQ(f.file, "student/hillis_steele.cu");  // the grading machine's folders are not shown
  EXPECT_EQ(f.line, 17);
  EXPECT_NE(f.text.find("Race reported between Write access"), std::string::npos);
  EXPECT_EQ(r.findings[1].line, 19);
  const std::string message = describe_findings(r.findings, r.records);
  EXPECT_NE(message.find("in kernel void hs_kernel<int>"), std::string::npos) << message;
  EXPECT_NE(message.find("at student/hillis_steele.cu:17"), std::string::npos) << message;
  EXPECT_EQ(message.find("/subs/alice"), std::string::npos) << message;
  EXPECT_NE(message.find("(and 1 more)"), std::string::npos) << message;
}

// Read off compute-sanitizer 2025.3.1 racecheck on an H200 (tests/racy/slots.cu, then under harness/grader/).
const char* kRealRaceXml = R"(<?xml version="1.0" encoding="utf-8"?>
<ComputeSanitizerOutput>
  <record>
    <kind>Analysis</kind>
    <level>Error</level>
    <what>
      <text>Race condition</text>
      <source>
        <direction>Read</direction>
        <where>
          <func>racy_hillis_steele</func>
          <path>/work/main/harness/grader/tests/racy/slots.cu</path>
          <line>18</line>
          <pc>0x140</pc>
        </where>
      </source>
      <destination>
        <direction>Write</direction>
        <where>
          <func>racy_hillis_steele</func>
          <path>/work/main/harness/grader/tests/racy/slots.cu</path>
          <line>18</line>
          <pc>0x160</pc>
        </where>
        <count>4044</count>
      </destination>
    </what>
  </record>
</ComputeSanitizerOutput>
)";

TEST(SanitizerXml, RealRacecheckReport) {
  const SanitizerReport r = parse_sanitizer_xml(kRealRaceXml, "racecheck");
  ASSERT_TRUE(r.readable);
  ASSERT_EQ(r.findings.size(), 1u);
  const SanitizerFinding& f = r.findings[0];
  EXPECT_EQ(f.kind, "analysis");
  EXPECT_EQ(f.kernel, "racy_hillis_steele");
  EXPECT_EQ(f.file, "slots.cu");  // not a student file: its name alone
  EXPECT_EQ(f.line, 18);
  EXPECT_EQ(f.text, "Race condition between Read access at slots.cu:18 and Write access at slots.cu:18 (4044 hazards)");
}

TEST(SanitizerXml, MemcheckRecordWithoutWhereAndAttributes) {
  const char* xml = R"(<ComputeSanitizerOutput version="2"><record id="1"><kind>Precise</kind><level>Error</level>
    <what><text>Invalid __global__ write of size 4 bytes</text></what>
    <func>scan_kernel</func><path>hier.cu</path><line>88</line></record></ComputeSanitizerOutput>)";
  const SanitizerReport r = parse_sanitizer_xml(xml, "memcheck");
  ASSERT_TRUE(r.readable);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, "precise");
  EXPECT_EQ(r.findings[0].kernel, "scan_kernel");
  EXPECT_EQ(r.findings[0].file, "hier.cu");
  EXPECT_EQ(r.findings[0].line, 88);
  EXPECT_EQ(r.findings[0].text, "Invalid __global__ write of size 4 bytes");
}

TEST(SanitizerXml, CleanEmptyAndForeignDocuments) {
  const SanitizerReport clean = parse_sanitizer_xml("<?xml version=\"1.0\"?>\n<ComputeSanitizerOutput/>", "memcheck");
  EXPECT_TRUE(clean.readable);
  EXPECT_TRUE(clean.findings.empty());
  EXPECT_FALSE(parse_sanitizer_xml("", "memcheck").readable);
  EXPECT_FALSE(parse_sanitizer_xml("<html><record/></html>", "memcheck").readable);
  // a truncated file (the process was killed while writing) keeps what was complete
  const SanitizerReport cut = parse_sanitizer_xml(
      "<ComputeSanitizerOutput><record><kind>Race</kind><where><func>k</func></where></record><record><ki", "racecheck");
  EXPECT_TRUE(cut.readable);
  EXPECT_GE(cut.findings.size(), 1u);
  EXPECT_EQ(cut.findings[0].kernel, "k");
}

TEST(SanitizerXml, KeepsAtMostTwentyFindingsButCountsAll) {
  std::string xml = "<ComputeSanitizerOutput>";
  for (int i = 0; i < 50; ++i) xml += "<record><kind>Race</kind><level>Error</level></record>";
  xml += "</ComputeSanitizerOutput>";
  const SanitizerReport r = parse_sanitizer_xml(xml, "racecheck");
  EXPECT_EQ(r.records, 50u);
  EXPECT_EQ(r.findings.size(), kMaxFindings);
}

TEST(Scoring, FullAtReferenceSpeedZeroAtFourTimesSlower) {
  EXPECT_DOUBLE_EQ(perf_fraction(1.0), 1.0);
  EXPECT_DOUBLE_EQ(perf_fraction(2.0), 1.0);
  EXPECT_DOUBLE_EQ(perf_fraction(0.25), 0.0);
  EXPECT_DOUBLE_EQ(perf_fraction(0.1), 0.0);
  EXPECT_DOUBLE_EQ(perf_fraction(0.625), 0.5);
  EXPECT_NEAR(*geometric_mean({0.5, 2.0}), 1.0, 1e-12);
  EXPECT_NEAR(*geometric_mean({0.25, 1.0}), 0.5, 1e-12);
  EXPECT_FALSE(geometric_mean({}).has_value());
  EXPECT_FALSE(geometric_mean({1.0, 0.0}).has_value());
}

std::vector<std::string> base_args() {
  return {"--worker", "w", "--out", "r.json", "--submission-name", "s", "--submission-path", "p", "--backend", "gpu",
          "--suite", "x.json"};
}

TEST(CommandLine, ParsesEveryFlag) {
  auto args = base_args();
  for (const char* a : {"--budget-s", "12", "--timeout-scale", "0.5", "--sanitizer", "off", "--only-slot", "blelloch",
                        "--log-limit", "100", "--verbose", "--compute-sanitizer", "/opt/cs"})
    args.push_back(a);
  const Options o = parse_args(args);
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof cwd), nullptr);
  EXPECT_EQ(o.worker, std::string(cwd) + "/w");  // workers start elsewhere: a relative path is made absolute
  EXPECT_EQ(parse_args({"--worker", "/abs/w", "--out", "r.json", "--submission-name", "s", "--submission-path", "p",
                        "--backend", "gpu", "--suite", "x.json"}).worker,
            "/abs/w");
  EXPECT_EQ(o.budget_s, 12);
  EXPECT_EQ(o.timeout_scale, 0.5);
  EXPECT_FALSE(o.sanitizer);
  EXPECT_EQ(o.only_slot, Slot::Blelloch);
  EXPECT_EQ(o.log_limit, 100u);
  EXPECT_TRUE(o.verbose);
  EXPECT_EQ(o.compute_sanitizer, "/opt/cs");
}

TEST(CommandLine, RejectsBadUsage) {
  const auto error = [](std::vector<std::string> args) -> std::string {
    try {
      parse_args(args);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "(no error)";
  };
  auto a = base_args();
  a.push_back("--backend");
  a.push_back("cpu");
  EXPECT_NE(error(a).find("--backend"), std::string::npos);
  a = base_args();
  a.push_back("--hidden-suite");
  a.push_back("h.json");
  EXPECT_NE(error(a).find("needs the secret"), std::string::npos);
  a = base_args();
  a.push_back("--only-slot");
  a.push_back("kogge");
  EXPECT_NE(error(a).find("'kogge'"), std::string::npos);
  a = base_args();
  a.push_back("--frobnicate");
  EXPECT_NE(error(a).find("unknown argument"), std::string::npos);
  EXPECT_NE(error({"--out", "r.json"}).find("required"), std::string::npos);
  EXPECT_TRUE(parse_args({"--help"}).help);
  EXPECT_NE(usage_text().find("Exit codes"), std::string::npos);
}

TEST(OutsideView, TheProcessTreeHoldsChildrenAndGrandchildren) {
  // a child that starts a grandchild; both sleep until killed
  const pid_t child = fork();
  if (child == 0) {
    if (fork() == 0) pause();
    pause();
  }
  std::vector<pid_t> tree;
  for (int i = 0; i < 200 && tree.size() < 3; ++i) {
    usleep(5000);
    tree = process_tree(getpid());
  }
  EXPECT_EQ(tree.front(), getpid());
  EXPECT_NE(std::find(tree.begin(), tree.end(), child), tree.end());
  EXPECT_GE(tree.size(), 3u);  // this test, its child, the grandchild
  const std::vector<pid_t> below = process_tree(child);
  // the children files and every process's parent tell the same tree
  std::vector<pid_t> mine = process_tree(getpid()), from_parents = process_tree_from_parents(getpid());
  std::sort(mine.begin(), mine.end()), std::sort(from_parents.begin(), from_parents.end());
  EXPECT_EQ(mine, from_parents);
  for (const pid_t p : below) kill(p, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_EQ(below.size(), 2u);
  // without NVML (the CPU machines) the view says why and reports -1, never a count
  const DeviceMemoryView& view = DeviceMemoryView::get();
  if (!view.available()) {
    EXPECT_FALSE(view.why_not().empty());
    EXPECT_EQ(view.held_by_tree(getpid()), -1);
  }
}

}  // namespace
}  // namespace scangrade::grader

// --- the judge <-> checker messages (checker_messages.h) --------------------------------------------

namespace {

scangrade::grader::CheckerRequest round_trip(const scangrade::grader::CheckerRequest& m) {
  return scangrade::grader::decode_checker_request(scangrade::grader::encode(m));
}

}  // namespace

TEST(CheckerProtocol, EveryRequestDecodesToWhatWasEncoded) {
  using namespace scangrade::grader;
  const CheckerRequest setup = round_trip(CheckerRequest::setup(1025, 4, 64, false));
  EXPECT_EQ(setup.op, CheckerOp::Setup);
  EXPECT_EQ(setup.n, 1025u);
  EXPECT_EQ(setup.element, 4u);
  EXPECT_EQ(setup.offset, 64u);
  EXPECT_FALSE(setup.share);
  const CheckerRequest check = round_trip(CheckerRequest::check(scangrade::ScanKind::Exclusive, scangrade::DType::Float32));
  EXPECT_EQ(check.kind, scangrade::ScanKind::Exclusive);
  EXPECT_EQ(check.dtype, scangrade::DType::Float32);
  scangrade::Case c{};
  c.slot = scangrade::Slot::SinglePass;
  c.dtype = scangrade::DType::Float32;
  c.kind = scangrade::ScanKind::Exclusive;
  c.values = scangrade::ValueKind::Real;
  c.n = 1u << 20;
  const CheckerRequest timed = round_trip(CheckerRequest::time_setup(c, 64, true, true));
  EXPECT_EQ(timed.op, CheckerOp::TimeSetup);
  EXPECT_EQ(timed.slot, scangrade::Slot::SinglePass);
  EXPECT_EQ(timed.dtype, scangrade::DType::Float32);
  EXPECT_EQ(timed.kind, scangrade::ScanKind::Exclusive);
  EXPECT_EQ(timed.values, scangrade::ValueKind::Real);
  EXPECT_EQ(timed.n, 1u << 20);
  EXPECT_EQ(timed.offset, 64u);
  EXPECT_TRUE(timed.baselines);
  EXPECT_TRUE(timed.paired_reference);
  EXPECT_EQ(round_trip(CheckerRequest::prime(1)).j, 1);
  EXPECT_EQ(round_trip(CheckerRequest::verify(1)).op, CheckerOp::Verify);
  for (CheckerOp op : {CheckerOp::Collect, CheckerOp::Release, CheckerOp::ReferenceCall, CheckerOp::TimeEnd})
    EXPECT_EQ(round_trip(CheckerRequest::of(op)).op, op) << name(op);
}

TEST(CheckerProtocol, EveryReplyDecodesToWhatWasEncoded) {
  using namespace scangrade::grader;
  CheckerReply setup;
  setup.sizes = {2u << 20, 4u << 20};
  setup.kept = true;
  const CheckerReply s = decode_checker_reply(encode(setup, CheckerOp::Setup), CheckerOp::Setup);
  EXPECT_EQ(s.sizes, setup.sizes);
  EXPECT_TRUE(s.kept);
  CheckerReply timed;
  timed.sizes = {1, 2, 3, 4};
  timed.baselines = Baselines{1.5, 1.25, 0.75};
  timed.flush_bytes = 1u << 26;
  timed.fresh_input = true;
  const CheckerReply t = decode_checker_reply(encode(timed, CheckerOp::TimeSetup), CheckerOp::TimeSetup);
  EXPECT_EQ(t.sizes, timed.sizes);
  ASSERT_TRUE(t.baselines);
  EXPECT_EQ(t.baselines->reference_ms, 1.5);
  EXPECT_EQ(t.baselines->cub_ms, 1.25);
  EXPECT_EQ(t.flush_bytes, 1u << 26);
  EXPECT_TRUE(t.fresh_input);
  EXPECT_FALSE(decode_checker_reply(encode(CheckerReply{}, CheckerOp::TimeSetup), CheckerOp::TimeSetup).baselines);
  CheckerReply verified;
  verified.outside = 4097;
  EXPECT_EQ(decode_checker_reply(encode(verified, CheckerOp::Verify), CheckerOp::Verify).outside, 4097u);
  EXPECT_FALSE(decode_checker_reply(encode(CheckerReply{}, CheckerOp::Verify), CheckerOp::Verify).outside);
  CheckerReply checked;
  checked.verified = true;
  EXPECT_TRUE(decode_checker_reply(encode(checked, CheckerOp::Check), CheckerOp::Check).verified);
  CheckerReply paired;
  paired.ms = 0.25;
  EXPECT_EQ(decode_checker_reply(encode(paired, CheckerOp::ReferenceCall), CheckerOp::ReferenceCall).ms, 0.25);
  const CheckerReply failed =
      decode_checker_reply(encode(CheckerReply::failed("out of memory"), CheckerOp::TimeSetup), CheckerOp::TimeSetup);
  EXPECT_EQ(failed.error, "out of memory");
  EXPECT_FALSE(CheckerReply::failed("").error.empty());  // an exception without text is still an error
  const CheckerHello hello = decode_checker_hello(encode(CheckerHello{"H100", ""}));
  EXPECT_EQ(hello.device, "H100");
  EXPECT_EQ(hello.error, "");
}

TEST(CheckerProtocol, DecodingFailsClosed) {
  using namespace scangrade::grader;
  const auto request = [](const char* text) { return decode_checker_request(text); };
  const auto reply = [](const char* text, CheckerOp op) { return decode_checker_reply(text, op); };
  EXPECT_THROW(request("not json"), MessageError);
  EXPECT_THROW(request(R"({"op": "format_disk"})"), MessageError);
  EXPECT_THROW(request(R"({"op": "setup", "n": 4, "offset": 0, "share": true})"), MessageError);  // no element
  EXPECT_THROW(request(R"({"op": "setup", "n": -4, "element": 4, "offset": 0, "share": true})"), MessageError);
  EXPECT_THROW(request(R"({"op": "prime", "j": 2})"), MessageError);
  EXPECT_THROW(request(R"({"op": "verify", "j": true})"), MessageError);
  EXPECT_THROW(request(R"({"op": "check", "kind": "inclusive", "dtype": "float64"})"), MessageError);
  EXPECT_THROW(request(R"({"op": "release", "extra": 1})"), MessageError);
  EXPECT_THROW(reply(R"({"ok": true})", CheckerOp::Verify), MessageError);  // no verdict is not a pass
  EXPECT_THROW(reply(R"({"ok": true, "outside": -1})", CheckerOp::Verify), MessageError);
  EXPECT_THROW(reply(R"({"ok": true})", CheckerOp::ReferenceCall), MessageError);
  EXPECT_THROW(reply(R"({"ok": true, "sizes": [1, "2"], "kept": false})", CheckerOp::Setup), MessageError);
  EXPECT_THROW(reply(R"({"ok": false})", CheckerOp::Release), MessageError);
  EXPECT_THROW(reply(R"({"error": ""})", CheckerOp::Release), MessageError);
  EXPECT_THROW(decode_checker_hello(R"({"hello": 2, "device": "", "error": ""})"), MessageError);
}

// The not-implemented line in a worker's check reply is the student process's word: kept only in the
// form not_implemented() writes it, else dropped (the message then names the slot's file).
TEST(WorkerReply, NotImplementedLineKeptOnlyInItsForm) {
  using namespace scangrade::grader;
  const auto at = [](const std::string& text) {
    nlohmann::json j = {{"ok", true},          {"error", ""},     {"harness_error", ""}, {"not_implemented", true},
                        {"context_broken", false}, {"leaked_bytes", 0}, {"leak_detail", ""}, {"race", ""},
                        {"policy", ""},        {"policy_rule", ""}, {"not_implemented_at", text}};
    return j.get<CheckReply>().not_implemented_at;
  };
  EXPECT_EQ(at("student/blelloch.cu:18"), "student/blelloch.cu:18");
  EXPECT_EQ(at("student/scan_helpers.cuh:7"), "student/scan_helpers.cuh:7");
  EXPECT_EQ(at("student/hillis_steele.cu:1 [  PASSED  ] 29/29"), "");
  EXPECT_EQ(at("student/x.cu:12\x1b[2J"), "");
  EXPECT_EQ(at("/work/grading-results/secret:1"), "");
  EXPECT_EQ(at("student/../secret:1"), "");  // '/' is not in a file name
  EXPECT_EQ(at("student/x.cu:"), "");
  EXPECT_EQ(at("student/" + std::string(200, 'a') + ".cu:1"), "");
}
