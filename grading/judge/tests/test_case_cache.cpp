// The case cache (case_data.h): what it reads is what make_case_data makes, a second judge reads the
// file instead of making the data, and a bad file or an unusable folder only costs the time to make
// the data again.
//
// The figures for a 2^26-element case (not an assertion; prints make vs write vs read):
//   scangrade_case_cache_tests --gtest_also_run_disabled_tests --gtest_filter='*Bench*'
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#include "case_data.h"
#include "scangrade/inputs.h"

namespace scangrade::grader {
namespace {

namespace fs = std::filesystem;

Entry entry(const Suite& suite, DType dtype, ScanKind kind, ValueKind values, std::size_t n, std::uint64_t seed) {
  Case c{};
  c.id = "hierarchical." + std::string(name(dtype)) + ".n" + std::to_string(n) + "." + std::string(name(values)) +
         "." + std::string(name(kind));
  c.slot = Slot::Hierarchical;
  c.dtype = dtype;
  c.kind = kind;
  c.n = n;
  c.values = values;
  c.seed = seed;
  c.points = 1;
  c.visibility = Visibility::Visible;
  c.why = "test";
  return Entry{&suite, c, c};
}

/// The same data, bit for bit.
void expect_same(const CaseData& got, const CaseData& want) {
  ASSERT_TRUE(got.error.empty()) << got.error;
  ASSERT_TRUE(want.error.empty()) << want.error;
  EXPECT_EQ(got.input.i32, want.input.i32);
  ASSERT_EQ(got.input.f32.size(), want.input.f32.size());
  EXPECT_EQ(0, std::memcmp(got.input.f32.data(), want.input.f32.data(), want.input.f32.size() * sizeof(float)));
  ASSERT_EQ(got.expected.size(), want.expected.size());
  EXPECT_EQ(0, std::memcmp(got.expected.data(), want.expected.data(), want.expected.size() * sizeof(double)));
}

struct stat stat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(0, ::stat(path.c_str(), &st)) << path;
  return st;
}

std::size_t files_in(const std::string& dir) {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& f : fs::directory_iterator(dir)) ++count;
  return count;
}

class CaseCache : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/scangrade-case-cache-test-XXXXXX";
    ASSERT_NE(nullptr, ::mkdtemp(pattern.data()));
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }
  Suite suite_;
  std::string dir_;
};

TEST_F(CaseCache, WithoutAFolderItMakesTheData) {
  const Entry e = entry(suite_, DType::Int32, ScanKind::Inclusive, ValueKind::Random, 1000, 7);
  CacheUse use = CacheUse::Hit;
  expect_same(cached_case_data(e, "", &use), make_case_data(e));
  EXPECT_EQ(use, CacheUse::Off);
}

TEST_F(CaseCache, Int32AndFloatEqualMakeCaseDataAndTheSecondCallReadsTheFile) {
  const Entry cases[] = {
      entry(suite_, DType::Int32, ScanKind::Inclusive, ValueKind::Random, 100003, 11),
      entry(suite_, DType::Float32, ScanKind::Exclusive, ValueKind::Real, 65537, 12),
      entry(suite_, DType::Int32, ScanKind::Exclusive, ValueKind::Large, 4099, 13),
      entry(suite_, DType::Float32, ScanKind::Inclusive, ValueKind::Random, 0, 14),  // n = 0: a header alone
  };
  for (const Entry& e : cases) {
    SCOPED_TRACE(e.c.id);
    const CaseData made = make_case_data(e);
    CacheUse use = CacheUse::Off;
    expect_same(cached_case_data(e, dir_, &use), made);
    EXPECT_EQ(use, CacheUse::Stored);
    const std::string path = case_cache_path(e, dir_);
    ASSERT_TRUE(fs::is_regular_file(path));
    EXPECT_EQ((fs::status(path).permissions() & fs::perms::all), fs::perms::owner_read | fs::perms::owner_write);
    const struct stat written = stat_of(path);
    expect_same(cached_case_data(e, dir_, &use), made);
    EXPECT_EQ(use, CacheUse::Hit);
    const struct stat read = stat_of(path);  // the same file, not written again
    EXPECT_EQ(written.st_ino, read.st_ino);
    EXPECT_EQ(written.st_mtim.tv_sec, read.st_mtim.tv_sec);
    EXPECT_EQ(written.st_mtim.tv_nsec, read.st_mtim.tv_nsec);
  }
  EXPECT_EQ(files_in(dir_), std::size(cases));  // no temporary file left behind
}

