// scangrade_judge as a subprocess, driving the fake worker (fake_worker.cpp) that misbehaves on
// purpose: every misbehaving case gets its crash/timeout with its message, every other case is still
// graded, the results validate, the exit codes are right and no process is left behind.
#include "judge_fixture.h"

namespace scangrade::grader {
namespace {

TEST_F(Judge, HappyPathGradesEveryCase) {
  const Result r = judge(worker("--mode ok"), "");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 0) << r.err;
  expect_valid(r.results, dir_);
  expect_others_pass(r.results, {});
  EXPECT_EQ(r.results["outcome"], "graded");
  EXPECT_EQ(r.results["exit_code"], 0);
  EXPECT_EQ(r.results["environment"]["device"], "fake CPU worker");
  EXPECT_TRUE(r.results["environment"]["driver"].is_null());
  EXPECT_EQ(r.results["score"]["points"], 5);
  EXPECT_EQ(r.results["score"]["max_points"], 5);
  // emulate: no timing, no performance points, but their maximum still counts
  EXPECT_EQ(r.results["score"]["perf_points"], 0);
  EXPECT_EQ(r.results["score"]["perf_max_points"], 6);
  EXPECT_TRUE(case_of(r.results, "hier.int32.n5000.excl")["timing"].is_null());
  EXPECT_EQ(r.results["sanitizer_pass"]["ran"], false);
  EXPECT_TRUE(contains(r.results["sanitizer_pass"]["reason"], "emulation backend"));
  const json& san = case_of(r.results, "sp.float32.n3000.real")["sanitizer"];
  EXPECT_EQ(san["ran"], false);
  EXPECT_EQ(san["tools"], json::array({"racecheck"}));
  EXPECT_TRUE(san["findings"].empty());
  EXPECT_TRUE(case_of(r.results, "hs.int32.n10")["sanitizer"].is_null());
  EXPECT_EQ(r.results["suites"][0]["sha256"], sha256_of_file(suite_));
  EXPECT_EQ(r.results["suites"][0]["secret_mixed"], false);
  EXPECT_EQ(r.results["slots"]["blelloch"]["statuses"]["pass"], 1);
  expect_no_process_left();
}

TEST_F(Judge, CrashIsChargedToItsCaseOnly) {
  const Result r = judge(worker("--mode crash_on=2"), "");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  const json& c = case_of(r.results, "bl.float32.n100");
  EXPECT_EQ(c["status"], "crash");
  EXPECT_TRUE(contains(c["message"], "worker died: signal 11 (SIGSEGV)")) << c["message"];
  EXPECT_TRUE(contains(c["message"], "about to crash on command 2")) << c["message"];  // the log's tail
  EXPECT_EQ(c["points"], 0);
  expect_others_pass(r.results, {"bl.float32.n100"});
  expect_no_process_left();
}

TEST_F(Judge, HangIsKilledAtTheDeadline) {
  // emulate default deadline 20 s + 3 us n, times 0.05: about 1 s
  const Result r = judge(worker("--mode hang_on=3"), "--timeout-scale 0.05");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  const json& c = case_of(r.results, "hier.int32.n5000.excl");
  EXPECT_EQ(c["status"], "timeout");
  EXPECT_TRUE(contains(c["message"], "no reply within")) << c["message"];
  // the hierarchical slot's likely causes, not the single-pass slot's waiting for a flag
  EXPECT_TRUE(contains(c["message"], "a loop over the levels whose size never shrinks")) << c["message"];
  EXPECT_FALSE(contains(c["message"], "flag")) << c["message"];
  expect_others_pass(r.results, {"hier.int32.n5000.excl"});
  EXPECT_LT(r.seconds, 15);
  expect_no_process_left();
}

TEST_F(Judge, WrongNonceFailsClosed) {
  const Result r = judge(worker("--mode lie_nonce=2"), "");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  const json& c = case_of(r.results, "bl.float32.n100");
  EXPECT_EQ(c["status"], "crash");
  EXPECT_TRUE(contains(c["message"], "incomplete or garbled")) << c["message"];
  expect_others_pass(r.results, {"bl.float32.n100"});
  expect_no_process_left();
}

TEST_F(Judge, AHarnessErrorInTheWorkerIsTheSubmissionsNotAHarnessFault) {
  // the worker's process is the submission's: what the grader's code in it reports is charged to the
  // case (a crash), the grade is complete (exit 1, not 3), nothing is called a harness fault
  const Result r = judge(worker("--mode harness_error_on=1"), "");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1) << r.err;
  expect_valid(r.results, dir_);
  EXPECT_EQ(r.results["outcome"], "graded");
  const json& c = case_of(r.results, "hs.int32.n10");
  EXPECT_EQ(c["status"], "crash");
  EXPECT_TRUE(contains(c["message"], "the case buffers did not arrive")) << c["message"];
  EXPECT_FALSE(contains(c["message"], "please report")) << c["message"];
  expect_others_pass(r.results, {"hs.int32.n10"});
  expect_no_process_left();
}

