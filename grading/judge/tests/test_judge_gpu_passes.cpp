// The judge's GPU passes with the fake worker and a stand-in compute-sanitizer: timing and
// performance points, compute-sanitizer findings (judge_fixture.h).
#include "judge_fixture.h"
#include "timing_method.h"

namespace scangrade::grader {
namespace {

/// A checker script whose reference takes `reference_ms` (alone and paired).
std::string checker_with_reference(const std::string& dir, const std::string& reference_ms) {
  const std::string checker = dir + "/checker-" + reference_ms + ".sh";
  write_text(checker, "#!/bin/sh\nexec " + quote(kFakeChecker) + " --reference " + reference_ms + " \"$@\"\n");
  chmod(checker.c_str(), 0755);
  return checker;
}

TEST_F(Judge, GpuBackendTimesPerfCasesAndScoresPerformance) {
  // ratio 0.625: (0.625 - 0.25) / 0.75 = half the performance points. The worker reports 16 ms for
  // calls that take microseconds, against a reference of 10 ms: the judge's bound (its clock around
  // a call) stays below every reported time unless the machine stalls the exchange for 16 ms
  const Result r = judge(worker("--mode ok --ratio 0.0625"),
                         "--compute-sanitizer /nonexistent/compute-sanitizer --checker " +
                             quote(checker_with_reference(dir_, "10")),
                         "gpu");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 0) << r.err;
  expect_valid(r.results, dir_);
  const json& t = case_of(r.results, "hier.int32.n5000.excl")["timing"];
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["ratio_to_reference"], 0.625);
  EXPECT_EQ(t["ratio_interval"], json::array({0.625, 0.625}));  // constant pairs: a point
  EXPECT_TRUE(contains(t["method"], "median of these pairs' ratios")) << t["method"];
  EXPECT_TRUE(case_of(r.results, "hs.int32.n10")["timing"].is_null());  // not a perf case
  EXPECT_DOUBLE_EQ(r.results["slots"]["hierarchical"]["perf_ratio"].get<double>(), 0.625);
  ASSERT_TRUE(r.results["slots"]["hierarchical"]["perf_ratio_interval"].is_array());
  EXPECT_DOUBLE_EQ(r.results["slots"]["hierarchical"]["perf_ratio_interval"][0].get<double>(), 0.625);
  EXPECT_DOUBLE_EQ(r.results["slots"]["hierarchical"]["perf_ratio_interval"][1].get<double>(), 0.625);
  EXPECT_DOUBLE_EQ(r.results["slots"]["hierarchical"]["perf_points"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(r.results["slots"]["single_pass"]["perf_points"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(r.results["score"]["total"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(r.results["score"]["max_total"].get<double>(), 11.0);
  // compute-sanitizer missing: never "found nothing"
  EXPECT_EQ(r.results["sanitizer_pass"]["ran"], false);
  EXPECT_TRUE(contains(r.results["sanitizer_pass"]["reason"], "compute-sanitizer not found"));
  const json& san = case_of(r.results, "sp.float32.n3000.real")["sanitizer"];
  EXPECT_EQ(san["ran"], false);
  EXPECT_TRUE(contains(san["reason"], "not found"));
  EXPECT_TRUE(r.results["environment"]["compute_sanitizer"].is_null());
  expect_no_process_left();
}

TEST_F(Judge, CheckBuffersStayForTheNextCaseThatFitsThem) {
  // the fake checker, like the checker, keeps a case's buffers when the next case fits their rounded
  // sizes (64 KiB there): the four small cases run in one pair, mapped by the worker once
  const Result r = judge(worker("--mode ok"), "--sanitizer off --verbose", "gpu");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 0) << r.err;
  expect_others_pass(r.results, {});
  EXPECT_TRUE(contains(r.err, "kept_buffers=3")) << r.err;
}

TEST_F(Judge, AWorkerStartedAfterACrashIsSentTheKeptBuffersAgain) {
  // command 2 (blelloch) crashes: the hierarchical case runs in a fresh worker, which holds no
  // buffers and must receive descriptors (the fake worker exits 8 when told to use buffers it does
  // not hold); the single-pass case after it runs in that worker's kept pair again
  const Result r = judge(worker("--mode crash_on=2"), "--sanitizer off --verbose", "gpu");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(case_of(r.results, "bl.float32.n100")["status"], "crash");
  expect_others_pass(r.results, {"bl.float32.n100"});
  EXPECT_TRUE(contains(r.err, "kept_buffers=2")) << r.err;
}

TEST_F(Judge, ATimedCallThatDidNotComputeItsResultFailsTheCase) {
  const Result r = judge(worker("--mode stale_timed"), "--sanitizer off", "gpu");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  for (const char* id : {"hier.int32.n5000.excl", "sp.float32.n3000.real"}) {  // the perf cases
    const json& c = case_of(r.results, id);
    EXPECT_EQ(c["status"], "fail") << id;
    EXPECT_TRUE(contains(c["message"], "Results must be computed on every call")) << c["message"];
    EXPECT_TRUE(c["timing"].is_null()) << id;
  }
  EXPECT_EQ(r.results["slots"]["hierarchical"]["perf_points"], 0);
  expect_others_pass(r.results, {"hier.int32.n5000.excl", "sp.float32.n3000.real"});
}

TEST_F(Judge, WorkLeftRunningAfterATimedCallReturnsFailsTheCase) {
  // the worker's timed calls return at once and write their output only when the next command
  // arrives: the checker verifies each call's output before the next command, so it finds the poison
  const Result r = judge(worker("--mode finishes_after_return"), "--sanitizer off", "gpu");
  ASSERT_TRUE(r.written) << r.err;
  expect_valid(r.results, dir_);
  for (const char* id : {"hier.int32.n5000.excl", "sp.float32.n3000.real"}) {
    const json& c = case_of(r.results, id);
    EXPECT_EQ(c["status"], "fail") << id;
    EXPECT_TRUE(contains(c["message"], "Results must be computed on every call")) << c["message"];
    EXPECT_TRUE(contains(c["message"], "new input values")) << c["message"];
    EXPECT_TRUE(c["timing"].is_null()) << id;
  }
}

TEST_F(Judge, TimedCallsGetFreshInputSoACacheKeyedOnTheInputNeverHits) {
  // the worker remembers each result under n and 32 sampled input elements and returns it at once on
  // a hit. Every timed call gets new input values (the checker's own seed), so every call misses
  const Result r = judge(worker("--mode caches_sampled_input"), "--sanitizer off", "gpu");
  ASSERT_TRUE(r.written) << r.err;
  expect_valid(r.results, dir_);
  for (const char* id : {"hier.int32.n5000.excl", "sp.float32.n3000.real"}) {  // random and real values
    const json& c = case_of(r.results, id);
    EXPECT_EQ(c["status"], "pass") << id << ": " << c["message"];
    ASSERT_TRUE(c["timing"].is_object()) << id;
    EXPECT_TRUE(contains(c["timing"]["method"], "new input values")) << c["timing"]["method"];
  }
  // no timed call was a cache hit (the worker says so on every hit; times are not asserted: the
  // machine is shared)
  EXPECT_FALSE(contains(r.results["student_output"]["text"], "result cache hit"));
}

TEST_F(Judge, WithThePristineInputRestoredTheSampledInputCacheHits) {
  // the same worker against a checker that restores the case's input before every timed call (the
  // method before fresh inputs): the cache hits (and the slot would time at a copy's speed). This is
  // what the test above rules out.
  const std::string checker = dir_ + "/pristine-checker.sh";
  write_text(checker, "#!/bin/sh\nexec " + quote(kFakeChecker) + " --pristine-timing \"$@\"\n");
  chmod(checker.c_str(), 0755);
  const Result r = judge(worker("--mode caches_sampled_input"), "--sanitizer off --checker " + quote(checker), "gpu");
  ASSERT_TRUE(r.written) << r.err;
  const json& c = case_of(r.results, "hier.int32.n5000.excl");
  ASSERT_TRUE(c["timing"].is_object()) << c["message"];
  EXPECT_TRUE(contains(r.results["student_output"]["text"], "result cache hit"));
  EXPECT_FALSE(contains(c["timing"]["method"], "new input values")) << c["timing"]["method"];
}

TEST_F(Judge, TheMethodSaysWhichRuleStoppedTheSeries) {
  // constant pairs: the interval is a point, so the interval rule stops at the least pairs (16 ms
  // reported against a reference of 10 ms: above the judge's bound, as in the test above)
  const Result r = judge(worker("--mode ok --ratio 0.0625"),
                         "--sanitizer off --checker " + quote(checker_with_reference(dir_, "10")), "gpu");
  ASSERT_TRUE(r.written) << r.err;
  const json& t = case_of(r.results, "hier.int32.n5000.excl")["timing"];
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["reps"], timing::kMinReps);
  EXPECT_TRUE(contains(t["method"], "stopped by the interval rule with the ratio's 95% interval at 0.00%"))
      << t["method"];
  EXPECT_FALSE(contains(t["method"], "BENCHMARK VARIATION")) << t["method"];  // grading: none
}

TEST_F(Judge, ASlotThatFailedACaseGetsAShortSeries) {
  // a small hierarchical case before the perf one crashes: the slot can earn no performance points,
  // so its perf case is timed for the feedback only, with the least pairs; the single-pass slot, all
  // of whose cases passed, is timed by the interval rule (constant pairs here: it too stops at the
  // least pairs, so the method's words tell the two rules apart)
  json suite = json::parse(kSuite);
  suite["cases"].insert(suite["cases"].begin() + 2,
                        json{{"id", "hier.int32.n1000.incl"}, {"slot", "hierarchical"}, {"dtype", "int32"},
                             {"kind", "inclusive"}, {"n", 1000}, {"values", "random"}, {"seed", 5}, {"why", "small"}});
  write_text(suite_, suite.dump());
  const Result r = judge(worker("--mode crash_small=hierarchical --ratio 0.0625"),
                         "--sanitizer off --checker " + quote(checker_with_reference(dir_, "10")), "gpu");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(case_of(r.results, "hier.int32.n1000.incl")["status"], "crash");
  const json& failed = case_of(r.results, "hier.int32.n5000.excl");
  EXPECT_EQ(failed["status"], "pass") << failed["message"];
  ASSERT_TRUE(failed["timing"].is_object()) << failed["message"];
  EXPECT_EQ(failed["timing"]["reps"], timing::kMinReps);
  EXPECT_TRUE(contains(failed["timing"]["method"], "stopped by a short series of 10 pairs (another case of this slot "
                                                   "did not pass")) << failed["timing"]["method"];
  const json& passed = case_of(r.results, "sp.float32.n3000.real")["timing"];
  ASSERT_TRUE(passed.is_object());
  EXPECT_TRUE(contains(passed["method"], "stopped by the interval rule")) << passed["method"];
  EXPECT_EQ(r.results["slots"]["hierarchical"]["perf_points"], 0);
}

TEST_F(Judge, ABenchmarkVariationIsAppliedAndNamed) {
  // SCANGRADE_BENCH_TIMING (benchmark-only): exactly 23 pairs instead of the interval rule's 10
  ::setenv("SCANGRADE_BENCH_TIMING", "fixed_reps=23", 1);
  const Result r = judge(worker("--mode ok --ratio 0.625"), "--sanitizer off", "gpu");
  ::unsetenv("SCANGRADE_BENCH_TIMING");
  ASSERT_TRUE(r.written) << r.err;
  const json& t = case_of(r.results, "hier.int32.n5000.excl")["timing"];
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["reps"], 23);
  EXPECT_TRUE(contains(t["method"], "stopped by its fixed number of pairs")) << t["method"];
  EXPECT_TRUE(contains(t["method"], "BENCHMARK VARIATION (SCANGRADE_BENCH_TIMING, not a grading configuration): "
                                    "exactly 23 pairs")) << t["method"];
  // a term the grader does not know: nothing is timed rather than something else
  ::setenv("SCANGRADE_BENCH_TIMING", "turbo", 1);
  const Result bad = judge(worker("--mode ok --ratio 0.625"), "--sanitizer off", "gpu");
  ::unsetenv("SCANGRADE_BENCH_TIMING");
  ASSERT_TRUE(bad.written) << bad.err;
  EXPECT_TRUE(case_of(bad.results, "hier.int32.n5000.excl")["timing"].is_null());
  EXPECT_TRUE(contains(bad.results["errors"].dump(), "unknown term 'turbo'")) << bad.results["errors"];
}

TEST_F(Judge, APairedReferenceSlowerThanAloneCountsAtMostTheCap) {
  // the reference timed alone takes 10 ms, its paired calls 30 ms (as if the submission left work
  // running on the GPU to slow them): each counts as 11 ms, so the ratio is 11 / 16, not 30 / 16
  // (16 ms reported: above the judge's bound, see GpuBackendTimesPerfCasesAndScoresPerformance)
  const std::string checker = dir_ + "/slow-pairs-checker.sh";
  write_text(checker, "#!/bin/sh\nexec " + quote(kFakeChecker) + " --reference 10 --paired-reference 30 \"$@\"\n");
  chmod(checker.c_str(), 0755);
  const Result r = judge(worker("--mode ok --ratio 0.0625"), "--sanitizer off --checker " + quote(checker), "gpu");
  ASSERT_TRUE(r.written) << r.err;
  const json& t = case_of(r.results, "hier.int32.n5000.excl")["timing"];
  ASSERT_TRUE(t.is_object());
  EXPECT_DOUBLE_EQ(t["ratio_to_reference"].get<double>(), 11.0 / 16.0);
  EXPECT_DOUBLE_EQ(t["reference_ms"].get<double>(), 11.0);
  EXPECT_TRUE(contains(t["method"], "10 of 10 paired reference times were above it")) << t["method"];
}

TEST_F(Judge, TimesBelowTheJudgesClockAreReplacedByIt) {
  // the worker's process reports 1 us for calls the judge sees take 20 ms
  const Result r = judge(worker("--mode lying_times"), "--sanitizer off", "gpu");
  ASSERT_TRUE(r.written) << r.err;
  for (const char* id : {"hier.int32.n5000.excl", "sp.float32.n3000.real"}) {
    const json& c = case_of(r.results, id);
    ASSERT_TRUE(c["timing"].is_object()) << id << ": " << c["message"];
    EXPECT_GT(c["timing"]["median_ms"].get<double>(), 15.0) << id;
    EXPECT_TRUE(contains(c["timing"]["method"], "the judge's clock")) << c["timing"]["method"];
  }
  EXPECT_LT(r.results["slots"]["hierarchical"]["perf_points"].get<double>(), 1e-9);  // 20x slower than 1 ms
}

TEST_F(Judge, ForgedTimesCountNoLessThanTheJudgesBound) {
  // the worker's calls take 200 ms and it reports 0.75x and 0.5x of that (a process that rewrites its
  // clock); the judge's clock less the overhead of the worker path (calibrated with an honest worker
  // in the reference's role) bounds every call. The reference takes 5 ms (the fair share allows these
  // calls their whole series). The bound is checked against the overhead the judge measured, so that
  // a loaded machine (a larger overhead, a lower bound) does not fail the test; a machine so loaded
  // that the bound cannot rise above the forged 150 ms skips it.
  for (const double scale : {0.75, 0.5}) {
    const Result r = judge(worker("--mode ok --sleep-ms 200 --report-scale " + std::to_string(scale)),
                           "--sanitizer off --checker " + quote(checker_with_reference(dir_, "5")), "gpu");
    ASSERT_TRUE(r.written) << r.err;
    expect_valid(r.results, dir_);
    for (const char* id : {"hier.int32.n5000.excl", "sp.float32.n3000.real"}) {
      const json& c = case_of(r.results, id);
      EXPECT_EQ(c["status"], "pass") << id << ": " << c["message"];
      const json& t = c["timing"];
      ASSERT_TRUE(t.is_object()) << id;
      const double overhead = t["judge_overhead_ms"].get<double>();
      if (overhead > 40.0) GTEST_SKIP() << "the worker path's overhead is " << overhead << " ms: machine too loaded";
      const double median = t["median_ms"].get<double>();
      EXPECT_GT(median, 0.98 * 200.0 - overhead - 1.0) << scale << " " << id << ": " << t["method"];
      EXPECT_GT(median, 200.0 * scale + 5.0) << scale << " " << id;
      EXPECT_LT(median, 260.0) << scale << " " << id;
      EXPECT_LT(t["ratio_to_reference"].get<double>(), 5.0 / (200.0 * scale + 5.0)) << scale << " " << id;
      EXPECT_FALSE(t.contains("stopped")) << t;
      EXPECT_EQ(t["clock"], "judge") << t["method"];
      EXPECT_EQ(t["raised_to_bound"], t["reps"]) << t["method"];
      EXPECT_TRUE(contains(t["method"], "the reference solution run as a student")) << t["method"];
      EXPECT_TRUE(contains(t["method"], "the median reported time was below the median bound")) << t["method"];
    }
  }
}

TEST_F(Judge, AnHonestClockIsNotRaisedToTheBound) {
  // 40 ms calls reported as they are: the times stand (a call is raised only by what its own round
  // trip exceeds the calibrated overhead: on a loaded machine some are, by a little)
  const Result r = judge(worker("--mode ok --sleep-ms 40 --report-scale 1"), "--sanitizer off", "gpu");
  ASSERT_TRUE(r.written) << r.err;
  const json& t = case_of(r.results, "hier.int32.n5000.excl")["timing"];
  ASSERT_TRUE(t.is_object());
  EXPECT_GT(t["median_ms"].get<double>(), 39.0) << t["method"];
  EXPECT_LT(t["median_ms"].get<double>(), 44.0) << t["method"];
}

TEST_F(Judge, WithoutTheReferenceWorkerTheSubmissionsEmptyCallsCalibrate) {
  const Result r = judge(worker("--mode ok --ratio 0.625"), "--sanitizer off --reference-worker none", "gpu");
  ASSERT_TRUE(r.written) << r.err;
  const json& t = case_of(r.results, "hier.int32.n5000.excl")["timing"];
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["ratio_to_reference"], 0.625);
  EXPECT_EQ(t["clock"], "events");
  EXPECT_TRUE(contains(t["method"], "empty calls of the submission's own process (--reference-worker none"))
      << t["method"];
}

TEST_F(Judge, AHopelesslySlowCaseIsTimedNoLongerThanItsAllowance) {
  // every timed call takes 150 ms against a reference of 0.2 ms: the counted calls may take 200 calls
  // at 5x the reference, 0.2 s, so each series stops after 3 warm-up and 2 counted calls (without the
  // fair share: until its 4 s budget)
  const Result r = judge(worker("--mode ok --sleep-ms 150 --report-scale 1"),
                         "--sanitizer off --checker " + quote(checker_with_reference(dir_, "0.2")), "gpu");
  ASSERT_TRUE(r.written) << r.err;
  expect_valid(r.results, dir_);
  expect_others_pass(r.results, {});
  for (const char* id : {"hier.int32.n5000.excl", "sp.float32.n3000.real"}) {
    const json& t = case_of(r.results, id)["timing"];
    ASSERT_TRUE(t.is_object()) << id;
    EXPECT_EQ(t["reps"], 2) << t["method"];
    EXPECT_TRUE(contains(t["stopped"], "timing stopped after 5 calls")) << t;
    EXPECT_TRUE(contains(t["stopped"], "timed no further")) << t;
    EXPECT_TRUE(contains(t["method"], "stopped by the GPU's fair share")) << t["method"];
    EXPECT_LT(t["ratio_to_reference"].get<double>(), 0.2 / 140);  // measured, as slow code gets
  }
  EXPECT_EQ(r.results["slots"]["hierarchical"]["perf_points"], 0);
  EXPECT_FALSE(r.results["slots"]["hierarchical"].contains("timing_stopped"));  // every perf case timed
  EXPECT_LT(r.results["phases"]["timing_s"].get<double>(), 3.5);
}

TEST_F(Judge, ASlotThatHoldsTheGpuIsCutAtItsBudgetAndTheOtherSlotsAreTimed) {
  // four timed hierarchical cases whose calls each take 2.5 s (only timed calls: every case passes),
  // a reference of 0.2 ms: the slot's budget is 1 s + 203 calls at 5x 0.2 ms = 1.203 s, so the first
  // call is cut at 1.453 s and the slot's other cases are not timed (without the fair share: 16 calls,
  // 40 s of the GPU to this judge alone); the single-pass slot is timed as usual
  write_text(suite_, R"({"suite": "holds", "version": 1,
   "performance": {"points": {"hierarchical": 4, "single_pass": 2}},
   "cases": [
    {"id": "hier.a", "slot": "hierarchical", "dtype": "int32", "kind": "inclusive", "n": 5000, "values": "random", "seed": 1, "why": "a", "perf": true},
    {"id": "hier.b", "slot": "hierarchical", "dtype": "int32", "kind": "exclusive", "n": 5001, "values": "random", "seed": 2, "why": "b", "perf": true},
    {"id": "hier.c", "slot": "hierarchical", "dtype": "float32", "kind": "inclusive", "n": 5002, "values": "random", "seed": 3, "why": "c", "perf": true},
    {"id": "hier.d", "slot": "hierarchical", "dtype": "int32", "kind": "inclusive", "n": 5003, "values": "random", "seed": 4, "why": "d", "perf": true},
    {"id": "sp.a", "slot": "single_pass", "dtype": "int32", "kind": "inclusive", "n": 3000, "values": "random", "seed": 5, "why": "e", "perf": true}]})");
  const Result r = judge(worker("--mode ok --sleep-ms 2500 --slow-slot hierarchical --report-scale 1"),
                         "--sanitizer off --checker " + quote(checker_with_reference(dir_, "0.2")), "gpu");
  ASSERT_TRUE(r.written) << r.err;
  expect_valid(r.results, dir_);
  expect_others_pass(r.results, {});  // every correctness point
  const json& first = case_of(r.results, "hier.a")["timing"];
  ASSERT_TRUE(first.is_object());
  EXPECT_TRUE(contains(first["stopped"], "timing stopped: call 1 of case hier.a ran past the slot's timing budget "
                                         "(1.203 s")) << first;
  EXPECT_GT(first["median_ms"].get<double>(), 1400.0);  // at least until the cut
  for (const char* id : {"hier.b", "hier.c", "hier.d"}) EXPECT_TRUE(case_of(r.results, id)["timing"].is_null()) << id;
  const json& slot = r.results["slots"]["hierarchical"];
  EXPECT_TRUE(contains(slot["timing_stopped"], "and was cut (its process killed)")) << slot;
  EXPECT_EQ(slot["perf_points"], 0);
  EXPECT_EQ(slot["points"], slot["max_points"]);
  EXPECT_TRUE(case_of(r.results, "sp.a")["timing"].is_object());
  EXPECT_GT(r.results["slots"]["single_pass"]["perf_points"].get<double>(), 0.0);
  EXPECT_FALSE(r.results["slots"]["single_pass"].contains("timing_stopped"));
  EXPECT_LT(r.results["phases"]["timing_s"].get<double>(), 4.0);
  expect_no_process_left();
}

TEST_F(Judge, PerformancePointsNeedEveryCaseOfTheSlot) {
  // command 3 is the hierarchical case's check: it crashes, so its perf points are 0 (max still counted)
  const Result r = judge(worker("--mode crash_on=3"), "--sanitizer off", "gpu");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.results["slots"]["hierarchical"]["perf_points"], 0);
  EXPECT_EQ(r.results["slots"]["hierarchical"]["perf_max_points"], 4);
  EXPECT_TRUE(r.results["slots"]["hierarchical"]["perf_ratio"].is_null());
  EXPECT_DOUBLE_EQ(r.results["slots"]["single_pass"]["perf_points"].get<double>(), 2.0);
  EXPECT_TRUE(contains(r.results["sanitizer_pass"]["reason"], "--sanitizer off"));
}

