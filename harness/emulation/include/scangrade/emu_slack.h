// ScanGrade CPU emulator: writes into the slack around the allocations a slot makes.
//
// On a GPU a write just before or just past a small allocation lands in mapped memory (the same
// 2 MiB page holds neighbours and slack) and goes unnoticed by the hardware; compute-sanitizer's
// memcheck reports it, on the cases it checks. The emulator maps that slack too (src/arena.h) and,
// while watching, fills 64 KiB on each side of every new allocation with a byte pattern and reports
// the first byte that changed: when the allocation is freed, or when asked. The harness watches on
// the cases that memcheck checks on a GPU, so both backends judge the same cases the same way.
// Between the requested size and the next multiple of 256 the runtime's poison byte (0xFF) counts as
// untouched too. Reads are not seen (a read changes nothing).
#pragma once

#include <string>

namespace scangrade::emu {

/// Starts (true) or stops watching the allocations made from now on; forgets what was watched.
void watch_slack(bool on);

/// The first write found in the slack of a watched allocation (freed or live), "" when none:
/// "a write 4 bytes before the start of the 400-byte allocation the slot made".
std::string slack_write();

}  // namespace scangrade::emu
