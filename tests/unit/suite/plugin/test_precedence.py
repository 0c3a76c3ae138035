"""CPU precedence of a timed spec's cluster: the tree it covers, the autogroup file, and a real tree."""

from __future__ import annotations

import os
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


def test_a_tree_that_ended_is_left_alone() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    with precedence.precedence(int(done.stdout)) as raised:
        assert raised == 0