TEST_F(Judge, SanitizerFindingsTurnAPassIntoARace) {
  // compute-sanitizer stand-in: runs the worker, reports one race
  const std::string fake_cs = fake_sanitizer("\"$@\"\n" + race_report("scan_tile", "single_pass.cu", 42));
  const Result r = judge(worker("--mode ok"), "--compute-sanitizer " + quote(fake_cs), "gpu");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  const json& c = case_of(r.results, "sp.float32.n3000.real");
  EXPECT_EQ(c["status"], "race");
  EXPECT_EQ(c["points"], 0);
  EXPECT_TRUE(contains(c["message"], "kernel scan_tile at single_pass.cu:42")) << c["message"];
  EXPECT_EQ(c["sanitizer"]["ran"], true);
  ASSERT_EQ(c["sanitizer"]["findings"].size(), 1u);
  EXPECT_EQ(c["sanitizer"]["findings"][0]["line"], 42);
  EXPECT_EQ(r.results["sanitizer_pass"]["ran"], true);
  EXPECT_EQ(r.results["sanitizer_pass"]["cases"], 1);
  EXPECT_EQ(r.results["environment"]["compute_sanitizer"], "2099.1.0 fake");
  // a race costs the slot its performance points
  EXPECT_EQ(r.results["slots"]["single_pass"]["perf_points"], 0);
  expect_no_process_left();
}

