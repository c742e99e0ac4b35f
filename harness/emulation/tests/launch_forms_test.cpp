// Runs every launch form of tests/launch_forms.cu (compiled through rewrite.py) on the emulator:
// each must launch the right kernel with the right configuration and arguments, and the launches
// that must fail report the student's line.
#include <gtest/gtest.h>

#include <string>

#include <cuda_runtime.h>
#include <scangrade/emu.h>

#include "launch_forms.h"

namespace {

class LaunchFormsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scangrade::emu::reset();
    ASSERT_EQ(cudaMalloc(&out_, 4 * sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMemset(out_, 0, 4 * sizeof(int)), cudaSuccess);
  }
  void TearDown() override { scangrade::emu::reset(); }

  int* out_ = nullptr;
};

class LaunchForm : public LaunchFormsTest, public ::testing::WithParamInterface<launch_forms::Form> {};

TEST_P(LaunchForm, RunsTheKernelWithItsConfigurationAndArguments) {
  const launch_forms::Form& form = GetParam();
  const auto before = scangrade::emu::stats().launches;
  ASSERT_EQ(form.launch(out_), cudaSuccess) << scangrade::emu::last_diagnostic();
  EXPECT_EQ(scangrade::emu::stats().launches - before, form.launches);
  int got[4] = {};
  ASSERT_EQ(cudaMemcpy(got, out_, sizeof(got), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got[0], form.value) << "the kernel's value argument (or the wrong kernel ran)";
  EXPECT_EQ(got[1], static_cast<int>(form.grid)) << "gridDim.x";
  EXPECT_EQ(got[2], static_cast<int>(form.block)) << "blockDim.x";
  EXPECT_EQ(got[3], static_cast<int>(form.grid * form.block * form.launches)) << "threads that ran";
}

INSTANTIATE_TEST_SUITE_P(Emu, LaunchForm,
                         ::testing::ValuesIn(launch_forms::kForms, launch_forms::kForms + launch_forms::kFormCount),
                         [](const ::testing::TestParamInfo<launch_forms::Form>& info) {
                           return std::string(info.param.name);
                         });

// where: "launch_forms.cu:<line>" in the diagnostic
std::string site(int line) { return "launch_forms.cu:" + std::to_string(line); }

TEST_F(LaunchFormsTest, InvalidConfigurationInAMacroNamesTheLineWhereTheMacroIsUsed) {
  int line = 0;
  EXPECT_EQ(launch_forms::zero_grid_in_macro(out_, &line), cudaErrorInvalidConfiguration);
  EXPECT_NE(std::string(scangrade::emu::last_diagnostic()).find(site(line)), std::string::npos)
      << scangrade::emu::last_diagnostic();
}

TEST_F(LaunchFormsTest, LaunchKernelReturnsTheConfigurationErrorAndLeavesItForGetLastError) {
  int line = 0;
  EXPECT_EQ(launch_forms::zero_grid_through_launch_kernel(out_, &line), cudaErrorInvalidConfiguration);
  EXPECT_NE(std::string(scangrade::emu::last_diagnostic()).find(site(line)), std::string::npos)
      << scangrade::emu::last_diagnostic();
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(LaunchFormsTest, LaunchKernelExNamesTheCallersLine) {
  int line = 0;
  EXPECT_EQ(launch_forms::zero_grid_through_launch_kernel_ex(out_, &line), cudaErrorInvalidConfiguration);
  EXPECT_NE(std::string(scangrade::emu::last_diagnostic()).find(site(line)), std::string::npos)
      << scangrade::emu::last_diagnostic();
}

TEST_F(LaunchFormsTest, LaunchKernelOfAnAddressThatIsNoKernelFails) {
  int line = 0;
  EXPECT_EQ(launch_forms::launch_kernel_of_a_host_function(out_, &line), cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(scangrade::emu::stats().launches, 0u);
}

TEST_F(LaunchFormsTest, HostCodeBesideTheLaunchesIsUnchanged) {
  EXPECT_EQ(launch_forms::shifts(8), 32 + 4 + 0 + 1);
}

}  // namespace