TEST_F(Judge, AProcessBrokenByAnotherSlotIsNotChargedToTheNextSlot) {
  // after a hillis_steele case the fake's harness cannot run any other slot's case: each of those
  // runs again in a fresh process (where it passes), so no slot pays for another slot's code
  const Result r = judge(worker("--mode breaks_after=hillis_steele"), "");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 0) << r.err;
  expect_valid(r.results, dir_);
  expect_others_pass(r.results, {});
  expect_no_process_left();
}

TEST_F(Judge, UnknownStageLineFailsClosed) {
  const Result r = judge(worker("--mode bad_stage=3 --stage"), "");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  const json& c = case_of(r.results, "hier.int32.n5000.excl");
  EXPECT_EQ(c["status"], "crash");
  EXPECT_TRUE(contains(c["message"], "an unexpected stage line")) << c["message"];
  expect_others_pass(r.results, {"hier.int32.n5000.excl"});  // the others said "ran" first: fine
  expect_no_process_left();
}

TEST_F(Judge, AnUnwrittenElementIsReadFromTheTrustedBuffers) {
  // the worker says nothing about its output: the judge reads the buffers it owns, where the last
  // element still holds the poison
  const Result r = judge(worker("--mode short_output=4"), "");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  const json& c = case_of(r.results, "sp.float32.n3000.real");
  EXPECT_EQ(c["status"], "fail");
  EXPECT_TRUE(contains(c["message"], "2999")) << c["message"];
  expect_others_pass(r.results, {"sp.float32.n3000.real"});
  expect_no_process_left();
}

TEST_F(Judge, StudentOutputIsNeverParsed) {
  const Result r = judge(worker("--mode garbage_stdout"), "--log-limit 40");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 0);
  expect_valid(r.results, dir_);
  expect_others_pass(r.results, {});
  EXPECT_EQ(r.results["score"]["points"], 5);  // not the 1000 it printed
  EXPECT_TRUE(contains(r.results["student_output"]["text"], "PASS all cases"));
  // its first and last 20 bytes, and a line saying how much was left out between them
  const std::string text = r.results["student_output"]["text"];
  EXPECT_TRUE(contains(text, " bytes left out ...]")) << text;
  EXPECT_LE(text.size(), 40u + 40u) << text;
  EXPECT_EQ(r.results["student_output"]["truncated"], true);
  expect_no_process_left();
}

TEST_F(Judge, NoHelloIsACrashForEveryCaseAndNothingIsLeftRunning) {
  const Result r = judge(worker("--mode no_hello"), "--timeout-scale 0.02");  // hello deadline 60 s x 0.02
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  for (const json& c : r.results["cases"]) {
    EXPECT_EQ(c["status"], "crash") << c["id"];
    EXPECT_TRUE(contains(c["message"], "no hello within")) << c["message"];
  }
  EXPECT_LT(r.seconds, 15);
  expect_no_process_left();
}

TEST_F(Judge, EarlyExitIsACrashWithTheExitCode) {
  const Result r = judge(worker("--mode exit_early=2"), "");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  const json& c = case_of(r.results, "bl.float32.n100");
  EXPECT_EQ(c["status"], "crash");
  EXPECT_TRUE(contains(c["message"], "worker died: exit code 0")) << c["message"];
  expect_others_pass(r.results, {"bl.float32.n100"});
  expect_no_process_left();
}

