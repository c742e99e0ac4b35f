// ScanGrade CPU emulator: the emulated device's address space (arena.h).
#include "arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <string>

#include "scangrade/emu_slack.h"

namespace scangrade::emu::detail {
namespace {

// Reserved at the first allocation: the largest of these that the kernel grants (a few processes run
// under an address-space limit). PROT_NONE and MAP_NORESERVE: it costs neither memory nor commit.
constexpr std::size_t kReserveTries[] = {std::size_t{4} << 40, std::size_t{1} << 40, std::size_t{256} << 30,
                                         std::size_t{64} << 30};

constexpr int kGuardFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED;

std::size_t round_up(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }

class Arena {
 public:
  void* take(std::size_t span) {
    if (!reserve()) return nullptr;
    // first fit; the span is preceded by a granule whose last kMinSlack bytes are mapped (the front
    // slack) and followed by its guard
    const std::size_t need = kGranule + span + kGuard;
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < need) continue;
      const std::uintptr_t base = it->first;
      const std::size_t left = it->second - need;
      if (mmap(reinterpret_cast<void*>(base + kGranule - kMinSlack), kMinSlack, PROT_READ | PROT_WRITE, kGuardFlags,
               -1, 0) == MAP_FAILED)
        return nullptr;
      free_.erase(it);
      if (left > 0) free_[base + need] = left;
      return reinterpret_cast<void*>(base + kGranule);
    }
    errno = ENOMEM;
    return nullptr;
  }

  void give_back(void* p, std::size_t span) {
    auto base = reinterpret_cast<std::uintptr_t>(p) - kGranule;
    std::size_t size = kGranule + span + kGuard;
    // discard the pages and make the range (the front slack too) a guard again
    mmap(reinterpret_cast<void*>(base + kGranule - kMinSlack), kMinSlack + span, PROT_NONE, kGuardFlags, -1, 0);
    // coalesce with free neighbours
    auto next = free_.lower_bound(base);
    if (next != free_.end() && base + size == next->first) {
      size += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == base) {
        prev->second += size;
        return;
      }
    }
    free_[base] = size;
  }

  bool contains(std::uintptr_t a) const { return begin_ != 0 && a >= begin_ && a < end_; }

 private:
  bool reserve() {
    if (begin_ != 0) return true;
    if (failed_) return false;
    for (std::size_t bytes : kReserveTries) {
      void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) continue;
      auto raw = reinterpret_cast<std::uintptr_t>(p);
      begin_ = raw;
      end_ = raw + bytes;
      // spans start on a granule, after a leading guard (an access far before the first allocation faults)
      const std::uintptr_t first = round_up(raw, kGranule) + kGuard;
      free_[first] = end_ - first;
      return true;
    }
    failed_ = true;
    return false;
  }

  std::uintptr_t begin_ = 0, end_ = 0;
  bool failed_ = false;
  std::map<std::uintptr_t, std::size_t> free_;  // base -> bytes, coalesced
};

Arena& arena() {
  static Arena* a = new Arena;  // never destroyed: allocations may outlive static destructors
  return *a;
}

/// Read-write pages over [p, p + bytes) of a reserved span.
bool map_private(void* p, std::size_t bytes) {
  if (bytes == 0) return true;
  void* q = mmap(p, bytes, PROT_READ | PROT_WRITE, kGuardFlags, -1, 0);
  if (q == MAP_FAILED) return false;
  madvise(q, bytes, MADV_NOHUGEPAGE);  // a 2 MiB huge page would make every small allocation cost 2 MiB
  return true;
}

// ---- watched slack (emu_slack.h) ------------------------------------------------------------------

constexpr unsigned char kSlackByte = 0xA5;
constexpr unsigned char kPoisonByte = 0xFF;  // the runtime's poison, written after the fill up to a multiple of 256
constexpr std::size_t kWatchedTail = kMinSlack - 256;  // bytes watched after the end (inside the mapped slack)