TEST_F(Judge, SanitizerRunsOneProcessPerToolAndBlamesTheRightCase) {
  // 3 cases ask for racecheck, 2 for memcheck. The stand-in compute-sanitizer logs each start and
  // reports a race only when the worker it runs was given the case with n = 3001.
  write_text(suite_, R"({"suite": "san", "version": 1, "cases": [
    {"id": "hs.n1000", "slot": "hillis_steele", "dtype": "int32", "kind": "inclusive", "n": 1000,
     "values": "random", "seed": 1, "why": "a", "sanitize": ["racecheck", "memcheck"]},
    {"id": "hs.n1001", "slot": "hillis_steele", "dtype": "int32", "kind": "inclusive", "n": 1001,
     "values": "random", "seed": 2, "why": "b", "sanitize": ["racecheck"]},
    {"id": "sp.n3001", "slot": "single_pass", "dtype": "int32", "kind": "inclusive", "n": 3001,
     "values": "random", "seed": 3, "why": "c", "sanitize": ["racecheck", "memcheck"]},
    {"id": "sp.n3002", "slot": "single_pass", "dtype": "int32", "kind": "inclusive", "n": 3002,
     "values": "random", "seed": 4, "why": "d"}]})");
  const std::string fake_cs = fake_sanitizer(R"SH(cmds="$save.cmds"
tee "$cmds" | "$@"
echo "$tool $(grep -c '"mode":"check"' "$cmds")" >> "$(dirname "$0")/cs.log"
if [ "$tool" = racecheck ] && grep -q '"n":3001' "$cmds"; then
)SH" + race_report("look_back", "single_pass.cu", 7) + R"SH(fi
echo '<?xml version="1.0"?><ComputeSanitizerOutput></ComputeSanitizerOutput>' > "$save"
exit 0
)SH");
  const Result r = judge(worker("--mode ok"), "--compute-sanitizer " + quote(fake_cs), "gpu");
  ASSERT_TRUE(r.written) << r.err;
  expect_valid(r.results, dir_);
  // racecheck: once over its 3 cases, which found the race, then once per case to place it;
  // memcheck: once over its 2 cases, clean
  EXPECT_EQ(read_file(dir_ + "/cs.log").value_or(""), "racecheck 3\nracecheck 1\nracecheck 1\nracecheck 1\nmemcheck 2\n");
  EXPECT_EQ(r.results["sanitizer_pass"]["processes"], 5);
  EXPECT_EQ(r.results["sanitizer_pass"]["cases"], 3);
  const json& racy = case_of(r.results, "sp.n3001");
  EXPECT_EQ(racy["status"], "race");
  EXPECT_TRUE(contains(racy["message"], "kernel look_back at single_pass.cu:7")) << racy["message"];
  ASSERT_EQ(racy["sanitizer"]["findings"].size(), 1u);
  for (const char* id : {"hs.n1000", "hs.n1001"}) {
    const json& c = case_of(r.results, id);
    EXPECT_EQ(c["status"], "pass") << id << ": " << c["message"];
    EXPECT_EQ(c["sanitizer"]["ran"], true) << id;
    EXPECT_TRUE(c["sanitizer"]["findings"].empty()) << id;
  }
  EXPECT_TRUE(contains(case_of(r.results, "hs.n1000")["sanitizer"]["reason"], "memcheck: one process over every case"))
      << case_of(r.results, "hs.n1000")["sanitizer"]["reason"];
  EXPECT_TRUE(case_of(r.results, "sp.n3002")["sanitizer"].is_null());
  expect_no_process_left();
}

