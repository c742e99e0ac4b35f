// The checker: the trusted side of a GPU case. The judge starts one per submission, outside the
// sandbox; it has its own CUDA context and never runs student code.
//
//   scangrade_checker --socket FD      (FD: a SOCK_SEQPACKET socket to the judge)
//
// It allocates every buffer a case shares with the worker (vmm.h: the worker gets descriptors,
// never anything else of this process), fills the input and poisons the output itself, and after
// the worker's call reads guards, output and input back with its own context: a worker whose
// context broke, or that lied, changes nothing it reads. For timed cases, before every call it
// writes a fresh input drawn on the device from a seed only this process knows (fresh_input.h;
// the case's own input for kinds with nothing to draw) and makes that input's acceptance band,
// poisons the output and flushes L2; it checks every call's output on the device against the band,
// and times the reference, CUB and a copy (bench.h).
// Messages (one JSON object per SEQPACKET message, descriptors attached): the structs and codec of
// grading/protocol/checker_messages.h, which say what each op does.
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "bench.h"
#include "checker_messages.h"
#include "fd_passing.h"
#include "fresh_input.h"
#include "output_check.h"
#include "scangrade/check.h"
#include "scangrade/device_run.h"
#include "timing_method.h"  // the benchmark-only variation
#include "vmm.h"

namespace scangrade::grader {
namespace {

constexpr std::size_t kMaxMessage = 64 * 1024;

/// The judge's staging memfd (or, read-only, a case file of its case cache), mapped for one op.
class Staging {
 public:
  enum Access { ReadWrite, ReadOnly };
  explicit Staging(int fd, Access access = ReadWrite) : fd_(fd) {
    struct stat st {};
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
      close(fd);
      throw std::runtime_error("the staging descriptor is not a file");
    }
    size_ = static_cast<std::size_t>(st.st_size);
    void* p = mmap(nullptr, size_, access == ReadOnly ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      close(fd);
      throw std::runtime_error(std::string("mapping the staging file: ") + std::strerror(err));
    }
    data_ = static_cast<char*>(p);
  }
  ~Staging() {
    munmap(data_, size_);
    close(fd_);
  }
  char* at(std::size_t offset, std::size_t bytes) const {
    if (offset > size_ || bytes > size_ - offset) throw std::runtime_error("the staging file is too small");
    return data_ + offset;
  }

 private:
  int fd_;
  char* data_ = nullptr;
  std::size_t size_ = 0;
};

void cuda(cudaError_t err, const char* what) { check_cuda(err, what, "checker"); }

/// The check cases' buffers: the input and the output zone (guard, output, guard), shared with the
/// worker, and a pristine copy of the input for the device-side check. They stay from one case to
/// the next while the sizes the driver rounds them to stay the same (most cases fit one granule), so
/// that a case costs no allocation, export, mapping or free on either side: every driver call of
/// that kind takes a lock all processes on the GPU share. Every byte of both is written again at
/// each setup (input, canaries, poison, and zeros in the rounding slack), so no case sees another's.
struct CheckCase {
  vmm::Mapping in, zone;
  std::unique_ptr<DeviceBuffer> pristine;
  std::size_t pristine_bytes = 0;
  std::size_t n = 0, element = 4;
  bool active = false;  // set up and not yet released
  ~CheckCase() {
    vmm::release(in);
    vmm::release(zone);
  }
};

/// A timed case: pristine input and band here (the band made here, output_check.h), two
/// input/output pairs shared with the worker. With `fresh` every call gets new input values and
/// the band of those (fresh_input.h); without, the pristine input and its band.
struct TimedCase {
  std::unique_ptr<DeviceBuffer> pristine, lo, hi, flush, first;
  vmm::Mapping in[2], out[2];
  std::size_t n = 0, element = 4;
  bool f32 = false, fresh = false;
  ValueKind values = ValueKind::Random;
  ScanKind kind = ScanKind::Inclusive;
  std::unique_ptr<ReferenceCalls> reference;  // paired with the student's calls (after pristine: freed first)
  cudaStream_t stream = nullptr;
  std::size_t shift = 0;  // bytes into pair 1's buffers (benchmark-only, timing_method.h; 0 when grading)
  void* input(int j) const { return static_cast<char*>(in[j].ptr) + (j == 1 ? shift : 0); }
  void* output(int j) const { return static_cast<char*>(out[j].ptr) + (j == 1 ? shift : 0); }
  ~TimedCase() {
    for (auto& m : in) vmm::release(m);
    for (auto& m : out) vmm::release(m);
    if (stream) cudaStreamDestroy(stream);
  }
};

class Checker {
 public:
  explicit Checker(int sock) : sock_(sock) {}

