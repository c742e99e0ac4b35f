// A fake checker for the judge's tests (grading/checker/checker_main.cpp without a GPU): the same
// ops on memfds instead of device memory, the check and the band made on the CPU with the harness's
// own rule (check.h), made-up baselines (reference 1 ms, CUB 0.5 ms, copy 0.25 ms; --reference MS
// changes the first; the paired reference calls take the same, or --paired-reference MS). Timed calls get fresh input values before every call, as the checker's do
// (fresh_input.h, drawn on the CPU from a random seed), and that input's band; --pristine-timing
// restores the case's input instead (the method before fresh inputs, for tests that show the
// difference).
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checker_messages.h"
#include "fd_passing.h"
#include "fresh_input.h"
#include "scangrade/check.h"
#include "scangrade/oracle.h"

using nlohmann::json;
using namespace scangrade::grader;

namespace {

struct MemFile {
  int fd = -1;
  char* data = nullptr;
  std::size_t size = 0;
  explicit MemFile(std::size_t bytes) : size(bytes ? bytes : 1) {
    fd = memfd_create("fake-checker", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) std::exit(7);
    data = static_cast<char*>(mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  }
  ~MemFile() {
    munmap(data, size);
    close(fd);
  }
};

struct Staging {
  char* data = nullptr;
  std::size_t size = 0;
  int fd;
  explicit Staging(int f, bool writable = true) : fd(f) {
    struct stat st {};
    fstat(fd, &st);
    size = static_cast<std::size_t>(st.st_size);
    data = static_cast<char*>(mmap(nullptr, size, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0));
    if (data == MAP_FAILED) std::exit(8);
  }
  ~Staging() {
    munmap(data, size);
    close(fd);
  }
};

template <typename T>
bool inside(const char* out, const char* lo, const char* hi, std::size_t n, std::size_t& at) {
  for (at = 0; at < n; ++at) {
    T v, l, h;
    std::memcpy(&v, out + at * sizeof(T), sizeof(T));
    std::memcpy(&l, lo + at * sizeof(T), sizeof(T));
    std::memcpy(&h, hi + at * sizeof(T), sizeof(T));
    if (!(v >= l && v <= h)) return false;
  }
  return true;
}

template <typename T>
std::vector<T> values(const char* p, std::size_t n) {
  std::vector<T> v(n);
  std::memcpy(v.data(), p, n * sizeof(T));
  return v;
}

/// The checker's "check": guards, input and output right, by check.h's rule.
template <typename T>
bool checked(const char* zone, const char* in, const std::vector<char>& pristine, std::size_t n, scangrade::ScanKind kind) {
  const std::size_t g = scangrade::kGuardElements;
  const auto z = values<std::uint32_t>(zone, n + 2 * g);
  for (std::size_t i = 0; i < g; ++i)
    if (z[i] != scangrade::kCanaryBits || z[g + n + i] != scangrade::kCanaryBits) return false;
  if (std::memcmp(in, pristine.data(), n * sizeof(T)) != 0) return false;
  const auto input = values<T>(pristine.data(), n);
  const auto got = values<T>(zone + g * sizeof(T), n);
  return scangrade::compare_output(input, kind, scangrade::oracle_scan(input, kind), got).wrong == 0;
}

/// The band of check.h for the input (the real checker makes it on the device).
template <typename T>
void band_of(const std::vector<char>& pristine, std::size_t n, scangrade::ScanKind kind, std::vector<char>& lo,
             std::vector<char>& hi) {
  const auto input = values<T>(pristine.data(), n);
  const auto band = scangrade::acceptance_band(input, kind, scangrade::oracle_scan(input, kind));
  lo.assign(reinterpret_cast<const char*>(band.lo.data()), reinterpret_cast<const char*>(band.lo.data()) + n * sizeof(T));
  hi.assign(reinterpret_cast<const char*>(band.hi.data()), reinterpret_cast<const char*>(band.hi.data()) + n * sizeof(T));
}


}  // namespace

int main(int argc, char** argv) {
  int sock = -1;
  double reference_ms = 1.0;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--socket") sock = std::atoi(argv[++i]);
    else if (std::string(argv[i]) == "--reference") reference_ms = std::stod(argv[++i]);
  }
  bool pristine_timing = false;
  double paired_reference_ms = reference_ms;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--pristine-timing") pristine_timing = true;
    if (std::string(argv[i]) == "--paired-reference" && i + 1 < argc) paired_reference_ms = std::stod(argv[++i]);
  }
  std::random_device os_random;
  bool fresh = false;
  scangrade::ScanKind timed_kind = scangrade::ScanKind::Inclusive;
  scangrade::ValueKind timed_values = scangrade::ValueKind::Random;
  if (sock < 0) return 2;
  send_with_fds(sock, encode(CheckerHello{"fake checker", ""}), {});
  std::unique_ptr<MemFile> in, zone, pairs[4];
  std::vector<char> pristine, lo, hi, check_input;
  std::size_t n = 0;
  bool f32 = false;
  for (;;) {
    std::string text;
    std::vector<int> fds;
    if (!receive_with_fds(sock, text, fds, 64 * 1024)) return 0;
    CheckerRequest msg;
    try {
      msg = decode_checker_request(text);
    } catch (const MessageError& ex) {
      for (int fd : fds) close(fd);
      if (!send_with_fds(sock, encode(CheckerReply::failed(ex.what()), CheckerOp::Release), {})) return 0;
      continue;
    }
    const CheckerOp op = msg.op;
    CheckerReply reply;
    std::vector<int> out;
    const std::size_t g = scangrade::kGuardElements;
    if (op == CheckerOp::Setup) {
      const Staging s(fds.at(0), false);
      const std::size_t offset = msg.offset;
      n = msg.n;
      // like the checker: the last case's buffers stay when their rounded sizes fit (64 KiB granules
      // here), filled afresh, and descriptors go out only when the judge asks for them
      const auto rounded = [](std::size_t bytes) { return (std::max<std::size_t>(bytes, 1) + 65535) / 65536 * 65536; };
      const bool kept = in && zone && in->size == rounded(n * 4) && zone->size == rounded((n + 2 * g) * 4);
      if (!kept) {
        in = std::make_unique<MemFile>(rounded(n * 4));
        zone = std::make_unique<MemFile>(rounded((n + 2 * g) * 4));
      }
      std::memset(in->data, 0, in->size);
      std::memset(zone->data, 0, zone->size);
      std::memcpy(in->data, s.data + offset, n * 4);
      check_input.assign(s.data + offset, s.data + offset + n * 4);
      auto* z = reinterpret_cast<std::uint32_t*>(zone->data);
      for (std::size_t i = 0; i < n + 2 * g; ++i) z[i] = (i < g || i >= g + n) ? scangrade::kCanaryBits : scangrade::kPoisonBits;
      if (!kept || msg.share) out = {in->fd, zone->fd};
      reply.sizes = {in->size, zone->size};
      reply.kept = kept && out.empty();
    } else if (op == CheckerOp::Check) {
      const bool ok = msg.dtype == scangrade::DType::Float32
                          ? checked<float>(zone->data, in->data, check_input, n, msg.kind)
                          : checked<std::int32_t>(zone->data, in->data, check_input, n, msg.kind);
      reply.verified = ok;
    } else if (op == CheckerOp::Collect) {
      const Staging s(fds.at(0));
      std::memcpy(s.data, zone->data, (n + 2 * g) * 4);
      std::memcpy(s.data + (n + 2 * g) * 4, in->data, n * 4);
    } else if (op == CheckerOp::Release) {  // the buffers stay for the next case that fits them
    } else if (op == CheckerOp::TimeSetup) {
      const Staging s(fds.at(0), false);
      const std::size_t offset = msg.offset;
      n = msg.n;
      f32 = msg.dtype == scangrade::DType::Float32;
      pristine.assign(s.data + offset, s.data + offset + n * 4);
      if (f32) band_of<float>(pristine, n, msg.kind, lo, hi);
      else band_of<std::int32_t>(pristine, n, msg.kind, lo, hi);
      timed_kind = msg.kind;
      timed_values = msg.values;
      fresh = !pristine_timing && scangrade::grader::fresh_values(timed_values);
      reply.fresh_input = fresh;
      for (auto& p : pairs) {
        p = std::make_unique<MemFile>(n * 4);
        out.push_back(p->fd);
        reply.sizes.push_back(p->size);
      }
      if (msg.baselines) reply.baselines = Baselines{reference_ms, 0.5, 0.25};
      reply.flush_bytes = 1 << 20;
    } else if (op == CheckerOp::Prime) {
      const int j = msg.j;
      if (fresh) {  // new values and their band (the checker does this on the device)
        const std::uint64_t seed = (std::uint64_t{os_random()} << 32) | os_random();
        std::vector<char> drawn(n * 4);
        for (std::size_t i = 0; i < n; ++i) {
          if (f32) {
            const float v = scangrade::grader::InputDraw<float>{timed_values, seed, n}(i);
            std::memcpy(drawn.data() + i * 4, &v, 4);
          } else {
            const std::int32_t v = scangrade::grader::InputDraw<std::int32_t>{timed_values, seed, n}(i);
            std::memcpy(drawn.data() + i * 4, &v, 4);
          }
        }
        if (f32) band_of<float>(drawn, n, timed_kind, lo, hi);
        else band_of<std::int32_t>(drawn, n, timed_kind, lo, hi);
        std::memcpy(pairs[j]->data, drawn.data(), n * 4);
      } else {
        std::memcpy(pairs[j]->data, pristine.data(), n * 4);
      }
      std::memset(pairs[2 + j]->data, 0xff, n * 4);
    } else if (op == CheckerOp::Verify) {
      const int j = msg.j;
      std::size_t at = 0;
      const bool ok = f32 ? inside<float>(pairs[2 + j]->data, lo.data(), hi.data(), n, at)
                          : inside<std::int32_t>(pairs[2 + j]->data, lo.data(), hi.data(), n, at);
      if (!ok) reply.outside = at;
    } else if (op == CheckerOp::ReferenceCall) {
      reply.ms = paired_reference_ms;
    } else if (op == CheckerOp::TimeEnd) {
      for (auto& p : pairs) p.reset();
    }
    for (int fd : fds)
      if (op != CheckerOp::Setup && op != CheckerOp::Collect && op != CheckerOp::TimeSetup) close(fd);
    if (!send_with_fds(sock, encode(reply, op), out)) return 0;
  }
}
