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


def test_the_cluster_environment_survives_a_variable_another_thread_removes(monkeypatch) -> None:
    """pytest pops PYTEST_CURRENT_TEST on the main thread while a cluster starts on another one."""

    class Racing(dict):
        def __iter__(self):  # the listing still has the key; it is gone when read
            keys = list(super().__iter__())
            self.pop("PYTEST_CURRENT_TEST", None)
            return iter(keys)

    environ = Racing(PATH="/bin", PYTEST_CURRENT_TEST="x (setup)", KUBECONFIG="/k")
    monkeypatch.setattr(target.os, "environ", environ)
    assert target.environment_copy(without=("KUBECONFIG",)) == {"PATH": "/bin"}
    racing_again = Racing(PATH="/bin", PYTEST_CURRENT_TEST="x (call)")
    with pytest.raises(KeyError):  # what the comprehension over items() did
        {k: racing_again[k] for k in racing_again}
