// ScanGrade CPU emulator: operations whose result C++ leaves undefined, as the GPU computes them.
//
// The emulated build compiles student code with GCC's checks for undefined shifts, float-to-integer
// conversions out of range and integer division by zero or overflow (SCANGRADE_EMU_STUDENT_FLAGS in
// ../CMakeLists.txt), and this file defines the functions those checks call (the ABI of GCC's and
// LLVM's UndefinedBehaviorSanitizer runtime, which is not linked): each records the operation, with
// the student's file:line (the rewriter's #line), for undefined_operations(). The check runs before the
// operation; the CPU then computes it:
//   * a shift by a count < 0 or >= the width: the CPU takes the count modulo the width (x86 shl/shr/sar),
//     the GPU clamps it (PTX shl/shr: x << 32 == 0, unsigned x >> 32 == 0, signed x >> 32 == 0 or -1).
//     The shifts in device code and in function-like macros reach scangrade/emu_shift.h (rewrite.py),
//     which computes the GPU's value and records it here (record_clamped_shift); a shift GCC's check
//     still sees (host code, an object-like macro) keeps the CPU's value, and the message says what the
//     GPU gives instead;
//   * a float converted to an integer type it does not fit (or NaN): x86 gives 0x80000000 (or the low
//     bits of a 64-bit conversion), PTX cvt.rzi saturates to the type's range (NaN gives 0). The CPU's
//     value stays;
//   * an integer division or remainder by zero, or INT_MIN / -1: x86 div/idiv trap (SIGFPE), the GPU
//     does not. During a kernel the SIGFPE handler below completes the instruction with the GPU's
//     value instead (a quotient and remainder with every bit set for a zero divisor, the wrapped
//     quotient and remainder 0 for INT_MIN / -1), so the case goes on as on the GPU.
#include <signal.h>
#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "internal.h"
#include "scangrade/emu_shift.h"

namespace scangrade::emu::detail {
namespace {

struct SourceLocation {
  const char* file;
  std::uint32_t line;
  std::uint32_t column;
};
struct TypeDescriptor {
  std::uint16_t kind;  // 0 integer, 1 float
  std::uint16_t info;  // integer: bit 0 signed, bits 1.. log2(width); float: width
  char name[1];
};
struct ShiftData {
  SourceLocation loc;
  const TypeDescriptor* lhs;
  const TypeDescriptor* rhs;
};
struct DivData {
  SourceLocation loc;
  const TypeDescriptor* type;
};
struct CastData {
  SourceLocation loc;
  const TypeDescriptor* from;
  const TypeDescriptor* to;
};
using ValueHandle = std::uintptr_t;

constexpr std::size_t kMaxRecorded = 8;

struct Recorded {
  std::string file;
  std::uint32_t line = 0;
  std::string what;  // the first occurrence, described
  std::uint64_t count = 0;
};
std::vector<Recorded> g_recorded;
std::uint64_t g_unrecorded = 0;  // occurrences at places past the first kMaxRecorded
bool g_differs = false;          // an operation whose CPU value is not the GPU's ran (shift, conversion)

/// The type's name without the quotes GCC puts around it ("'unsigned int'").
std::string type_name(const TypeDescriptor* t) {
  std::string name = t->name;
  if (name.size() >= 2 && name.front() == '\'' && name.back() == '\'') name = name.substr(1, name.size() - 2);
  return name;
}

bool type_signed(const TypeDescriptor* t) { return t->kind == 0 && (t->info & 1) != 0; }
unsigned type_width(const TypeDescriptor* t) { return t->kind == 0 ? 1u << (t->info >> 1) : t->info; }

std::int64_t int_value(const TypeDescriptor* t, ValueHandle v) {
  if (type_signed(t)) return static_cast<std::int64_t>(v);  // sign-extended by the caller
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(v));
}
std::string int_text(const TypeDescriptor* t, ValueHandle v) {
  return type_signed(t) ? std::to_string(static_cast<std::int64_t>(v)) : std::to_string(static_cast<std::uint64_t>(v));
}
double float_value(const TypeDescriptor* t, ValueHandle v) {
  if (t->info == 32) {
    float f;
    const std::uint32_t bits = static_cast<std::uint32_t>(v);
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  if (t->info == 64) {
    double d;
    std::memcpy(&d, &v, sizeof d);
    return d;
  }
  return std::numeric_limits<double>::quiet_NaN();  // long double: passed by pointer, not described
}

void record(const SourceLocation& loc, std::string what) {
  const std::string file = loc.file != nullptr ? loc.file : "?";
  for (Recorded& r : g_recorded)
    if (r.line == loc.line && r.file == file) {
      ++r.count;
      return;
    }
  if (g_recorded.size() >= kMaxRecorded) {
    ++g_unrecorded;
    return;
  }
  const std::string where = current_kernel_where();
  if (!where.empty()) what += " (first in " + where + ")";
  g_recorded.push_back(Recorded{file, loc.line, std::move(what), 1});
}

// The division check runs just before the instruction: the SIGFPE handler reads what it saw.
enum class PendingDivision { None, ByZero, Overflow };
PendingDivision g_pending_division = PendingDivision::None;

}  // namespace
}  // namespace scangrade::emu::detail

