"""The batch's judge queue: a free seat goes to the waiting submission expected to take longest."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from scangrade import batch, batch_class, batch_seats
from scangrade.batch_seats import Seats, expected_judge_s, previous_judge_s, suite_weights

REPO = Path(__file__).resolve().parents[2]


def test_a_free_seat_goes_to_the_longest_waiting_submission():
    seats = Seats(1)
    order: list[str] = []
    release = threading.Event()

    def holder():
        with seats.seat(0):
            release.wait(10)

    def waiter(name: str, expected_s: float):
        with seats.seat(expected_s):
            order.append(name)

    first = threading.Thread(target=holder)
    first.start()
    while seats.free:  # the only seat is taken
        time.sleep(0.01)
    waiters = [threading.Thread(target=waiter, args=(n, s)) for n, s in (("short", 1), ("long", 50), ("mid", 7), ("mid2", 7))]
    for w in waiters:
        w.start()
        time.sleep(0.05)  # they arrive in this order
    release.set()
    for t in [first, *waiters]:
        t.join(10)
    assert order == ["long", "mid", "mid2", "short"]


def test_seats_allow_as_many_judges_as_there_are_seats():
    seats = Seats(3)
    inside, most = 0, 0
    lock = threading.Lock()

    def judge():
        nonlocal inside, most
        with seats.seat(1):
            with lock:
                inside += 1
                most = max(most, inside)
            time.sleep(0.05)
            with lock:
                inside -= 1

    threads = [threading.Thread(target=judge) for _ in range(9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert most == 3 and seats.free == 3


def test_expected_time_comes_from_the_last_run_else_from_the_slots_that_compiled(tmp_path):
    weights = suite_weights([REPO / "testcases" / "public.json"])
    assert set(weights) == {"hillis_steele", "blelloch", "hierarchical", "single_pass"}
    # the slots with the 2^26-element cases weigh most
    assert weights["hierarchical"] > weights["hillis_steele"] and weights["single_pass"] > weights["blelloch"]
    build = tmp_path / "build.json"
    build.write_text(json.dumps({"status": "ok", "missing_slots": ["single_pass"], "failed_slots": [],
                                 "policy_violations": {"blelloch": "uses cub"}}))
    assert expected_judge_s(build, weights, None) == weights["hillis_steele"] + weights["hierarchical"]
    build.write_text(json.dumps({"status": "layout_error"}))
    assert expected_judge_s(build, weights, None) == 0
    assert expected_judge_s(tmp_path / "missing.json", weights, None) == 0
    assert expected_judge_s(build, weights, 42.5) == 42.5

    stamp = tmp_path / "stamp.json"
    assert previous_judge_s(stamp) is None
    stamp.write_text(json.dumps({"judge_phases": {"correctness": 3.0, "timing": 1.5, "sanitizer": 0.5,
                                                  "lock_wait": 9.0}}))
    assert previous_judge_s(stamp) == 5.0
    stamp.write_text("not json")
    assert previous_judge_s(stamp) is None


def test_judges_per_gpu_default_is_capped():
    """--jobs split over the GPUs, at most JUDGES_PER_GPU judges on one GPU; --judges-per-gpu wins."""
    def judges(argv):
        args = batch.parse_args(["subs", "--out", "out", *argv])
        batch_class.pick_gpus(args, "gpu")
        return args.judges_per_gpu

    assert judges(["--gpus", "0", "--jobs", "16"]) == batch_seats.JUDGES_PER_GPU == 8
    assert judges(["--gpus", "0,1", "--jobs", "16"]) == 8
    assert judges(["--gpus", "0,1,2,3", "--jobs", "16"]) == 4
    assert judges(["--gpus", "0", "--jobs", "4"]) == 4
    assert judges(["--gpus", "0", "--jobs", "16", "--judges-per-gpu", "12"]) == 12