struct Watch {
  bool on = false;
  std::map<std::uintptr_t, std::size_t> spans;  // allocation -> its size, made while watching
  std::string finding;                          // the first write found, "" while none
};

Watch& watch() {
  static Watch* w = new Watch;  // never destroyed, as the arena
  return *w;
}

void fill_slack(std::uintptr_t p, std::size_t size) {
  std::memset(reinterpret_cast<void*>(p - kMinSlack), kSlackByte, kMinSlack);
  std::memset(reinterpret_cast<void*>(p + size), kSlackByte, kWatchedTail);
}

/// The first byte of [from, from + bytes) that is not kSlackByte (nor, in its first `poisoned` bytes,
/// the poison byte), or bytes when none.
std::size_t first_changed(std::uintptr_t from, std::size_t bytes, std::size_t poisoned = 0) {
  const auto* b = reinterpret_cast<const unsigned char*>(from);
  for (std::size_t i = 0; i < bytes; ++i)
    if (b[i] != kSlackByte && !(i < poisoned && b[i] == kPoisonByte)) return i;
  return bytes;
}

/// Where a write landed around the allocation at p, "" when its slack is untouched.
std::string slack_written(std::uintptr_t p, std::size_t size) {
  const std::uintptr_t front = p - kMinSlack;
  if (std::size_t i = first_changed(front, kMinSlack); i < kMinSlack) {
    return "a write " + std::to_string(kMinSlack - i) + " bytes before the start of the " + std::to_string(size) +
           "-byte allocation the slot made";
  }
  if (std::size_t i = first_changed(p + size, kWatchedTail, round_up(size, 256) - size); i < kWatchedTail) {
    return (i == 0 ? std::string("a write just past the end") : "a write " + std::to_string(i) + " bytes past the end") +
           " of the " + std::to_string(size) + "-byte allocation the slot made";
  }
  return "";
}

void check_watched(std::uintptr_t p) {
  Watch& w = watch();
  auto it = w.spans.find(p);
  if (it == w.spans.end()) return;
  if (w.finding.empty()) w.finding = slack_written(p, it->second);
  w.spans.erase(it);
}

}  // namespace

std::size_t arena_mapped_size(std::size_t size) { return round_up(size + kMinSlack, kGranule); }

void* arena_map(std::size_t size) {
  const std::size_t span = arena_mapped_size(size);
  void* p = arena().take(span);
  if (p == nullptr) return nullptr;
  if (!map_private(p, span)) {
    const int err = errno;
    arena().give_back(p, span);
    errno = err;
    return nullptr;
  }
  if (watch().on) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    fill_slack(a, size);
    watch().spans[a] = size;
  }
  return p;
}

void* arena_map_file(int fd, std::size_t size) {
  const std::size_t span = arena_mapped_size(size);
  void* p = arena().take(span);
  if (p == nullptr) return nullptr;
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t file_bytes = round_up(size == 0 ? 1 : size, page);
  if (mmap(p, file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED ||
      !map_private(static_cast<char*>(p) + file_bytes, span - file_bytes)) {
    const int err = errno;
    arena().give_back(p, span);
    errno = err;
    return nullptr;
  }
  return p;
}

void arena_unmap(void* base, std::size_t size) {
  if (base == nullptr) return;
  check_watched(reinterpret_cast<std::uintptr_t>(base));
  arena().give_back(base, arena_mapped_size(size));
}

bool arena_contains(const void* p) { return arena().contains(reinterpret_cast<std::uintptr_t>(p)); }

}  // namespace scangrade::emu::detail

namespace scangrade::emu {

void watch_slack(bool on) {
  detail::Watch& w = detail::watch();
  w.on = on;
  w.spans.clear();
  w.finding.clear();
}

std::string slack_write() {
  detail::Watch& w = detail::watch();
  for (const auto& [p, size] : w.spans)
    if (w.finding.empty()) w.finding = detail::slack_written(p, size);
  return w.finding;
}

}  // namespace scangrade::emu
