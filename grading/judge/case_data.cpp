// A case's data and the case cache (case_data.h).
#include "case_data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "files.h"
#include "results.h"  // harness_version
#include "scangrade/inputs.h"
#include "scangrade/oracle.h"
#include "sha256.h"

namespace scangrade::grader {

CaseInput make_case_input(const Entry& e) {
  CaseInput in;
  if (e.c.dtype == DType::Float32) in.f32 = make_input<float>(e.input_case);
  else in.i32 = make_input<std::int32_t>(e.input_case);
  return in;
}

std::vector<double> case_oracle(const Entry& e, const CaseInput& input) {
  return e.c.dtype == DType::Float32 ? oracle_scan(input.f32, e.c.kind) : oracle_scan(input.i32, e.c.kind);
}

CaseData make_case_data(const Entry& e) {
  CaseData d;
  try {
    d.input = make_case_input(e);
    d.expected = case_oracle(e, d.input);
  } catch (const std::exception& ex) {
    d.error = ex.what();
  }
  return d;
}

namespace {

constexpr std::uint32_t kFormatVersion = 1;
constexpr char kMagic[8] = {'S', 'G', 'C', 'A', 'S', 'E', '\r', '\n'};
constexpr int kMaxNotes = 5;  // cache problems printed per judge (the rest are only counted)

struct Header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t dtype;          // 0 int32, 1 float32
  std::uint64_t n;
  std::uint32_t input_size;     // bytes per input element
  std::uint32_t expected_size;  // bytes per expected element
  unsigned char key[32];
};
static_assert(sizeof(Header) == 64, "the header is 64 bytes, no padding");

/// Closes a descriptor at the end of a scope.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

/// A cache problem on stderr (judge.log): the first few of them.
void note(const std::string& what) {
  static std::atomic<int> notes{0};
  if (notes++ < kMaxNotes)
    std::cerr << "scangrade_judge: case cache: " << what << "\n";
}

/// sha256 of the judge's own executable, once: a rebuilt judge never reads an older one's files.
const std::string& build_identity() {
  static const std::string id = [] {
    const std::optional<std::string> exe = read_file("/proc/self/exe");
    return exe ? sha256_hex(*exe) : std::string("unknown");
  }();
  return id;
}

std::string key_of(const Entry& e) {
  const Case& c = e.input_case;  // its seed has the secret mixed in (hidden suites)
  const nlohmann::json fields = {"scangrade case cache", kFormatVersion,        harness_version(),
                                 build_identity(),       c.id,                  std::string(name(e.c.dtype)),
                                 c.n,                    std::string(name(c.values)), c.seed,
                                 std::string(name(e.c.kind))};
  return sha256_hex(fields.dump());
}

Header header_of(const Entry& e, const std::string& key) {
  Header h;
  std::memset(&h, 0, sizeof h);
  std::memcpy(h.magic, kMagic, sizeof h.magic);
  h.version = kFormatVersion;
  const bool f32 = e.c.dtype == DType::Float32;
  h.dtype = f32 ? 1 : 0;
  h.n = e.input_case.n;
  h.input_size = f32 ? sizeof(float) : sizeof(std::int32_t);
  h.expected_size = sizeof(double);
  for (std::size_t i = 0; i < sizeof h.key; ++i) h.key[i] = static_cast<unsigned char>(std::stoi(key.substr(2 * i, 2), nullptr, 16));
  return h;
}

/// The cache file opened read-only and read past its header, or -1: `why` says what is wrong with
/// the file ("" when there is none).
int open_cached(const std::string& path, const Header& want, std::string& why) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)};
  if (f.fd < 0) {
    if (errno != ENOENT) why = std::string("cannot open it: ") + std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    why = "not a regular file";
    return -1;
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    why = "not the judge's own file, or writable by others";
    return -1;
  }
  const std::uint64_t size = sizeof(Header) + want.n * (want.input_size + want.expected_size);
  if (static_cast<std::uint64_t>(st.st_size) != size) {
    why = std::to_string(st.st_size) + " bytes, not " + std::to_string(size);
    return -1;
  }
  Header got;
  if (!read_all(f.fd, &got, sizeof got) || std::memcmp(&got, &want, sizeof got) != 0) {
    why = "its header does not match";
    return -1;
  }
  const int fd = f.fd;
  f.fd = -1;
  return fd;
}