TEST_F(Judge, BudgetIsSharedOutSoAHangCostsOnlyItsOwnSlot) {
  // the first case hangs: it times out at its slot's share of the 1.5 s, every other slot still passes
  const Result r = judge(worker("--mode hang_on=1"), "--budget-s 1.5");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  const json& c = case_of(r.results, "hs.int32.n10");
  EXPECT_EQ(c["status"], "timeout");
  EXPECT_TRUE(contains(c["message"], "slot time budget exhausted")) << c["message"];
  expect_others_pass(r.results, {"hs.int32.n10"});
  EXPECT_LT(r.seconds, 10);
  expect_no_process_left();
}

TEST_F(Judge, AHangingBonusSlotCostsTheOtherSlotsNothing) {
  // single_pass spins on every case and comes first; the slots after it keep full marks, and after
  // three timeouts in a row its remaining cases are not run
  std::string cases;
  for (int i = 0; i < 5; ++i)
    cases += R"({"id": "sp.int32.n)" + std::to_string(4000 + i) + R"(", "slot": "single_pass", "dtype": "int32",
      "kind": "inclusive", "n": )" + std::to_string(4000 + i) + R"(, "values": "random", "seed": 9, "why": "spins",
      "timeout_s": 0.5},)";
  write_text(suite_, R"({"suite": "hangs", "version": 1, "cases": [)" + cases + R"(
    {"id": "hs.int32.n10", "slot": "hillis_steele", "dtype": "int32", "kind": "inclusive", "n": 10,
     "values": "random", "seed": 1, "why": "small"},
    {"id": "bl.float32.n100", "slot": "blelloch", "dtype": "float32", "kind": "exclusive", "n": 100,
     "values": "random", "seed": 2, "why": "small"},
    {"id": "hier.int32.n5000.excl", "slot": "hierarchical", "dtype": "int32", "kind": "exclusive", "n": 5000,
     "values": "random", "seed": 3, "why": "multi-block"}]})");
  const Result r = judge(worker("--mode hang_slot=single_pass"), "--budget-s 100");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  for (int i = 0; i < 5; ++i) {
    const json& c = case_of(r.results, "sp.int32.n" + std::to_string(4000 + i));
    EXPECT_EQ(c["status"], "timeout");
    EXPECT_TRUE(contains(c["message"], i < 3 ? "no reply within" : "not run: the 3 previous cases of this slot timed out"))
        << c["message"];
  }
  for (const char* slot : {"hillis_steele", "blelloch", "hierarchical"})
    EXPECT_EQ(r.results["slots"][slot]["points"], r.results["slots"][slot]["max_points"]) << slot;
  EXPECT_LT(r.seconds, 15);  // three deadlines, not five
  expect_no_process_left();
}

TEST_F(Judge, CrashesInARowSkipOnlyTheCasesThatWouldCrashTheSameWay) {
  // hierarchical crashes for n <= 2048 and passed a larger case first: after 5 crashes in a row
  // its other int32 cases up to the largest crashed n are not run; a float32 case, and a larger
  // int32 case, still run
  std::string cases;
  const auto add = [&](const std::string& dtype, int n) {
    cases += R"({"id": "h.)" + dtype + ".n" + std::to_string(n) + R"(", "slot": "hierarchical", "dtype": ")" + dtype +
             R"(", "kind": "inclusive", "n": )" + std::to_string(n) + R"(, "values": "random", "seed": 9, "why": "x"},)";
  };
  add("int32", 6000);
  for (int n = 110; n >= 104; --n) add("int32", n);
  add("float32", 100);
  add("int32", 5000);
  add("int32", 103);
  cases.pop_back();
  write_text(suite_, R"({"suite": "crashes", "version": 1, "cases": [)" + cases + "]}");
  const Result r = judge(worker("--mode crash_small=hierarchical"), "");
  ASSERT_TRUE(r.written) << r.err;
  expect_valid(r.results, dir_);
  EXPECT_EQ(case_of(r.results, "h.int32.n6000")["status"], "pass");
  for (int n = 110; n >= 104; --n) {
    const json& c = case_of(r.results, "h.int32.n" + std::to_string(n));
    EXPECT_EQ(c["status"], "crash");
    EXPECT_EQ(contains(c["message"], "not run: the"), n <= 105) << n << ": " << c["message"];
    if (n == 105) {
      EXPECT_TRUE(contains(c["message"], "cases up to n = 110 are not run")) << c["message"];
    }
  }
  EXPECT_TRUE(contains(case_of(r.results, "h.float32.n100")["message"], "worker died"));  // ran
  EXPECT_EQ(case_of(r.results, "h.int32.n5000")["status"], "pass");
  // the pass ended the streak: a smaller case runs again
  EXPECT_TRUE(contains(case_of(r.results, "h.int32.n103")["message"], "worker died"));
  expect_no_process_left();
}

