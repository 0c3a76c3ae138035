"""The embedded cluster's log lines as the suite's progress lines, its environment, and where
its state goes (nrop.suite.plugin.target)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


MiB = 2**20
SHM = target.MEMORY_FILESYSTEM


@pytest.mark.parametrize(
    ("environ", "memory_free", "parent"),
    [
        ({}, 20_000 * MiB, SHM),  # serial run, room
        ({}, 64 * MiB, SHM),  # exactly one process's room
        ({}, 63 * MiB, None),  # a container's default 64 MB /dev/shm, partly used
        ({}, None, None),  # not a memory filesystem, or not writable
        ({"PYTEST_XDIST_WORKER_COUNT": "22"}, 1408 * MiB, SHM),  # room for 22 workers
        ({"PYTEST_XDIST_WORKER_COUNT": "22"}, 1407 * MiB, None),  # all choose before any writes
        ({"PYTEST_XDIST_WORKER_COUNT": "x"}, 64 * MiB, SHM),  # unreadable count: this process
        ({"TMPDIR": "/scratch"}, 20_000 * MiB, None),  # the user's choice wins: tempfile's
        ({"TMPDIR": ""}, 20_000 * MiB, SHM),  # empty: not set
    ],
)
def test_state_parent(environ: dict[str, str], memory_free: int | None, parent: Path | None) -> None:
    assert target.state_parent(environ, memory_free) == parent


def test_state_room_is_not_counted_on_a_disk_directory(tmp_path: Path) -> None:
    """Only a mount point of type tmpfs counts as a memory filesystem."""
    assert target._memory_free(tmp_path) is None
    assert target._memory_free(tmp_path / "missing") is None


def test_state_root_is_made_where_tmpdir_says(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(target.tempfile, "tempdir", None)  # tempfile reads TMPDIR once, then caches it
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    root = target.state_root()
    assert root.parent == tmp_path and root.is_dir() and root.name.startswith(target.STATE_PREFIX)


def test_state_root_falls_back_as_tempfile_does_when_tmpdir_is_unusable(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(target.tempfile, "tempdir", None)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    root = target.state_root()
    try:
        assert root.parent == Path(target.tempfile.gettempdir()) != tmp_path / "missing"
        assert root.is_dir()
    finally:
        target.shutil.rmtree(root)


def _gone_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_state_root_names_its_owner_and_removes_the_state_of_killed_runs(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(target.tempfile, "tempdir", None)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    killed = tmp_path / f"{target.STATE_PREFIX}killed"
    (killed / "default" / "nodes").mkdir(parents=True)
    (killed / target.STATE_OWNER).write_text(f"{_gone_pid()}\n")
    running = tmp_path / f"{target.STATE_PREFIX}running"
    running.mkdir()
    (running / target.STATE_OWNER).write_text("1\n")  # init: alive
    being_made = tmp_path / f"{target.STATE_PREFIX}new"  # no owner yet
    being_made.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    (other / target.STATE_OWNER).write_text(f"{_gone_pid()}\n")  # not the suite's prefix
    root = target.state_root()
    assert (root / target.STATE_OWNER).read_text() == f"{target.os.getpid()}\n"
    assert not killed.exists()
    assert running.is_dir() and being_made.is_dir() and other.is_dir()
    assert target.remove_orphans(tmp_path) == []