using namespace scangrade::emu::detail;

extern "C" {

void __ubsan_handle_shift_out_of_bounds(ShiftData* data, ValueHandle lhs, ValueHandle rhs) {
  const unsigned width = type_width(data->lhs);
  const std::int64_t count = int_value(data->rhs, rhs);
  std::string what = "a shift of the " + std::to_string(width) + "-bit " + type_name(data->lhs) + " " +
                     int_text(data->lhs, lhs) + " by " + std::to_string(count) + " bits";
  if (count >= 0 && count < static_cast<std::int64_t>(width)) {
    // a signed left shift that overflows (checked only with shift-base): defined on both machines here
    what += ", which overflows its type (the GPU and the emulator both keep the low bits)";
  } else {
    const std::int64_t masked = count & static_cast<std::int64_t>(width - 1);
    what += ": undefined in C++ (a shift count must be 0 to " + std::to_string(width - 1) +
            "). On the GPU the count is clamped to the width: `x << " + std::to_string(count) +
            "` is 0, and so is `x >> " + std::to_string(count) + "` for an unsigned x (a signed x >> " +
            std::to_string(count) + " is 0 or -1 by its sign). The emulator's CPU takes the count modulo " +
            std::to_string(width) + " (a shift by " + std::to_string(masked) +
            "), so this value differs from the GPU's: keep the count below " + std::to_string(width);
    g_differs = true;
  }
  record(data->loc, std::move(what));
}
void __ubsan_handle_shift_out_of_bounds_abort(ShiftData* data, ValueHandle lhs, ValueHandle rhs) {
  __ubsan_handle_shift_out_of_bounds(data, lhs, rhs);
}

void __ubsan_handle_float_cast_overflow(CastData* data, ValueHandle from) {
  const double v = float_value(data->from, from);
  const TypeDescriptor* to = data->to;
  const unsigned width = type_width(to);
  std::string gpu;
  if (std::isnan(v)) {
    gpu = "0";
  } else if (type_signed(to)) {
    gpu = v < 0 ? std::to_string(width >= 64 ? std::numeric_limits<std::int64_t>::min()
                                             : -(std::int64_t(1) << (width - 1)))
                : std::to_string(width >= 64 ? std::numeric_limits<std::int64_t>::max()
                                             : (std::int64_t(1) << (width - 1)) - 1);
  } else {
    gpu = v < 0 ? "0"
                : std::to_string(width >= 64 ? std::numeric_limits<std::uint64_t>::max()
                                             : (std::uint64_t(1) << width) - 1);
  }
  char value[64];
  std::snprintf(value, sizeof value, data->from->info == 32 ? "%.7g" : "%.16g", v);
  const std::string cpu = type_signed(to) && width == 32 ? "gives -2147483648 (x86's value for any int out of range)"
                                                         : "gives another value";
  std::string what = "the " + type_name(data->from) + " " + value + " converted to " + type_name(to) +
                     ", outside its range: undefined in C++. On the GPU the conversion saturates (it gives " + gpu +
                     "); the emulator's CPU " + cpu + ", so this value differs from the GPU's";
  g_differs = true;
  record(data->loc, std::move(what));
}
void __ubsan_handle_float_cast_overflow_abort(CastData* data, ValueHandle from) {
  __ubsan_handle_float_cast_overflow(data, from);
}

void __ubsan_handle_divrem_overflow(DivData* data, ValueHandle lhs, ValueHandle rhs) {
  const bool by_zero = int_value(data->type, rhs) == 0;
  g_pending_division = by_zero ? PendingDivision::ByZero : PendingDivision::Overflow;
  std::string what;
  if (by_zero) {
    what = "an integer division or remainder of " + int_text(data->type, lhs) + " by zero (" + type_name(data->type) +
           "): undefined in C++. The GPU does not stop: its quotient and remainder have every bit set (-1, or " +
           "the largest unsigned value), and the emulator gives the same";
  } else {
    what = "the division " + int_text(data->type, lhs) + " / -1 (" + type_name(data->type) +
           "), whose quotient does not fit the type: undefined in C++. The GPU wraps it (the quotient is " +
           int_text(data->type, lhs) + ", the remainder 0), and the emulator gives the same";
  }
  record(data->loc, std::move(what));
}
void __ubsan_handle_divrem_overflow_abort(DivData* data, ValueHandle lhs, ValueHandle rhs) {
  __ubsan_handle_divrem_overflow(data, lhs, rhs);
}

}  // extern "C"

