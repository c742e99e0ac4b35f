// The judge's command line (command_line.h).
#include "command_line.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "protocol.h"
#include "scangrade/emulated_run.h"

namespace scangrade::grader {

namespace {

/// --help's options for the GPU backend's timing and batches.
std::string gpu_options_text() {
  return R"(  --gpu-lock FILE         judges that share a GPU share FILE (created if missing, with FILE.gate):
                          each holds it shared while it runs cases and compute-sanitizer, and
                          exclusive while it times its passed perf cases, all in one go after its
                          functional runs, so that timings are taken with the GPU to one judge.
                          Waits do not count against --budget-s nor a case's duration_s. Prints a
                          "phases" line on stderr at the end (as --verbose)
  --baseline-cache FILE   time the reference, CUB and the copy once per case and GPU, and reuse
                          them: FILE (JSON, created if missing) keeps them per device, case and
                          harness version. Read and written only with the exclusive GPU lock held;
                          use one FILE per GPU, with --gpu-lock. Without it the baselines are timed
                          in the same process as the student's call, every time
  --case-cache DIR        share the cases' inputs and oracle outputs among the judges of a batch:
                          each is made once, kept in DIR/<key>.case (the key: a sha256 of the
                          harness, the judge's build and the case's id, dtype, n, values, seed and
                          kind) and read by the others. DIR must be the judges' alone (0700, out of
                          every worker's reach). A missing, bad or unwritable file is made again
                          here: the cache never changes a verdict. Ignored with --sandbox off (a
                          worker could write it). Without it each judge makes its own
  --reference-worker BIN  the reference solution built as a worker (scangrade_worker_reference;
                          default: the one next to the judge; none: do without). On the gpu
                          backend it calibrates, on every timed case, what the worker path adds to
                          the judge's own clock around a call; a call then counts at least the
                          judge's clock less that. Without it the submission's own empty calls do
)";
}

std::string exit_codes_text() {
  return R"(Exit codes (also results.exit_code):
  0  graded, every case passed
  1  graded, some case did not pass
  2  bad input: usage, malformed suite or build file (message on stderr; no results written)
  3  internal error, a harness fault such as a missing worker binary or an unwritable channel
     folder: results written with outcome not_graded and `errors` filled (please report)
)";
}

}  // namespace