TEST_F(CaseCache, TheKeyHoldsTheSeedTheKindAndTheDtype) {
  const Entry e = entry(suite_, DType::Int32, ScanKind::Inclusive, ValueKind::Random, 5000, 21);
  Entry hidden = e;
  hidden.input_case.seed = mix_secret(e.c.seed, "secret");  // as select_cases does for hidden suites
  Entry exclusive = e;
  exclusive.c.kind = exclusive.input_case.kind = ScanKind::Exclusive;
  Entry f32 = e;
  f32.c.dtype = f32.input_case.dtype = DType::Float32;
  const std::string p = case_cache_path(e, dir_);
  EXPECT_NE(p, case_cache_path(hidden, dir_));
  EXPECT_NE(p, case_cache_path(exclusive, dir_));
  EXPECT_NE(p, case_cache_path(f32, dir_));
  for (const Entry* x : std::initializer_list<const Entry*>{&e, &hidden, &exclusive, &f32}) {
    CacheUse use = CacheUse::Off;
    expect_same(cached_case_data(*x, dir_, &use), make_case_data(*x));
    EXPECT_EQ(use, CacheUse::Stored);
    expect_same(cached_case_data(*x, dir_, &use), make_case_data(*x));
    EXPECT_EQ(use, CacheUse::Hit);
  }
}

TEST_F(CaseCache, TruncatedOrGarbageFilesAreReplaced) {
  const Entry e = entry(suite_, DType::Float32, ScanKind::Inclusive, ValueKind::Real, 30001, 31);
  const CaseData made = make_case_data(e);
  const std::string path = case_cache_path(e, dir_);
  CacheUse use = CacheUse::Off;
  cached_case_data(e, dir_, &use);
  ASSERT_EQ(use, CacheUse::Stored);
  const auto size = fs::file_size(path);

  const auto damage = [&](const char* what, auto&& how) {
    SCOPED_TRACE(what);
    how();
    expect_same(cached_case_data(e, dir_, &use), made);
    EXPECT_EQ(use, CacheUse::Stored);  // made again and written over the bad file
    EXPECT_EQ(fs::file_size(path), size);
    expect_same(cached_case_data(e, dir_, &use), made);
    EXPECT_EQ(use, CacheUse::Hit);
  };
  damage("truncated", [&] { fs::resize_file(path, size / 2); });
  damage("empty", [&] { fs::resize_file(path, 0); });
  damage("one byte more", [&] { fs::resize_file(path, size + 1); });
  damage("garbage of the right size", [&] {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << std::string(size, 'x');
  });
  damage("another case's header", [&] {
    const Entry other = entry(suite_, DType::Float32, ScanKind::Inclusive, ValueKind::Real, 30001, 32);
    cached_case_data(other, dir_);
    fs::copy_file(case_cache_path(other, dir_), path, fs::copy_options::overwrite_existing);
  });
  damage("writable by others", [&] { fs::permissions(path, fs::perms::group_write | fs::perms::others_write, fs::perm_options::add); });
  if (::geteuid() == 0)
    damage("another user's file", [&] { ASSERT_EQ(0, ::chown(path.c_str(), 65534, 65534)); });
  // a folder in its place cannot be renamed over: the data is made, nothing is written
  fs::remove(path);
  fs::create_directory(path);
  expect_same(cached_case_data(e, dir_, &use), made);
  EXPECT_EQ(use, CacheUse::Fallback);
  EXPECT_TRUE(fs::is_directory(path));
  // a symbolic link is not followed: the link is replaced, its target untouched
  const std::string target = dir_ + "/target";
  std::ofstream(target) << "not a case";
  fs::remove(path);  // the folder
  fs::create_symlink(target, path);
  expect_same(cached_case_data(e, dir_, &use), made);
  EXPECT_EQ(use, CacheUse::Stored);
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(fs::file_size(target), 10u);
}

