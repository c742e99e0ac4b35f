# ScanGrade: a thin wrapper over CMake (the build lives in build/).
#
#   make            build everything
#   make test       check student/ with the grader's file-name rules, build each slot on its own and
#                   test your slots on testcases/public.json, on the GPU, or on the CPU emulation
#                   backend when there is none (tools/student_test.py; FILTER='Blelloch/*' for some cases)
#   make check      the project's own suite: CPU, GPU and Python tests, the reference solutions and
#                   the whole gallery of known submissions with their verdicts (instructors, CI)
#   make grade      grade student/ (or SUBMISSION=folder|zip|tar.gz) with the public suite: a table
#                   and grading-results/<name>/results.json (+ Gradescope, PrairieLearn, Autolab, JUnit)
#   make demo       grade a bundled known-correct submission: what a full report looks like
#   make gallery    grade every gallery submission and compare each verdict with the expected one
#   make gradescope the Gradescope autograder zip (emulation backend): BUNDLE=..., BUNDLE_FLAGS="--hidden-suite F --secret-file S"
#   make batch      grade a folder of submissions: SUBMISSIONS=dir [OUT=dir]: gradebook.csv, report.html
#   make handout    the student tarball (stubs, contract, harness, emulation, public suite; no
#                   reference solutions, no hidden suites): HANDOUT=scangrade-handout.tar.gz
#   make clean      remove build/
#   make deps-test  install what only make check needs (tools/deps.sh test: Slurm, podman, pytest, ...)
#   make help       these targets in one screen
#
# Variables: SCANGRADE_BACKEND=gpu|emulate (default: gpu when nvidia-smi lists one and nvcc is found,
#            else emulate), NVCC=/path/to/nvcc (default: nvcc on PATH or in /usr/local/cuda/bin; without
#            one the build is for the CPU emulation backend only), CUDA_ARCH=90 (GPU architecture;
#            default: this machine's GPU, else sm_90 + PTX), SUITE=path/to/suite.json (make test, make
#            grade), SUBMISSION=path (make grade), GRADE_FLAGS="--hidden-suite F --secret-file S ..."
#            (make grade), BUILD=build, JOBS=<cores>, VERBOSE=1 (every command's output, not just one
#            line per stage; the logs are in $(BUILD)/logs/ otherwise).
# Each target first runs tools/deps.sh with what it needs (build, grade, batch or test; make deps-test:
# what only `make check` needs): as root it installs what is missing, else it says how.
BUILD ?= build
JOBS ?= $(shell nproc)
LOGS := $(BUILD)/logs
export SCANGRADE_LOG_DIR := $(LOGS)
NVCC ?= $(shell command -v nvcc 2>/dev/null || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })
GPU_FOUND := $(shell nvidia-smi -L >/dev/null 2>&1 && echo 1)
BACKEND := $(or $(SCANGRADE_BACKEND),$(if $(and $(GPU_FOUND),$(NVCC)),gpu,emulate))
ifeq ($(filter gpu emulate,$(BACKEND)),)
$(error SCANGRADE_BACKEND must be gpu or emulate, not '$(BACKEND)')
endif
ifeq ($(BACKEND)$(NVCC),gpu)
$(error SCANGRADE_BACKEND=gpu needs nvcc (the CUDA toolkit) on PATH, or NVCC=/path/to/nvcc)
endif
export SCANGRADE_BACKEND := $(BACKEND)
# Without nvcc: the judge and the CPU emulation backend only (no CUDA in CMake at all)
CMAKE_FLAGS := -DCMAKE_BUILD_TYPE=Release $(if $(CUDA_ARCH),-DCMAKE_CUDA_ARCHITECTURES=$(CUDA_ARCH)) \
               $(if $(NVCC),-DCMAKE_CUDA_COMPILER=$(NVCC),-DSCANGRADE_CUDA=OFF)
BUILT_FOR := $(if $(NVCC),the GPU and the CPU emulation backends,the CPU emulation backend: no nvcc found; kernels run on the CPU)
# what a target needs installed (tools/deps.sh's modes); prerequisites inherit it
DEPS := build
demo grade gallery: DEPS := grade
batch: DEPS := batch
check: DEPS := test
# Jinja2 and friends where tools/deps.sh put them for a Python that takes no pip packages (PEP 668):
# pip --target's folder, or Debian's python3-* packages unpacked without root
export PYTHONPATH := $(CURDIR)/.deps/python:$(CURDIR)/.deps/root/usr/lib/python3/dist-packages$(if $(PYTHONPATH),:$(PYTHONPATH))
STEP := tools/step.sh
# the grader (judge, sandbox, workers, reference), built once: the grading targets' first stage
GRADER := $(STEP) --once $(BUILD)/scangrade_judge $(LOGS)/grader.log "building the grader" -- \
          cmake --build $(BUILD) -j $(JOBS) --target scangrade_grader