namespace scangrade::emu::detail {

// A shift that rewrite.py routed through scangrade/emu_shift.h: its value is already the GPU's.
void record_clamped_shift(const shift_site& at, bool left, unsigned width, bool is_signed, unsigned long long bits,
                          long long count) {
  const std::string type = width == 64 ? (is_signed ? "long" : "unsigned long") : (is_signed ? "int" : "unsigned int");
  const std::string value = is_signed ? std::to_string(static_cast<long long>(bits)) : std::to_string(bits);
  const std::string gpu = left ? "0" : is_signed && static_cast<long long>(bits) < 0 ? "-1" : "0";
  std::string what = "a shift of the " + std::to_string(width) + "-bit " + type + " " + value + " by " +
                     std::to_string(count) + " bits: undefined in C++ (a shift count must be 0 to " +
                     std::to_string(width - 1) + "). The GPU clamps the count to the width, and the emulator " +
                     "computes it the same way: `" + value + (left ? " << " : " >> ") + std::to_string(count) +
                     "` gave " + gpu + " (a CPU would have taken the count modulo " + std::to_string(width) +
                     "). C++ promises neither: keep the count below " + std::to_string(width);
  record(SourceLocation{at.file, at.line, 0}, std::move(what));
}

namespace {

struct sigaction g_old_fpe;

/// Completes a trapping x86-64 `div`/`idiv` with the GPU's result. False when the instruction at
/// the faulting address is not one (then the signal is not ours to handle).
bool complete_division(ucontext_t* uc) {
#if defined(__x86_64__)
  greg_t* regs = uc->uc_mcontext.gregs;
  const auto* code = reinterpret_cast<const unsigned char*>(regs[REG_RIP]);
  std::size_t at = 0;
  bool operand16 = false, rex_w = false;
  for (;; ++at) {  // legacy prefixes, then an optional REX
    const unsigned char b = code[at];
    if (b == 0x66) operand16 = true;
    else if (b == 0x67 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65) continue;
    else break;
  }
  if ((code[at] & 0xf0) == 0x40) rex_w = (code[at++] & 0x08) != 0;
  const unsigned char opcode = code[at++];
  if (opcode != 0xf6 && opcode != 0xf7) return false;
  const unsigned char modrm = code[at++];
  const unsigned mod = modrm >> 6, reg = (modrm >> 3) & 7, rm = modrm & 7;
  if (reg != 6 && reg != 7) return false;  // 6: div, 7: idiv
  if (mod != 3) {
    if (rm == 4) {
      const unsigned char sib = code[at++];
      if (mod == 0 && (sib & 7) == 5) at += 4;
    }
    if (mod == 0 && rm == 5) at += 4;  // RIP-relative
    else if (mod == 1) at += 1;
    else if (mod == 2) at += 4;
  }
  const bool signed_division = reg == 7;
  const bool by_zero = g_pending_division != PendingDivision::Overflow;
  g_pending_division = PendingDivision::None;
  const unsigned width = opcode == 0xf6 ? 8 : rex_w ? 64 : operand16 ? 16 : 32;
  const std::uint64_t mask = width == 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << width) - 1;
  std::uint64_t quotient, remainder;
  if (by_zero || !signed_division) {
    quotient = remainder = mask;  // every bit set
  } else {
    quotient = static_cast<std::uint64_t>(regs[REG_RAX]) & mask;  // INT_MIN / -1 wraps to INT_MIN
    remainder = 0;
  }
  auto& rax = regs[REG_RAX];
  auto& rdx = regs[REG_RDX];
  if (width == 8) {  // AL = quotient, AH = remainder
    rax = static_cast<greg_t>((static_cast<std::uint64_t>(rax) & ~std::uint64_t(0xffff)) | (quotient & 0xff) |
                              ((remainder & 0xff) << 8));
  } else if (width == 16) {
    rax = static_cast<greg_t>((static_cast<std::uint64_t>(rax) & ~std::uint64_t(0xffff)) | quotient);
    rdx = static_cast<greg_t>((static_cast<std::uint64_t>(rdx) & ~std::uint64_t(0xffff)) | remainder);
  } else {  // a 32-bit result clears the upper half, as the instruction would
    rax = static_cast<greg_t>(quotient);
    rdx = static_cast<greg_t>(remainder);
  }
  regs[REG_RIP] += static_cast<greg_t>(at);
  return true;
#else
  (void)uc;
  return false;
#endif
}

void sigfpe_handler(int sig, siginfo_t* info, void* context) {
  if (in_kernel_thread() && info != nullptr && info->si_code == FPE_INTDIV &&
      complete_division(static_cast<ucontext_t*>(context)))
    return;
  // not a division in a kernel thread: what was installed before us, and the instruction again
  sigaction(SIGFPE, &g_old_fpe, nullptr);
  (void)sig;
}

}  // namespace

void install_division_handler() {
  struct sigaction sa {};
  sa.sa_sigaction = sigfpe_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGFPE, &sa, &g_old_fpe);
}

void restore_division_handler() { sigaction(SIGFPE, &g_old_fpe, nullptr); }

}  // namespace scangrade::emu::detail

namespace scangrade::emu {

std::string undefined_operations() {
  std::string out;
  for (const detail::Recorded& r : detail::g_recorded) {
    if (!out.empty()) out += "\n";
    out += r.file + ":" + std::to_string(r.line) + ": " + r.what;
    if (r.count > 1) out += " [" + std::to_string(r.count) + " times here]";
  }
  if (detail::g_unrecorded > 0)
    out += "\n(and " + std::to_string(detail::g_unrecorded) + " more at other places)";
  return out;
}

bool undefined_operations_differ_from_gpu() { return detail::g_differs; }

void clear_undefined_operations() {
  detail::g_differs = false;
  detail::g_recorded.clear();
  detail::g_unrecorded = 0;
  detail::g_pending_division = detail::PendingDivision::None;
}

}  // namespace scangrade::emu