TEST_F(Judge, CrashesOnLargeNSkipOnlyLargerCases) {
  // a size limit: hierarchical crashes for n > 2048 after passing n = 100. After 5 crashes in a row
  // its larger int32 cases are not run, but smaller ones still are (and pass)
  std::string cases;
  const auto add = [&](int n) {
    cases += R"({"id": "h.n)" + std::to_string(n) + R"(", "slot": "hierarchical", "dtype": "int32", "kind": "inclusive", )"
             R"("n": )" + std::to_string(n) + R"(, "values": "random", "seed": 9, "why": "x"},)";
  };
  for (int n : {100, 3000, 3001, 3002, 3003, 3004, 5000, 1000}) add(n);
  cases.pop_back();
  write_text(suite_, R"({"suite": "crashes", "version": 1, "cases": [)" + cases + "]}");
  const Result r = judge(worker("--mode crash_large=hierarchical"), "");
  ASSERT_TRUE(r.written) << r.err;
  expect_valid(r.results, dir_);
  for (int n : {3000, 3001, 3002, 3003, 3004})
    EXPECT_TRUE(contains(case_of(r.results, "h.n" + std::to_string(n))["message"], "worker died")) << n;
  const json& skipped = case_of(r.results, "h.n5000");
  EXPECT_EQ(skipped["status"], "crash");
  EXPECT_TRUE(contains(skipped["message"], "cases from n = 3000 on are not run")) << skipped["message"];
  EXPECT_EQ(case_of(r.results, "h.n1000")["status"], "pass") << case_of(r.results, "h.n1000")["message"];
  expect_no_process_left();
}

TEST_F(Judge, PolicyViolationStillShowsEveryCaseCorrectness) {
  // a run-time finding on the cases with n > 2048 (zero_slot, the default): the slot scores 0, but every
  // case of it still runs and its message ends with what the correctness check found
  std::string cases;
  for (int n : {100, 3000, 5000, 1000})
    cases += R"({"id": "h.n)" + std::to_string(n) + R"(", "slot": "hierarchical", "dtype": "int32", "kind": "inclusive", )"
             R"("n": )" + std::to_string(n) + R"(, "values": "random", "seed": 9, "why": "x"},)";
  cases.pop_back();
  write_text(suite_, R"({"suite": "policy", "version": 1, "cases": [)" + cases + "]}");
  const Result r = judge(worker("--mode host_copy_large=hierarchical"), "");
  ASSERT_TRUE(r.written) << r.err;
  expect_valid(r.results, dir_);
  for (int n : {100, 3000, 5000, 1000}) {
    const json& c = case_of(r.results, "h.n" + std::to_string(n));
    EXPECT_EQ(c["status"], "policy_violation") << n;
    const std::string message = c["message"];
    EXPECT_TRUE(contains(message, "breaks a rule of the assignment (host_compute)")) << message;
    EXPECT_TRUE(contains(message, "\n  correctness (not scored): pass")) << message;
    EXPECT_FALSE(contains(message, "not run")) << message;
  }
  EXPECT_TRUE(contains(case_of(r.results, "h.n1000")["message"], "not counted")) << "ran after the finding, none of its own";
  expect_no_process_left();
}