std::string usage_text() {
  return R"(usage: scangrade_judge --worker BIN --out results.json --submission-name NAME
                      --submission-path PATH --backend gpu|emulate [--suite FILE]...
                      [--hidden-suite FILE (--secret S | --secret-file F)]... [--build-json FILE]
                      [--budget-s 900] [--stop-after-timeouts 3] [--stop-after-crashes 5] [--timeout-scale 1.0] [--sanitizer auto|off]
                      [--compute-sanitizer PATH] [--only-slot SLOT] [--max-n N] [--log-limit 65536]
                      [--sandbox auto|require|off] [--bwrap PATH] [--sandbox-uid N]
                      [--gpu-lock FILE] [--baseline-cache FILE] [--case-cache DIR]
                      [--reference-worker BIN|none] [--verbose]

Grades one submission: runs every case of the suites through the worker (the only process that links
the student's code), checks each result against the CPU oracle and writes results.json
(grading/results.schema.json). The judge never links student code.

  --worker BIN            worker executable built from the submission (scangrade_worker_*); may be
                          omitted only when --build-json says layout_error or compile_error
  --checker BIN           scangrade_checker (gpu backend): the trusted process that owns every case
                          buffer, reads the output itself and prepares and verifies timed calls
  --out FILE              results.json to write (atomically: a temporary file, then a rename)
  --submission-name NAME  recorded in results.submission.name
  --submission-path PATH  recorded in results.submission.path
  --backend gpu|emulate   where the worker runs kernels; timing and compute-sanitizer only on gpu
  --suite FILE            a suite (JSON, grading/docs/suites.md); repeatable; seeds used as written
  --hidden-suite FILE     a hidden suite: the secret is mixed into every seed (inputs.h mix_secret);
                          results record the seeds as written, never the secret or the mixed seed
  --secret S              the instructor's secret for hidden suites
  --secret-file F         read the secret from F (trailing newline removed); safer than --secret
  --build-json FILE       the compile step's report {status, log, warnings, missing_slots,
                          failed_slots, seconds}: copied to results.build; cases of failed_slots get
                          compile_error; layout_error (or compile_error without --worker) makes every
                          case compile_error and runs no worker
  --budget-s S            wall-clock budget for the submission (default 900), shared out among the
                          slots in proportion to their cases' deadlines: each slot's runs (functional,
                          timed, compute-sanitizer) stop at its own share, so a slot that hangs
                          costs no other slot anything; its cases past its share get timeout "slot
                          time budget exhausted". The whole submission stops at 1.5 x S
  --stop-after-timeouts K after K timeouts in a row in one slot, its remaining cases get timeout
                          without running ("not run: the K previous cases of this slot timed out")
                          (default 3; 0: never)
  --stop-after-crashes K  after K crashes in a row in one slot, its remaining cases of the crashed
                          types up to the largest crashed n get crash without running (each would
                          start a fresh worker); larger cases still run (default 5; 0: never)
  --timeout-scale X       multiplies every deadline (default 1.0). Per-case deadline: the suite's
                          timeout_s, else gpu 10 s + 50 ns*n, emulate 20 s + 3 us*n
  --sanitizer auto|off    auto (default): on gpu, cases with a "sanitize" list that passed are run
                          again under compute-sanitizer: one process per tool runs all the cases
                          that asked for it; when it reports a finding (or fails), each of those
                          cases runs again alone, so that findings name their case
  --compute-sanitizer P   compute-sanitizer executable (default: looked up in PATH)
  --only-slot SLOT        grade only this slot's cases (hillis_steele, blelloch, hierarchical,
                          single_pass)
  --max-n N               grade only cases with n <= N; the others are left out of the results and
                          the score. Default: all cases on gpu; 4194305 (2^22 + 1, the emulation
                          cap) on emulate
  --log-limit BYTES       keep at most this much of the student's output: its first and last halves
                          and a count of what was left out (default 65536)
  --sandbox MODE          auto (default): every worker and compute-sanitizer run in bubblewrap
                          namespaces with limits when bubblewrap can run here, else with limits
                          (and an unprivileged uid when root) only, said in results.json
                          "isolation"; require: exit 2 when bubblewrap cannot run; off: no sandbox
  --bwrap PATH            the bubblewrap executable (default: bwrap in PATH)
  --sandbox-uid N         the uid student code runs as when the judge runs as root (default 65534;
                          judges running side by side without cgroups want one each)
)" + gpu_options_text() + R"(  --verbose               one progress line per case on stderr; at the end a line
                          "scangrade_judge: phases functional_s=F timing_s=T lock_wait_s=W sanitizer_s=S
                          prepare_s=P" (T: timed cases, the GPU held exclusively; P: their
                          inputs put on the GPU beforehand)
  --help                  this text

)" + exit_codes_text();
}

namespace {

/// The required options, the secret from --secret-file, and the emulation cap as max_n's default.
void check_and_complete(Options& o, const std::optional<std::string>& secret_file) {
  if (o.out.empty()) throw UsageError("--out is required");
  if (o.submission_name.empty()) throw UsageError("--submission-name is required");
  if (o.submission_path.empty()) throw UsageError("--submission-path is required");
  if (o.backend != "gpu" && o.backend != "emulate") throw UsageError("--backend: expected gpu or emulate");
  if (o.suites.empty() && o.hidden_suites.empty()) throw UsageError("no suite: give --suite FILE or --hidden-suite FILE");
  if (o.secret && secret_file) throw UsageError("give --secret or --secret-file, not both");
  if (secret_file) {
    const auto text = read_file(*secret_file);
    if (!text) throw UsageError("--secret-file: cannot read " + *secret_file);
    std::string s = *text;
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    o.secret = s;
  }
  if (!o.hidden_suites.empty() && (!o.secret || o.secret->empty()))
    throw UsageError("--hidden-suite needs the secret: --secret S or --secret-file F");
  if (o.backend == "emulate" && !o.max_n) o.max_n = kEmulationMaxN;
  if (o.sandbox == "off") o.case_cache.clear();  // an unconfined worker could write it: other judges would read that
  if (!o.worker.empty() && o.worker.front() != '/') {  // workers start in another folder (the sandbox's, the channel's)
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd)) o.worker = std::string(cwd) + "/" + o.worker;
  }
}

}  // namespace

