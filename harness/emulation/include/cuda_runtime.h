// ScanGrade CPU emulator: stands in for the CUDA toolkit's cuda_runtime.h.
//
// Put harness/emulation/include first on the include path (the scangrade_emu CMake target does)
// and host code that includes <cuda_runtime.h> compiles unchanged against the emulator; student
// .cu files get it through rewrite.py. See scangrade/emu.h for the execution model.
#pragma once

#ifndef __CUDA_RUNTIME_H__
#define __CUDA_RUNTIME_H__
#endif

#include "cuda_runtime_api.h"
#include "scangrade/emu_device.h"