  int serve() {
    CheckerHello hello;
    if (const auto why = device_unavailable()) hello.error = *why;
    else hello.device = device_description();
    if (!send_with_fds(sock_, encode(hello), {}) || !hello.error.empty()) return 0;
    for (;;) {
      std::string text;
      std::vector<int> fds;
      if (!receive_with_fds(sock_, text, fds, kMaxMessage)) return 0;  // the judge is gone
      CheckerReply answer;
      CheckerOp op = CheckerOp::Release;
      std::vector<int> out_fds;
      try {
        const CheckerRequest request = decode_checker_request(text);
        op = request.op;
        answer = dispatch(request, fds, out_fds);
      } catch (const std::exception& e) {
        for (int fd : fds) close(fd);
        answer = CheckerReply::failed(std::string("checker: ") + e.what());
      }
      const bool sent = send_with_fds(sock_, encode(answer, op), out_fds);
      for (int fd : out_fds) close(fd);
      if (!sent) return 0;
    }
  }

 private:

  static int take_one(std::vector<int>& fds) {
    if (fds.size() != 1) throw std::runtime_error("expected one staging descriptor");
    const int fd = fds[0];
    fds.clear();
    return fd;
  }

  CheckerReply dispatch(const CheckerRequest& msg, std::vector<int>& fds, std::vector<int>& out_fds) {
    switch (msg.op) {
      case CheckerOp::Setup: return setup(msg, take_one(fds), out_fds);
      case CheckerOp::Check: return check(msg);
      case CheckerOp::Collect: return collect(take_one(fds));
      case CheckerOp::Release:  // the buffers stay for the next case that fits them
        if (check_) check_->active = false;
        return {};
      case CheckerOp::TimeSetup: return time_setup(msg, take_one(fds), out_fds);
      case CheckerOp::Prime: return prime(msg.j);
      case CheckerOp::Verify: return verify(msg.j);
      case CheckerOp::ReferenceCall: return reference_call();
      case CheckerOp::TimeEnd:
        timed_.reset();
        return {};
    }
    throw std::runtime_error("unknown op");
  }

  /// Bytes per element of a check case: the ones the dtypes have (int32 and float32 are 4).
  static std::size_t element_of(const CheckerRequest& msg) {
    if (msg.element != sizeof(std::int32_t) && msg.element != sizeof(float))
      throw std::runtime_error("an element of " + std::to_string(msg.element) + " bytes");
    return static_cast<std::size_t>(msg.element);
  }
  static std::size_t element_of(DType dtype) { return dtype == DType::Float32 ? sizeof(float) : sizeof(std::int32_t); }

