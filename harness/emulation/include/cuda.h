// ScanGrade CPU emulator: stands in for the CUDA toolkit's cuda.h. The driver API is not emulated;
// this only makes the runtime types available to code that includes <cuda.h>.
#pragma once

#ifndef __cuda_cuda_h__
#define __cuda_cuda_h__
#endif
#ifndef CUDA_VERSION
#define CUDA_VERSION 13000
#endif

#include "cuda_runtime_api.h"