TEST_F(Judge, LaunchRuleIsJudgedPerCall) {
  // a one-block slot whose scan spills into a second block above n = 2048: the call that launched two
  // blocks and passed scores 0; the one whose values are wrong keeps `fail` with a note; the calls
  // that kept to one block keep their points (no zeroed slot)
  std::string cases;
  for (int n : {100, 3000, 5000, 1000})
    cases += R"({"id": "h.n)" + std::to_string(n) + R"(", "slot": "hierarchical", "dtype": "int32", "kind": "inclusive", )"
             R"("n": )" + std::to_string(n) + R"(, "values": "random", "seed": 9, "why": "x"},)";
  cases.pop_back();
  write_text(suite_, R"({"suite": "launch", "version": 1, "cases": [)" + cases + "]}");
  const Result r = judge(worker("--mode two_blocks_large=hierarchical"), "");
  ASSERT_TRUE(r.written) << r.err;
  expect_valid(r.results, dir_);
  EXPECT_EQ(case_of(r.results, "h.n100")["status"], "pass");
  EXPECT_EQ(case_of(r.results, "h.n1000")["status"], "pass") << case_of(r.results, "h.n1000")["message"];
  const json& spilled = case_of(r.results, "h.n3000");
  EXPECT_EQ(spilled["status"], "policy_violation");
  EXPECT_TRUE(contains(spilled["message"], "breaks a rule of the assignment (launch)")) << spilled["message"];
  const json& wrong = case_of(r.results, "h.n5000");
  EXPECT_EQ(wrong["status"], "fail");
  EXPECT_TRUE(contains(wrong["message"], "policy (not scored: this case did not pass anyway)")) << wrong["message"];
  expect_no_process_left();
}

TEST_F(Judge, HiddenSuiteSeedsUseTheSecretWhichIsNeverWritten) {
  const std::string secret = "s3cr3t-instructor-value";
  const auto inputs = [&]() {
    std::map<std::string, std::string> m;
    for (const auto& entry : fs::directory_iterator(dir_ + "/dump"))
      m[entry.path().filename().string()] = read_file(entry.path().string()).value_or("");
    fs::remove_all(dir_ + "/dump");
    fs::create_directory(dir_ + "/dump");
    return m;
  };
  const Result plain = judge(worker("--mode ok"), "");
  ASSERT_EQ(plain.code, 0) << plain.err;
  const auto plain_inputs = inputs();
  const Result hidden = judge(worker("--mode ok"), "--hidden-suite " + quote(suite_) + " --secret " + quote(secret),
                              "emulate", false);
  ASSERT_EQ(hidden.code, 0) << hidden.err;
  const auto hidden_inputs = inputs();
  write_text(dir_ + "/secret.txt", secret + "\n");
  const Result from_file = judge(worker("--mode ok"), "--hidden-suite " + quote(suite_) + " --secret-file " +
                                                          quote(dir_ + "/secret.txt"), "emulate", false);
  ASSERT_EQ(from_file.code, 0) << from_file.err;
  const auto file_inputs = inputs();

  ASSERT_EQ(plain_inputs.size(), 4u);
  ASSERT_EQ(hidden_inputs.size(), 4u);
  for (const auto& [name, data] : plain_inputs) {
    if (data.size() <= 8) continue;
    EXPECT_NE(data, hidden_inputs.at(name)) << name << ": the secret did not change the input";
    EXPECT_EQ(hidden_inputs.at(name), file_inputs.at(name)) << name;
  }
  EXPECT_EQ(hidden.results["suites"][0]["secret_mixed"], true);
  for (const json& c : hidden.results["cases"]) EXPECT_EQ(c["seed"], case_of(plain.results, c["id"])["seed"]);
  const std::string text = hidden.results.dump();
  EXPECT_EQ(text.find(secret), std::string::npos) << "the secret appears in results.json";
  expect_valid(hidden.results, dir_);
}

TEST_F(Judge, BuildFileFailedSlotsAreCompileErrors) {
  write_text(dir_ + "/build.json", R"({"status": "compile_error", "log": "  blelloch.cu(12): error: expected a ';'\n",
    "warnings": 2, "missing_slots": ["single_pass"], "failed_slots": ["blelloch"], "seconds": 1.5})");
  const Result r = judge(worker("--mode ok"), "--build-json " + quote(dir_ + "/build.json"));
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  const json& c = case_of(r.results, "bl.float32.n100");
  EXPECT_EQ(c["status"], "compile_error");
  EXPECT_TRUE(contains(c["message"], "expected a ';'")) << c["message"];
  expect_others_pass(r.results, {"bl.float32.n100"});
  EXPECT_EQ(r.results["build"]["failed_slots"], json::array({"blelloch"}));
  EXPECT_EQ(r.results["build"]["warnings"], 2);
}