  /// The input at byte `offset` of the descriptor (the judge's staging memfd or a case cache file).
  /// The buffers of the last case are kept when they fit exactly (their rounded sizes match): then
  /// descriptors go back only when the judge asks for them ("share": its worker does not hold the
  /// buffers), and the reply says "kept".
  CheckerReply setup(const CheckerRequest& msg, int input_fd, std::vector<int>& out_fds) {
    const Staging staging(input_fd, Staging::ReadOnly);
    const std::size_t n = msg.n, element = element_of(msg);
    const std::size_t g = kGuardElements, in_bytes = n * element, zone_bytes = (n + 2 * g) * element;
    const std::size_t offset = msg.offset;
    std::string why;
    const std::size_t granule = vmm::granularity(why);
    if (granule == 0) return CheckerReply::failed(why);
    const bool kept = check_ && check_->in.size == vmm::rounded(in_bytes, granule) &&
                      check_->zone.size == vmm::rounded(zone_bytes, granule);
    if (!kept) {
      check_.reset();
      auto c = std::make_unique<CheckCase>();
      int in_fd = -1, zone_fd = -1;
      if (why = vmm::create(in_bytes, c->in, in_fd); !why.empty()) return CheckerReply::failed(why);
      out_fds.push_back(in_fd);
      if (why = vmm::create(zone_bytes, c->zone, zone_fd); !why.empty()) return CheckerReply::failed(why);
      out_fds.push_back(zone_fd);
      check_ = std::move(c);
    } else if (msg.share) {
      for (const vmm::Mapping* m : {&check_->in, &check_->zone}) {
        int fd = -1;
        if (why = vmm::share(*m, fd); !why.empty()) return CheckerReply::failed(why);
        out_fds.push_back(fd);
      }
    }
    CheckCase& c = *check_;
    c.active = false;
    c.n = n;
    c.element = element;
    if (!c.pristine || c.pristine_bytes < in_bytes) {
      c.pristine.reset();
      try {
        c.pristine = std::make_unique<DeviceBuffer>(in_bytes, "checker");
      } catch (const std::exception& e) {
        return CheckerReply::failed(e.what());
      }
      c.pristine_bytes = in_bytes;
    }
    // input from the judge; the zone: canaries around the poisoned output (check.h); zeros after
    auto* in = static_cast<char*>(c.in.ptr);
    if (in_bytes) {
      cuda(cudaMemcpy(c.pristine->get(), staging.at(offset, in_bytes), in_bytes, cudaMemcpyHostToDevice),
           "copying the input");
      cuda(cudaMemcpyAsync(in, c.pristine->get(), in_bytes, cudaMemcpyDeviceToDevice), "copying the input");
    }
    cuda(cudaMemsetAsync(in + in_bytes, 0, c.in.size - in_bytes), "clearing the input's slack");
    auto* zone = static_cast<char*>(c.zone.ptr);
    fill_words(zone, g, kCanaryBits, nullptr);
    fill_words(zone + g * element, n, kPoisonBits, nullptr);
    fill_words(zone + (g + n) * element, g, kCanaryBits, nullptr);
    cuda(cudaMemsetAsync(zone + zone_bytes, 0, c.zone.size - zone_bytes), "clearing the zone's slack");
    cuda(cudaDeviceSynchronize(), "waiting for the input and the poison");
    c.active = true;
    CheckerReply r;
    r.sizes = {c.in.size, c.zone.size};
    r.kept = kept && out_fds.empty();
    return r;
  }

  /// The check case set up and not yet released.
  CheckCase& active_case(const char* op) {
    if (!check_ || !check_->active) throw std::runtime_error(std::string(op) + " without a case");
    return *check_;
  }

  /// After the worker's call: whether guards, input and output are right (output_check.h), found on
  /// the device. The case stays for a collect when they are not shown right.
  CheckerReply check(const CheckerRequest& msg) {
    active_case("check");
    const ScanKind kind = msg.kind;
    const bool f32 = msg.dtype == DType::Float32;
    const std::size_t g = kGuardElements, n = check_->n;
    const bool ok = f32 ? verified_on_device<float>(static_cast<const float*>(check_->zone.ptr), g,
                                                    static_cast<const float*>(check_->in.ptr),
                                                    check_->pristine->as<float>(), n, kind, nullptr)
                        : verified_on_device<std::int32_t>(static_cast<const std::int32_t*>(check_->zone.ptr), g,
                                                           static_cast<const std::int32_t*>(check_->in.ptr),
                                                           check_->pristine->as<std::int32_t>(), n, kind, nullptr);
    CheckerReply r;
    r.verified = ok;
    return r;
  }

