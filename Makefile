# ScanGrade: a thin wrapper over CMake (the build lives in build/).
#
#   make            build everything
#   make test       build your slots (student/) and test them on testcases/public.json, on the GPU,
#                   or on the CPU emulation backend when there is none
#   make check      the project's own suite: CPU tests and the reference solutions (instructors, CI)
#   make clean      remove build/
#
# Variables: SCANGRADE_BACKEND=gpu|emulate (default: gpu when nvidia-smi lists one, else emulate),
#            CUDA_ARCH=90 (GPU architecture; default: this machine's GPU, else sm_90 + PTX),
#            SUITE=path/to/suite.json (for make test), BUILD=build, JOBS=<cores>.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS := -DCMAKE_BUILD_TYPE=Release $(if $(CUDA_ARCH),-DCMAKE_CUDA_ARCHITECTURES=$(CUDA_ARCH))
BACKEND := $(or $(SCANGRADE_BACKEND),$(shell nvidia-smi -L >/dev/null 2>&1 && echo gpu || echo emulate))
ifeq ($(filter gpu emulate,$(BACKEND)),)
$(error SCANGRADE_BACKEND must be gpu or emulate, not '$(BACKEND)')
endif
STUDENT_TEST := scangrade_student_test$(if $(filter emulate,$(BACKEND)),_emu)
export SCANGRADE_BACKEND := $(BACKEND)

.PHONY: all configure test check clean

all: configure
	cmake --build $(BUILD) -j $(JOBS)

configure:
	@tools/deps.sh
	@if [ ! -f $(BUILD)/CMakeCache.txt ] || [ -n "$(CUDA_ARCH)" ]; then cmake -S . -B $(BUILD) $(CMAKE_FLAGS); fi

test: configure
	cmake --build $(BUILD) -j $(JOBS) --target $(STUDENT_TEST)
	$(BUILD)/$(STUDENT_TEST) $(if $(SUITE),--suite=$(SUITE))

check: all
	python3 testcases/generate.py --check
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD)