TEST_F(Judge, BuildFilePolicyViolationsChargeTheirSlotOnly) {
  write_text(dir_ + "/build.json", R"J({"status": "ok", "log": "",
    "policy_violations": {"blelloch": "it defines cudaMalloc (a CUDA runtime entry point)"}})J");
  const Result r = judge(worker("--mode ok"), "--build-json " + quote(dir_ + "/build.json"));
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  const json& c = case_of(r.results, "bl.float32.n100");
  EXPECT_EQ(c["status"], "policy_violation");
  EXPECT_TRUE(contains(c["message"], "defines cudaMalloc")) << c["message"];
  EXPECT_EQ(c["points"], 0);
  expect_others_pass(r.results, {"bl.float32.n100"});
}

TEST_F(Judge, BuildFilePolicyViolationOfAnUnknownSlotIsBadInput) {
  write_text(dir_ + "/build.json", R"({"status": "ok", "policy_violations": {"bogus": "x"}})");
  const Result r = judge(worker("--mode ok"), "--build-json " + quote(dir_ + "/build.json"));
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "policy_violations")) << r.err;
}

TEST_F(Judge, ChannelsOfJudgesThatAreGoneAreRemoved) {
  const std::string base = dir_ + "/channels";
  fs::create_directories(base + "/scangrade-999999-abcdef");            // a judge killed long ago
  fs::create_directories(base + "/scangrade-1-live");                   // pid 1 is alive: kept
  setenv("SCANGRADE_CHANNEL_DIR", base.c_str(), 1);
  const Result r = judge(worker("--mode ok"), "");
  unsetenv("SCANGRADE_CHANNEL_DIR");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_FALSE(fs::exists(base + "/scangrade-999999-abcdef"));
  EXPECT_TRUE(fs::exists(base + "/scangrade-1-live"));
  for (const auto& entry : fs::directory_iterator(base))  // its own channel is gone too
    EXPECT_EQ(entry.path().filename(), "scangrade-1-live");
}

TEST_F(Judge, LayoutErrorRunsNoWorker) {
  write_text(dir_ + "/build.json", R"({"status": "layout_error", "log": "no student/ folder in the archive"})");
  const Result r = judge("", "--build-json " + quote(dir_ + "/build.json"));
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  for (const json& c : r.results["cases"]) {
    EXPECT_EQ(c["status"], "compile_error");
    EXPECT_TRUE(contains(c["message"], "no student/ folder")) << c["message"];
  }
}

TEST_F(Judge, MalformedSuiteIsBadInput) {
  write_text(dir_ + "/bad.json", R"({"cases": [{"id": "x1", "slot": "hillis_steele"}]})");
  const Result r = judge(worker("--mode ok"), "--suite " + quote(dir_ + "/bad.json"));
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(r.written);
  EXPECT_NE(r.err.find("bad.json: cases[0] (id 'x1')"), std::string::npos) << r.err;
}

TEST_F(Judge, UsageErrorsAreBadInput) {
  EXPECT_EQ(judge(worker("--mode ok"), "--backend cpu").code, 2);
  EXPECT_EQ(judge(worker("--mode ok"), "--frobnicate").code, 2);
  EXPECT_EQ(std::system((quote(kJudge) + " --help > /dev/null").c_str()), 0);
}

TEST_F(Judge, MissingWorkerIsAnInternalError) {
  const Result r = judge(dir_ + "/no-such-worker", "");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 3);
  expect_valid(r.results, dir_);
  EXPECT_EQ(r.results["outcome"], "not_graded");
  EXPECT_EQ(r.results["exit_code"], 3);
  ASSERT_FALSE(r.results["errors"].empty());
  EXPECT_TRUE(contains(r.results["errors"][0], "no-such-worker")) << r.results["errors"];
  for (const json& c : r.results["cases"]) EXPECT_EQ(c["status"], "internal_error");
}

TEST_F(Judge, OnlySlotFiltersCases) {
  const Result r = judge(worker("--mode ok"), "--only-slot blelloch --verbose");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 0);
  ASSERT_EQ(r.results["cases"].size(), 1u);
  EXPECT_EQ(r.results["cases"][0]["slot"], "blelloch");
  EXPECT_NE(r.err.find("[1/1] bl.float32.n100: pass"), std::string::npos) << r.err;
}