  CheckerReply collect(int staging_fd) {
    const Staging staging(staging_fd);
    active_case("collect");
    const std::size_t g = kGuardElements, in_bytes = check_->n * check_->element,
                      zone_bytes = (check_->n + 2 * g) * check_->element;
    cuda(cudaMemcpy(staging.at(0, zone_bytes), check_->zone.ptr, zone_bytes, cudaMemcpyDeviceToHost), "reading the output");
    if (in_bytes)
      cuda(cudaMemcpy(staging.at(zone_bytes, in_bytes), check_->in.ptr, in_bytes, cudaMemcpyDeviceToHost),
           "reading the input back");
    check_->active = false;
    return {};
  }

  /// The input at byte `offset` of the descriptor (a staging memfd, or a case cache file).
  CheckerReply time_setup(const CheckerRequest& msg, int input_fd, std::vector<int>& out_fds) {
    const Staging staging(input_fd, Staging::ReadOnly);
    timed_.reset();
    check_.reset();  // the timed cases come after the check cases: their memory is free again
    auto t = std::make_unique<TimedCase>();
    t->n = msg.n;
    t->element = element_of(msg.dtype);
    t->f32 = msg.dtype == DType::Float32;
    const ScanKind kind = msg.kind;
    t->kind = kind;
    // the case's values kind: fresh values before every call when it has any to draw
    t->values = msg.values;
    t->fresh = fresh_values(msg.values) && !timing::bench_variation().no_fresh;
    t->shift = timing::bench_variation().shift;
    const std::size_t bytes = t->n * t->element, offset = msg.offset;
    for (auto* b : {&t->pristine, &t->lo, &t->hi}) *b = std::make_unique<DeviceBuffer>(bytes, "checker");
    t->flush = std::make_unique<DeviceBuffer>(l2_flush_bytes(), "checker");
    t->first = std::make_unique<DeviceBuffer>(sizeof(unsigned long long), "checker");
    cuda(cudaStreamCreateWithFlags(&t->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    cuda(cudaMemcpy(t->pristine->get(), staging.at(offset, bytes), bytes, cudaMemcpyHostToDevice), "copying the input");
    if (t->f32)
      acceptance_band_on_device<float>(t->pristine->as<float>(), t->n, kind, t->lo->as<float>(), t->hi->as<float>(),
                                       t->stream);
    else
      acceptance_band_on_device<std::int32_t>(t->pristine->as<std::int32_t>(), t->n, kind, t->lo->as<std::int32_t>(),
                                              t->hi->as<std::int32_t>(), t->stream);
    CheckerReply r;
    for (vmm::Mapping* m : {&t->in[0], &t->in[1], &t->out[0], &t->out[1]}) {
      int fd = -1;
      const std::size_t room = bytes + (m == &t->in[1] || m == &t->out[1] ? t->shift : 0);
      if (std::string why = vmm::create(room, *m, fd); !why.empty()) return CheckerReply::failed(why);
      out_fds.push_back(fd);
      r.sizes.push_back(m->size);
    }
    const Slot slot = msg.slot;
    if (msg.paired_reference) {
      t->reference = t->f32 ? ReferenceCalls::make<float>(slot, kind, t->pristine->as<float>(), t->n)
                            : ReferenceCalls::make<std::int32_t>(slot, kind, t->pristine->as<std::int32_t>(), t->n);
    }
    if (msg.baselines) {
      // the reference alone too: the judge caps the paired reference times with it (timing_method.h)
      const Baselines b = t->f32 ? measure_baselines<float>(slot, kind, t->pristine->as<float>(), t->n)
                                 : measure_baselines<std::int32_t>(slot, kind, t->pristine->as<std::int32_t>(), t->n);
      r.baselines = b;
    }
    cuda(cudaDeviceSynchronize(), "preparing the timed case");
    r.flush_bytes = l2_flush_bytes();
    r.fresh_input = t->fresh;
    timed_ = std::move(t);
    return r;
  }

  TimedCase& timed(int j) {
    if (!timed_ || (j != 0 && j != 1)) throw std::runtime_error("no timed case or a bad buffer pair");
    return *timed_;
  }

  /// A seed from the OS for one call's fresh input: never sent anywhere, never logged.
  static std::uint64_t fresh_seed() {
    std::uint64_t seed = 0;
    auto* p = reinterpret_cast<unsigned char*>(&seed);
    for (std::size_t got = 0; got < sizeof seed;) {
      const ssize_t r = getrandom(p + got, sizeof seed - got, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) throw std::runtime_error(std::string("getrandom: ") + std::strerror(errno));
      got += static_cast<std::size_t>(r);
    }
    return seed;
  }

  /// Fresh input (new values and their band, or the pristine input), poisoned output, flushed L2
  /// for pair j. The band is for this call: verify(j) comes before the next prime.
  CheckerReply prime(int j) {
    TimedCase& t = timed(j);
    const std::size_t bytes = t.n * t.element;
    if (t.fresh) {
      const std::uint64_t seed = fresh_seed();
      if (t.f32)
        fresh_input_and_band_on_device<float>(t.values, seed, t.n, t.kind, static_cast<float*>(t.input(j)),
                                              t.lo->as<float>(), t.hi->as<float>(), t.stream);
      else
        fresh_input_and_band_on_device<std::int32_t>(t.values, seed, t.n, t.kind,
                                                     static_cast<std::int32_t*>(t.input(j)),
                                                     t.lo->as<std::int32_t>(), t.lo->as<std::int32_t>(), t.stream);
    } else {
      cuda(cudaMemcpyAsync(t.input(j), t.pristine->get(), bytes, cudaMemcpyDeviceToDevice, t.stream),
           "restoring the input");
    }
    cuda(cudaMemsetAsync(t.output(j), 0xff, bytes, t.stream), "poisoning the output");
    cuda(cudaMemsetAsync(t.flush->get(), ++flushes_ & 0xff, l2_flush_bytes(), t.stream), "flushing L2");
    cuda(cudaStreamSynchronize(t.stream), "preparing a timed call");
    return {};
  }

  /// One call of the reference (bench.h: ReferenceCalls), paired with the student's last call.
  CheckerReply reference_call() {
    if (!timed_ || !timed_->reference) throw std::runtime_error("no timed case with a paired reference");
    CheckerReply r;
    r.ms = timed_->reference->next_ms();
    return r;
  }

  /// The first element of pair j's output outside the band, or null.
  CheckerReply verify(int j) {
    TimedCase& t = timed(j);
    auto* first = static_cast<unsigned long long*>(t.first->get());
    const std::optional<std::size_t> at =
        t.f32 ? first_outside<float>(static_cast<const float*>(t.output(j)), t.lo->as<float>(), t.hi->as<float>(), t.n,
                                     first, t.stream)
              : first_outside<std::int32_t>(static_cast<const std::int32_t*>(t.output(j)), t.lo->as<std::int32_t>(),
                                            t.lo->as<std::int32_t>(), t.n, first, t.stream);  // int32: lo = hi
    CheckerReply r;
    if (at) r.outside = *at;
    return r;
  }

  int sock_;
  std::unique_ptr<CheckCase> check_;
  std::unique_ptr<TimedCase> timed_;
  int flushes_ = 0;
};

}  // namespace
}  // namespace scangrade::grader

int main(int argc, char** argv) {
  int sock = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--socket" && i + 1 < argc) {
      sock = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s --socket FD\n  The grader's checker: started by scangrade_judge.\n", argv[0]);
      return arg == "--help" || arg == "-h" ? 0 : 2;
    }
  }
  if (sock < 0) {
    std::fprintf(stderr, "checker: --socket FD is required\n");
    return 2;
  }
  return scangrade::grader::Checker(sock).serve();
}
