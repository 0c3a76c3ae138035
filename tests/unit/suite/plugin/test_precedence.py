"""CPU precedence of a timed spec's cluster: the tree it covers, the autogroup file, and a real tree."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nrop.suite.plugin import precedence


@pytest.mark.parametrize(
    ("root", "parents", "expected"),
    [
        (1, {}, [1]),
        (10, {11: 10, 12: 10, 13: 11, 20: 1}, [10, 11, 13, 12]),
        (11, {11: 10, 12: 10, 13: 11}, [11, 13]),
        (99, {11: 10}, [99]),  # gone since: itself only
    ],
    ids=["alone", "children-and-grandchildren-not-siblings", "a-subtree", "unknown-root"],
)  # fmt: skip
def test_descendants(root: int, parents: dict[int, int], expected: list[int]) -> None:
    assert precedence.descendants(root, parents) == expected


@pytest.mark.parametrize(
    ("tree", "parents", "threads", "before", "untouched", "expected"),
    [
        ([10], {}, {10: [10, 11]}, {10: 0}, set(), {}),
        ([10], {}, {10: [10, 11, 12]}, {10: 5}, set(), {12: 5}),
        ([10, 20, 30], {20: 10, 30: 20}, {10: [10], 20: [20], 30: [30, 31]}, {10: 3}, set(), {30: 3, 31: 3}),
        ([10, 20], {20: 10}, {10: [10], 20: [20, 21]}, {10: 0, 20: 7}, set(), {21: 7}),
        ([1, 40, 50], {40: 1, 50: 40}, {1: [11], 40: [40], 50: [50]}, {1: 0}, {40}, {}),
    ],
    ids=[
        "nothing-born",
        "a-thread-born-gets-its-process-value",
        "a-process-born-gets-its-nearest-ancestor-value",
        "the-nearest-ancestor-wins",
        "what-an-untouched-process-started-is-left",
    ],
)  # fmt: skip
def test_born_during(
    tree: list[int],
    parents: dict[int, int],
    threads: dict[int, list[int]],
    before: dict[int, int],
    untouched: set[int],
    expected: dict[int, int],
) -> None:
    seen = {10, 11, 20, 40}
    assert precedence.born_during(tree, parents, threads, seen, before, untouched) == expected


@pytest.mark.parametrize(
    ("text", "nice"),
    [
        ("/autogroup-42 nice 0\n", 0),
        ("/autogroup-7 nice -10", -10),
        ("", None),
        ("/autogroup-7 nice x", None),
    ],
)
def test_autogroup_nice(text: str, nice: int | None) -> None:
    assert precedence.autogroup_nice(text) == nice


_TREE = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
print(child.pid, flush=True)
time.sleep(60)
"""


@pytest.fixture
def tree() -> Iterator[tuple[int, int]]:
    """A process (its own session) with a child in a session of its own: (parent, child)."""
    parent = subprocess.Popen(
        [sys.executable, "-c", _TREE], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    yield parent.pid, child
    for pid in (child, parent.pid):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    parent.wait(10)


def _autogroup(pid: int) -> int | None:
    path = Path(f"/proc/{pid}/autogroup")
    return precedence.autogroup_nice(path.read_text()) if path.exists() else None


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may lower a nice value")
def test_a_tree_runs_ahead_while_the_block_runs_and_gets_its_values_back(tree: tuple[int, int]) -> None:
    parent, _ = tree
    before = {pid: (os.getpriority(os.PRIO_PROCESS, pid), _autogroup(pid)) for pid in tree}
    assert all(nice > precedence.NICE for nice, _ in before.values())
    with precedence.precedence(parent) as raised:
        assert raised >= 2
        for pid in tree:
            assert os.getpriority(os.PRIO_PROCESS, pid) == precedence.NICE
            if before[pid][1] is not None:
                assert _autogroup(pid) == precedence.NICE
    assert {pid: (os.getpriority(os.PRIO_PROCESS, pid), _autogroup(pid)) for pid in tree} == before


_SPAWNER = """
import signal, subprocess, sys, threading, time
def spawn(*_):
    thread = threading.Thread(target=time.sleep, args=(60,), daemon=True)
    thread.start()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    print(thread.native_id, child.pid, flush=True)
signal.signal(signal.SIGUSR1, spawn)
print("ready", flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may lower a nice value")
def test_threads_and_processes_born_during_the_block_get_the_value_from_before() -> None:
    spawner = subprocess.Popen(
        [sys.executable, "-c", _SPAWNER], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert spawner.stdout is not None
    try:
        assert spawner.stdout.readline() == "ready\n"
        nice = os.getpriority(os.PRIO_PROCESS, spawner.pid)
        with precedence.precedence(spawner.pid):
            spawner.send_signal(signal.SIGUSR1)
            born = [int(tid) for tid in spawner.stdout.readline().split()]
            assert [os.getpriority(os.PRIO_PROCESS, tid) for tid in born] == [precedence.NICE] * 2
        assert [os.getpriority(os.PRIO_PROCESS, tid) for tid in [spawner.pid, *born]] == [nice] * 3
    finally:
        os.killpg(spawner.pid, signal.SIGKILL)
        spawner.wait(10)


def test_a_tree_that_ended_is_left_alone() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    with precedence.precedence(int(done.stdout)) as raised:
        assert raised == 0
