"""The embedded cluster's log lines as the suite's progress lines (nrop.suite.plugin.target)."""

from __future__ import annotations

import pytest

from nrop.suite.plugin import target


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (
            "2026-11-26 14:08:10,584 INFO nrop.localcluster.kubelet.kubelet: node worker-0 ready",
            "node worker-0 ready",
        ),
        ("2026-11-26 14:08:10,878 WARNING nrop.sched.scheduler: plugin left out", "WARNING: plugin left out"),
        ("a line that is not a log record", "a line that is not a log record"),
    ],
)
def test_progress_line(line: str, shown: str) -> None:
    assert target.progress_line(line) == shown
