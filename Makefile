# ScanGrade: a thin wrapper over CMake (the build lives in build/).
#
#   make            build everything
#   make test       build your slots (student/) and test them on testcases/public.json
#   make check      the project's own suite: CPU tests and the reference solutions (instructors, CI)
#   make clean      remove build/
#
# Variables: CUDA_ARCH=90 (GPU architecture; default: this machine's GPU, else sm_90 + PTX),
#            SUITE=path/to/suite.json (for make test), BUILD=build, JOBS=<cores>.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS := -DCMAKE_BUILD_TYPE=Release $(if $(CUDA_ARCH),-DCMAKE_CUDA_ARCHITECTURES=$(CUDA_ARCH))

.PHONY: all configure test check clean

all: configure
	cmake --build $(BUILD) -j $(JOBS)

configure:
	@tools/deps.sh
	@if [ ! -f $(BUILD)/CMakeCache.txt ] || [ -n "$(CUDA_ARCH)" ]; then cmake -S . -B $(BUILD) $(CMAKE_FLAGS); fi

test: configure
	cmake --build $(BUILD) -j $(JOBS) --target scangrade_student_test
	$(BUILD)/scangrade_student_test $(if $(SUITE),--suite=$(SUITE))

check: all
	python3 testcases/generate.py --check
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD)