TEST_F(Judge, EmulateCapsMaxNAndResultsRecordItAndThePhases) {
  write_text(suite_, R"({"suite": "fake", "version": 1, "cases": [
    {"id": "sp.small", "slot": "single_pass", "dtype": "int32", "kind": "inclusive", "n": 1000,
     "values": "random", "seed": 1, "why": "a"},
    {"id": "sp.cap", "slot": "single_pass", "dtype": "int32", "kind": "inclusive", "n": 4194305,
     "values": "random", "seed": 2, "why": "2048^2 + 1: the emulation cap"},
    {"id": "sp.big", "slot": "single_pass", "dtype": "int32", "kind": "inclusive", "n": 4194306,
     "values": "random", "seed": 3, "why": "one past the emulation cap"}]})");
  Result r = judge(worker("--mode ok"), "");
  ASSERT_TRUE(r.written) << r.err;
  expect_valid(r.results, dir_);
  EXPECT_EQ(r.results["max_n"], 4194305);
  ASSERT_EQ(r.results["cases"].size(), 2u);
  for (const char* key : {"correctness_s", "prepare_s", "timing_s", "lock_wait_s", "sanitizer_s"})
    EXPECT_TRUE(r.results["phases"][key].is_number()) << key;
  EXPECT_GT(r.results["phases"]["correctness_s"].get<double>(), 0.0);
  EXPECT_EQ(r.results["phases"]["timing_s"], 0.0);
  r = judge(worker("--mode ok"), "--max-n 1000");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.results["max_n"], 1000);
  EXPECT_EQ(r.results["cases"].size(), 1u);
  r = judge(worker("--mode ok"), "--only-slot single_pass", "gpu");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_TRUE(r.results["max_n"].is_null());
  EXPECT_EQ(r.results["cases"].size(), 3u);
}

}  // namespace
// --- the sandbox (grading/sandbox/sandbox.h) ---------------------------------------------------------

TEST_F(Judge, SandboxedWorkerGradesAndResultsSayWhatProtectedIt) {
  // the fake worker itself is the --worker: nothing but it and the channel is mounted in the sandbox
  const Result r = judge(kFake, "--sandbox auto");
  ASSERT_TRUE(r.written) << r.err;
  expect_valid(r.results, dir_);
  const json& iso = r.results["isolation"];
  if (!iso["sandboxed"].get<bool>()) GTEST_SKIP() << "bubblewrap cannot sandbox here: " << iso["notes"].dump();
  EXPECT_EQ(r.code, 0) << r.err;
  expect_others_pass(r.results, {});
  EXPECT_EQ(iso["tool"], "bubblewrap");
  EXPECT_TRUE(contains(iso["summary"], "sandbox: bubblewrap")) << iso["summary"];
  if (geteuid() == 0) {
    EXPECT_TRUE(iso["uid_dropped"].get<bool>());
    EXPECT_EQ(iso["uid"], 65534);
  }
}

TEST_F(Judge, SandboxRequireWithoutBubblewrapIsBadInput) {
  const Result r = judge(kFake, "--sandbox require --bwrap /nonexistent/bwrap");
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(r.written);
  EXPECT_TRUE(contains(r.err, "--sandbox require")) << r.err;
  EXPECT_TRUE(contains(r.err, "not installed")) << r.err;
}

TEST_F(Judge, SandboxAutoWithoutBubblewrapSaysSoAndStillGrades) {
  const Result r = judge(kFake, "--sandbox auto --bwrap /nonexistent/bwrap");
  ASSERT_TRUE(r.written) << r.err;
  expect_valid(r.results, dir_);
  EXPECT_FALSE(r.results["isolation"]["sandboxed"].get<bool>());
  EXPECT_TRUE(contains(r.results["isolation"]["summary"], "NONE")) << r.results["isolation"]["summary"];
  EXPECT_EQ(r.code, 0) << r.err;
}

// --- nothing a worker can write is opened by name -------------------------------------------------