.PHONY: all configure deps-test help test check grade demo gallery batch gradescope handout clean

all: configure
	@$(STEP) $(LOGS)/build.log "building everything" -- cmake --build $(BUILD) -j $(JOBS)

help:
	@echo "ScanGrade: make <target>   (README.md: the quickstart; grading/docs/: the rest)"
	@echo "  demo        grade a bundled correct submission: what a report looks like"
	@echo "  test        test your student/ slots on the public suite (GPU, else emulated)"
	@echo "  grade       grade student/ (or SUBMISSION=dir|zip) as the grader does"
	@echo "  batch       grade a class: SUBMISSIONS=dir [OUT=dir] (gradebook, report)"
	@echo "  gallery     grade every gallery entry and compare with its verdicts"
	@echo "  check       the project's own test suite (what CI runs; long)"
	@echo "  deps-test   install what only make check needs (Slurm, podman, pytest)"
	@echo "  gradescope  the Gradescope autograder zip (BUNDLE=..., BUNDLE_FLAGS=...)"
	@echo "  handout     the student tarball (HANDOUT=scangrade-handout.tar.gz)"
	@echo "  all         build everything (configure: CMake only)"
	@echo "  clean       remove the build folder (BUILD=build)"
	@echo "Variables: SCANGRADE_BACKEND=gpu|emulate SUITE= GRADE_FLAGS= JOBS= VERBOSE=1"

configure:
	@tools/deps.sh $(DEPS)
	@if [ ! -f $(BUILD)/CMakeCache.txt ] || [ -n "$(CUDA_ARCH)" ]; then \
	  $(STEP) --once $(BUILD)/CMakeCache.txt $(LOGS)/configure.log "configuring $(BUILD)/ for $(BUILT_FOR)" -- cmake -S . -B $(BUILD) $(CMAKE_FLAGS) \
	    $$([ -d .deps/root/usr ] && echo -DCMAKE_PREFIX_PATH=$$PWD/.deps/root/usr); fi

deps-test:
	@tools/deps.sh test

test: configure
	@python3 tools/student_test.py --build $(BUILD) --backend $(BACKEND) --jobs $(JOBS) $(if $(SUITE),--suite $(SUITE)) $(if $(FILTER),-- --gtest_filter='$(FILTER)')

check: all
	python3 testcases/generate.py --check
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

GRADE := python3 grading/grade.py --build-dir $(BUILD) --backend $(BACKEND) $(if $(SUITE),--suite $(SUITE))

grade: configure
	@$(GRADER)
	@$(GRADE) $(or $(SUBMISSION),student --out grading-results/student) $(GRADE_FLAGS) || test $$? -eq 1  # 1: graded, some case failed

demo: configure
	@$(GRADER)
	@$(GRADE) grading/gallery/correct_brent_kung $(GRADE_FLAGS) || test $$? -eq 1

gallery: configure
	@$(GRADER)
	@python3 grading/gallery.py --build-dir $(BUILD) --backend $(BACKEND)

# make batch SUBMISSIONS=dir SLURM=1 [SLURM_FLAGS="--partition gpu --time 1:00:00 --tasks 8"]: the same class
# graded on a Slurm cluster (one array job, then the gradebook; grading/docs/slurm.md). The backend is
# the grading nodes', not this machine's: SLURM_BACKEND=gpu (default) or emulate
# (or make ... SCANGRADE_BACKEND=emulate on make's command line).
BATCH_BACKEND := $(if $(SLURM),$(or $(SLURM_BACKEND),$(if $(filter command line,$(origin SCANGRADE_BACKEND)),$(SCANGRADE_BACKEND)),gpu),$(BACKEND))
batch: configure
	@$(GRADER)
	@python3 grading/batch.py $(SUBMISSIONS) --out $(or $(OUT),grading-results/batch) --build-dir $(BUILD) --backend $(BATCH_BACKEND) $(if $(SUITE),--suite $(SUITE)) $(if $(SLURM),--slurm $(SLURM_FLAGS)) $(GRADE_FLAGS)

gradescope:
	python3 grading/platforms/gradescope/make_bundle.py --out $(or $(BUNDLE),scangrade-gradescope.zip) $(BUNDLE_FLAGS)

handout:
	python3 tools/handout.py --out $(or $(HANDOUT),scangrade-handout.tar.gz)

clean:
	rm -rf $(BUILD)