TEST_F(Judge, EveryToolsProcessStartsBeforeTheFirstToolRuns) {
  // the stand-in racecheck waits (up to 10 s) for memcheck's process to have started before it runs
  // its cases: it sees it only when the judge started both ahead (their CUDA contexts come up together)
  write_text(suite_, R"({"suite": "san", "version": 1, "cases": [
    {"id": "hs.n1000", "slot": "hillis_steele", "dtype": "int32", "kind": "inclusive", "n": 1000,
     "values": "random", "seed": 1, "why": "a", "sanitize": ["racecheck", "memcheck"]}]})");
  const std::string fake_cs = fake_sanitizer(R"SH(here="$(dirname "$0")"
touch "$here/started-$tool"
if [ "$tool" = racecheck ]; then
  i=0
  while [ ! -e "$here/started-memcheck" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  [ -e "$here/started-memcheck" ] && echo "memcheck started before racecheck ran" >> "$here/cs.log"
fi
"$@"
echo '<?xml version="1.0"?><ComputeSanitizerOutput></ComputeSanitizerOutput>' > "$save"
exit 0
)SH");
  const Result r = judge(worker("--mode ok"), "--compute-sanitizer " + quote(fake_cs), "gpu");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(read_file(dir_ + "/cs.log").value_or(""), "memcheck started before racecheck ran\n");
  EXPECT_EQ(r.results["sanitizer_pass"]["processes"], 2);
  EXPECT_EQ(case_of(r.results, "hs.n1000")["status"], "pass");
  EXPECT_EQ(case_of(r.results, "hs.n1000")["sanitizer"]["ran"], true);
  expect_no_process_left();
}

}  // namespace
TEST_F(Judge, AWorkerThePolicyMonitorCannotWatchIsNotGraded) {
  // on the GPU the run-time policy watches every checked call: a worker whose monitor is off (another
  // subscriber came first, or the worker says so) fails closed, every case a crash, nothing passes
  const Result r = judge(worker("--mode ok --monitor-off 'CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED'"),
                         "--sanitizer off", "gpu");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1) << r.err;
  expect_valid(r.results, dir_);
  for (const json& c : r.results["cases"]) {
    EXPECT_EQ(c["status"], "crash") << c["id"];
    EXPECT_TRUE(contains(c["message"], "policy monitor could not watch")) << c["message"];
  }
  EXPECT_EQ(r.results["score"]["points"], 0);
}

}  // namespace scangrade::grader