/// The cached data, or nullopt: `why` says what is wrong with the file ("" when there is none).
std::optional<CaseData> read_cached(const std::string& path, const Header& want, std::string& why) {
  Fd f{open_cached(path, want, why)};
  if (f.fd < 0) return std::nullopt;
  // one read each, straight into the vectors
  CaseData d;
  bool ok = false;
  if (want.dtype == 1) {
    d.input.f32.resize(want.n);
    ok = read_all(f.fd, d.input.f32.data(), d.input.bytes());
  } else {
    d.input.i32.resize(want.n);
    ok = read_all(f.fd, d.input.i32.data(), d.input.bytes());
  }
  d.expected.resize(want.n);
  if (!ok || !read_all(f.fd, d.expected.data(), want.n * sizeof(double))) {
    why = "short read";
    return std::nullopt;
  }
  return d;
}

/// Writes `d` to `path` atomically (files.h: a new 0600 temporary file, then a rename); "" or what
/// went wrong.
std::string store(const std::string& path, const Header& h, const CaseData& d) {
  return write_parts_atomic(path, {Part{const_cast<Header*>(&h), sizeof h},
                                   Part{const_cast<void*>(d.input.data()), d.input.bytes()},
                                   Part{const_cast<double*>(d.expected.data()), d.expected.size() * sizeof(double)}});
}

CaseData through_cache(const Entry& e, const std::string& cache_dir, CacheUse& use) {
  const std::string key = key_of(e);
  const std::string path = cache_dir + "/" + key + ".case";
  const Header want = header_of(e, key);
  std::string why;
  if (auto hit = read_cached(path, want, why)) {
    use = CacheUse::Hit;
    return std::move(*hit);
  }
  CaseData d = make_case_data(e);
  use = CacheUse::Fallback;
  if (!d.error.empty()) return d;  // nothing worth keeping
  if (!why.empty()) note("unusable file " + path + " (" + why + "): made again and replaced");
  const std::string problem = store(path, want, d);
  if (problem.empty()) use = CacheUse::Stored;
  else note(problem + " (the case's data is made here, not kept)");
  return d;
}

}  // namespace

CachedInput cached_input(const Entry& e, const std::string& cache_dir) {
  CachedInput in;
  if (cache_dir.empty()) return in;
  try {
    const std::string key = key_of(e);
    std::string why;
    in.fd = open_cached(cache_dir + "/" + key + ".case", header_of(e, key), why);
    in.offset = sizeof(Header);
    if (!why.empty()) note("unusable file for " + e.c.id + " (" + why + "): its input is made again");
  } catch (const std::exception& ex) {
    note(std::string("cannot use ") + cache_dir + ": " + ex.what());
  }
  return in;
}

CaseData case_data_for_run(const Entry& e, const std::string& cache_dir, bool device_checks) {
  if (!device_checks) return cached_case_data(e, cache_dir);
  if (cache_dir.empty()) {
    CaseData d;
    d.has_expected = false;
    try {
      d.input = make_case_input(e);
    } catch (const std::exception& ex) {
      d.error = ex.what();
    }
    return d;
  }
  const CachedInput in = cached_input(e, cache_dir);
  if (in.fd < 0) return cached_case_data(e, cache_dir);
  ::close(in.fd);
  CaseData d;
  d.in_cache = true;
  return d;
}

void complete_case_data(const Entry& e, const std::string& cache_dir, CaseData& d) {
  if (!d.error.empty()) return;
  if (d.in_cache) {
    d = cached_case_data(e, cache_dir);
    return;
  }
  if (d.has_expected) return;
  try {
    d.expected = case_oracle(e, d.input);
    d.has_expected = true;
  } catch (const std::exception& ex) {
    d.error = ex.what();
  }
}

std::string case_cache_path(const Entry& e, const std::string& cache_dir) {
  return cache_dir + "/" + key_of(e) + ".case";
}

CaseData cached_case_data(const Entry& e, const std::string& cache_dir, CacheUse* use) {
  CacheUse how = CacheUse::Off;
  CaseData d;
  if (cache_dir.empty()) {
    d = make_case_data(e);
  } else {
    try {
      d = through_cache(e, cache_dir, how);
    } catch (const std::exception& ex) {  // e.g. no memory for a read: make it the usual way
      note(std::string("cannot use ") + cache_dir + ": " + ex.what() + " (the case's data is made here)");
      how = CacheUse::Fallback;
      d = make_case_data(e);
    }
  }
  if (use) *use = how;
  return d;
}

}  // namespace scangrade::grader