namespace {

/// The command line's arguments, read one flag at a time.
class ArgReader {
 public:
  explicit ArgReader(const std::vector<std::string>& args) : args_(args) {}
  bool more() const { return i_ < args_.size(); }
  const std::string& next() { return args_[i_++]; }
  /// The value after the flag just read.
  std::string value() {
    if (i_ >= args_.size()) throw UsageError(args_[i_ - 1] + " needs a value");
    return args_[i_++];
  }
  double number() {
    const std::string flag = args_[i_ - 1];
    const std::string text = value();
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(v) || v <= 0)
      throw UsageError(flag + ": expected a positive number, got '" + text + "'");
    return v;
  }
  std::size_t count(const char* what) {
    const std::string flag = args_[i_ - 1];
    const std::string text = value();
    char* end = nullptr;
    const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || text[0] == '-')
      throw UsageError(flag + ": expected " + what + ", got '" + text + "'");
    return static_cast<std::size_t>(n);
  }

 private:
  const std::vector<std::string>& args_;
  std::size_t i_ = 0;
};

/// Reads flag `a` (and its value from `r`) into `o`.
void read_flag(const std::string& a, ArgReader& r, Options& o, std::optional<std::string>& secret_file) {
  if (a == "--help" || a == "-h") o.help = true;
  else if (a == "--worker") o.worker = r.value();
  else if (a == "--checker") o.checker = r.value();
  else if (a == "--reference-worker") o.reference_worker = r.value();
  else if (a == "--out") o.out = r.value();
  else if (a == "--submission-name") o.submission_name = r.value();
  else if (a == "--submission-path") o.submission_path = r.value();
  else if (a == "--backend") o.backend = r.value();
  else if (a == "--suite") o.suites.push_back(r.value());
  else if (a == "--hidden-suite") o.hidden_suites.push_back(r.value());
  else if (a == "--secret") o.secret = r.value();
  else if (a == "--secret-file") secret_file = r.value();
  else if (a == "--build-json") o.build_json = r.value();
  else if (a == "--budget-s") o.budget_s = r.number();
  else if (a == "--stop-after-timeouts") o.stop_after_timeouts = r.count("a count");
  else if (a == "--stop-after-crashes") o.stop_after_crashes = r.count("a count");
  else if (a == "--timeout-scale") o.timeout_scale = r.number();
  else if (a == "--compute-sanitizer") o.compute_sanitizer = r.value();
  else if (a == "--gpu-lock") {
    o.gpu_lock = r.value();
    for (const std::string& path : {o.gpu_lock, o.gpu_lock + ".gate"}) {
      const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
      if (fd < 0) throw UsageError("--gpu-lock: cannot open " + path + ": " + std::strerror(errno));
      ::close(fd);
    }
  } else if (a == "--baseline-cache") {
    o.baseline_cache = r.value();
  } else if (a == "--case-cache") {
    o.case_cache = r.value();
  }
  else if (a == "--verbose") o.verbose = true;
  else if (a == "--sandbox") {
    o.sandbox = r.value();
    if (o.sandbox != "auto" && o.sandbox != "require" && o.sandbox != "off")
      throw UsageError("--sandbox: expected auto, require or off, got '" + o.sandbox + "'");
  } else if (a == "--bwrap") {
    o.bwrap = r.value();
  } else if (a == "--sandbox-uid") {
    o.sandbox_uid = static_cast<unsigned>(r.count("a uid"));
  }
  else if (a == "--sanitizer") {
    const std::string v = r.value();
    if (v != "auto" && v != "off") throw UsageError("--sanitizer: expected auto or off, got '" + v + "'");
    o.sanitizer = v == "auto";
  } else if (a == "--only-slot") {
    const std::string v = r.value();
    o.only_slot = parse_slot(v);
    if (!o.only_slot)
      throw UsageError("--only-slot: '" + v + "' is not one of hillis_steele, blelloch, hierarchical, single_pass");
  } else if (a == "--max-n") {
    o.max_n = r.count("an element count");
  } else if (a == "--log-limit") {
    o.log_limit = r.count("a byte count");
  } else {
    throw UsageError("unknown argument '" + a + "'");
  }
}

}  // namespace

Options parse_args(const std::vector<std::string>& args) {
  Options o;
  std::optional<std::string> secret_file;
  ArgReader r(args);
  while (r.more()) {
    const std::string a = r.next();
    read_flag(a, r, o, secret_file);
  }
  if (o.help) return o;
  check_and_complete(o, secret_file);
  return o;
}

}  // namespace scangrade::grader