TEST_F(Judge, TheStudentLogIsNeverReopenedByItsName) {
  // The worker replaces the file its stdout goes to by a link: to a path that does not exist (the
  // judge, root in a grading container, must not create it), to a file holding a secret (the judge
  // must not read it into the results), and by a hard link to that file. The judge reads the log
  // through the descriptor it created, so neither happens, whatever the sandbox.
  const std::string secret = dir_ + "/secret.txt";
  write_text(secret, "TOPSECRET-8c1f\n");
  setenv("SCANGRADE_CHANNEL_DIR", dir_.c_str(), 1);  // one file system: a hard link can be made
  struct Attack {
    std::string mode, flag, target;
  };
  // crash_on=2: a second worker starts after the link is in place (the log used to be opened then)
  for (const Attack& a : {Attack{"crash_on=2", "--relink-log", dir_ + "/made-by-the-judge"},
                          Attack{"garbage_stdout", "--relink-log", secret},
                          Attack{"garbage_stdout", "--hardlink-log", secret}}) {
    SCOPED_TRACE(a.mode + " " + a.flag + " " + a.target);
    const Result r = judge(worker("--mode " + a.mode + " " + a.flag + " " + quote(a.target)), "");
    ASSERT_TRUE(r.written) << r.err;
    if (a.mode == "crash_on=2") {
      expect_others_pass(r.results, {"bl.float32.n100"});
      EXPECT_FALSE(fs::exists(dir_ + "/made-by-the-judge"));
      continue;
    }
    EXPECT_EQ(r.code, 0) << r.err;
    expect_others_pass(r.results, {});
    const std::string output = r.results["student_output"]["text"];
    EXPECT_TRUE(contains(output, ": done")) << output;  // the attack itself worked (no sandbox here)
    EXPECT_TRUE(contains(output, "PASS all cases")) << output;  // printed after it: still read
    EXPECT_FALSE(contains(r.results.dump(), "TOPSECRET")) << output;
    EXPECT_FALSE(fs::exists(dir_ + "/made-by-the-judge"));
    EXPECT_EQ(read_file(secret).value_or(""), "TOPSECRET-8c1f\n");
  }
  unsetenv("SCANGRADE_CHANNEL_DIR");
  expect_no_process_left();
}

TEST_F(Judge, ASanitizerReportReplacedByALinkIsInterferenceNotAPass) {
  const std::string secret = dir_ + "/secret.xml";
  write_text(secret, "<ComputeSanitizerOutput>TOPSECRET-5b2e</ComputeSanitizerOutput>\n");
  const std::string sanitizer = fake_sanitizer("\"$@\"\nln -sf " + quote(secret) + " \"$save\"\nexit 0\n");
  const Result r = judge(worker("--mode ok"), "--compute-sanitizer " + quote(sanitizer), "gpu");
  ASSERT_TRUE(r.written) << r.err;
  expect_valid(r.results, dir_);
  const json& c = case_of(r.results, "sp.float32.n3000.real");
  EXPECT_EQ(c["status"], "race") << c["message"];
  EXPECT_TRUE(contains(c["message"], "interfered with the grader")) << c["message"];
  EXPECT_TRUE(contains(c["message"], "symbolic link")) << c["message"];
  EXPECT_FALSE(contains(r.results.dump(), "TOPSECRET"));
}

TEST_F(Judge, AWorkerInAFolderOnlyTheGraderMayEnterStillRunsWithoutBubblewrap) {
  // dir_ is a mkdtemp folder (0700): the uid the judge drops to without bubblewrap cannot enter it
  if (geteuid() != 0) GTEST_SKIP() << "only root drops to another uid";
  const std::string closed = dir_ + "/closed";
  fs::create_directory(closed);
  chmod(closed.c_str(), 0700);
  const std::string copy = closed + "/worker";
  fs::copy_file(kFake, copy);
  const Result r = judge(copy, "--sandbox auto --bwrap /nonexistent/bwrap");
  ASSERT_TRUE(r.written) << r.err;
  expect_valid(r.results, dir_);
  EXPECT_EQ(r.code, 0) << r.err;
  expect_others_pass(r.results, {});
  EXPECT_TRUE(contains(r.results["isolation"]["notes"].dump(), "runs from a copy")) << r.results["isolation"].dump();
}

}  // namespace scangrade::grader
