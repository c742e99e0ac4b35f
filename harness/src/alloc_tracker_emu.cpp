// tracked_device_bytes() on the emulation backend: the emulator counts its allocations itself.
#include "scangrade/alloc_tracker.h"
#include "scangrade/emu.h"

namespace scangrade {

std::size_t tracked_device_bytes() { return emu::bytes_in_use() - emu::pool_bytes_in_use(); }

}  // namespace scangrade
