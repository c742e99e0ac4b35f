// ScanGrade CPU emulator: stands in for the CUDA toolkit's device_launch_parameters.h
// (threadIdx, blockIdx, blockDim, gridDim, warpSize).
#pragma once

#ifndef __DEVICE_LAUNCH_PARAMETERS_H__
#define __DEVICE_LAUNCH_PARAMETERS_H__
#endif

#include "cuda_runtime.h"