TEST_F(CaseCache, AnUnusableFolderFallsBack) {
  const Entry e = entry(suite_, DType::Int32, ScanKind::Exclusive, ValueKind::Random, 20000, 41);
  const CaseData made = make_case_data(e);
  CacheUse use = CacheUse::Off;
  expect_same(cached_case_data(e, dir_ + "/missing", &use), made);  // no such folder
  EXPECT_EQ(use, CacheUse::Fallback);
  const std::string file = dir_ + "/a-file";
  std::ofstream(file) << "x";
  expect_same(cached_case_data(e, file, &use), made);  // not a folder
  EXPECT_EQ(use, CacheUse::Fallback);
  if (::geteuid() != 0) {  // root writes anywhere
    const std::string ro = dir_ + "/read-only";
    fs::create_directory(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    expect_same(cached_case_data(e, ro, &use), made);
    EXPECT_EQ(use, CacheUse::Fallback);
    fs::permissions(ro, fs::perms::owner_all);
  }
}

TEST_F(CaseCache, JudgesMakingTheSameCaseAtOnce) {
  const Entry e = entry(suite_, DType::Float32, ScanKind::Exclusive, ValueKind::Random, 200000, 51);
  const CaseData made = make_case_data(e);
  std::vector<CaseData> got(4);
  std::vector<std::thread> judges;
  for (CaseData& d : got) judges.emplace_back([&] { d = cached_case_data(e, dir_); });
  for (std::thread& t : judges) t.join();
  for (const CaseData& d : got) expect_same(d, made);
  EXPECT_EQ(files_in(dir_), 1u);
  CacheUse use = CacheUse::Off;
  expect_same(cached_case_data(e, dir_, &use), made);
  EXPECT_EQ(use, CacheUse::Hit);
}

double seconds(const std::function<void()>& f) {
  const auto t = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Not a timed assertion: prints what a 2^26-element int32 inclusive case costs made, written, read.
TEST_F(CaseCache, DISABLED_BenchTwoTo26Int32Inclusive) {
  std::string dir = dir_;
  if (::access("/dev/shm", W_OK) == 0) {  // where the batch puts it
    std::string pattern = "/dev/shm/scangrade-case-cache-bench-XXXXXX";
    ASSERT_NE(nullptr, ::mkdtemp(pattern.data()));
    dir = pattern;
  }
  const Entry e = entry(suite_, DType::Int32, ScanKind::Inclusive, ValueKind::Random, std::size_t{1} << 26, 61);
  CaseData d;
  const double make_s = seconds([&] { d = make_case_data(e); });
  CacheUse use = CacheUse::Off;
  const double store_s = seconds([&] { d = cached_case_data(e, dir, &use); });
  EXPECT_EQ(use, CacheUse::Stored);
  double hit_s = 1e9;
  for (int i = 0; i < 3; ++i) {
    hit_s = std::min(hit_s, seconds([&] { d = cached_case_data(e, dir, &use); }));
    EXPECT_EQ(use, CacheUse::Hit);
  }
  d = CaseData();
  // what any producer of the two vectors pays: fresh pages (page faults) and zeroing
  const double alloc_s = seconds([&] {
    d.input.i32.resize(e.c.n);
    d.expected.resize(e.c.n);
  });
  std::printf("n = 2^26 int32 inclusive, cache in %s (%.0f MiB file):\n"
              "  make_case_data                      %.3f s\n"
              "  miss (make + write file)            %.3f s\n"
              "  hit (read file), best of 3          %.3f s   (%.1fx faster than making)\n"
              "  of which any 768 MiB of vectors     %.3f s   (allocating and zeroing them alone)\n",
              dir.c_str(), static_cast<double>(fs::file_size(case_cache_path(e, dir))) / (1 << 20), make_s, store_s,
              hit_s, make_s / hit_s, alloc_s);
  if (dir != dir_) fs::remove_all(dir);
}

}  // namespace
}  // namespace scangrade::grader
