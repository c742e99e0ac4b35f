"""The emulated kernel tests run several cases' children at once (SCANGRADE_TEST_JOBS, set by make
test's driver from --jobs): the screen and the exit status are those of one case at a time."""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import REAL_BUILD

SELFTEST = REAL_BUILD / "scangrade_selftest_emu"
# several slots, both dtypes, small and large cases, cases above the emulation cap (skipped)
FILTER = "*n1025*:*n100003*:*n1000003*:*n33554432*:HillisSteele/*"


def run_selftest(jobs: str | None, extra: list[str] | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SCANGRADE_TEST_JOBS"}
    if jobs is not None:
        env["SCANGRADE_TEST_JOBS"] = jobs
    return subprocess.run([str(SELFTEST), f"--gtest_filter={FILTER}", *(extra or [])], env=env,
                          capture_output=True, text=True, timeout=900)


needs_selftest = pytest.mark.skipif(not SELFTEST.is_file(), reason=f"{SELFTEST} is not built")


@needs_selftest
def test_several_at_once_prints_what_one_at_a_time_prints():
    one = run_selftest(None)
    assert "ScanGrade summary" in one.stdout and "passed" in one.stdout
    for jobs in ("2", "5"):
        many = run_selftest(jobs)
        assert (many.returncode, many.stdout) == (one.returncode, one.stdout), f"SCANGRADE_TEST_JOBS={jobs}"


@needs_selftest
def test_a_shuffled_order_reads_the_same_with_several_at_once():
    # the order is not known ahead: no case is started early, the output is still the same
    one = run_selftest("1", ["--gtest_shuffle", "--gtest_random_seed=3"])
    many = run_selftest("4", ["--gtest_shuffle", "--gtest_random_seed=3"])
    assert (many.returncode, many.stdout) == (one.returncode, one.stdout)
