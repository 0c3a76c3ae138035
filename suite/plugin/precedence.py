"""CPU precedence for the embedded cluster of a spec that times the stack, while the spec runs.

Some of upstream's specs compare elapsed times (47627: the secondary scheduler places a
ReplicaSet within 2 s of the time the default scheduler takes). Upstream runs them on a cluster
of its own; a run spread over workers runs a dozen or more embedded clusters on the same cores,
and the clusters starting around such a spec slow its stack down unevenly (its spread reached
2.4 to 4.1 s with 20 or 21 workers on 2 cores, never with 17 or fewer). So while the body of a
spec in :data:`TIMED_SPECS` runs, the process tree of its embedded cluster (the cluster process
and the container processes it started: operator, scheduler, exporters) and the spec's own
pytest process get :data:`NICE` (every thread, and the ``sched_autogroup`` of each session the
tree leads, where the kernel weighs sessions against each other), and get back what they had
after it. Nothing of the spec changes (its windows, its steps); on a cluster given by
kubeconfig nothing is done. Best effort: a process that ended or a value the kernel refuses
(not root) is logged and left.

Pure: :func:`descendants`, :func:`autogroup_nice`. The rest reads and writes ``/proc`` and the
scheduler's priorities.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping

__all__ = ["NICE", "TIMED_SPECS", "autogroup_nice", "descendants", "precedence"]

log = logging.getLogger(__name__)

#: The test_ids of upstream's specs whose assertions compare elapsed times.
TIMED_SPECS = frozenset({"47627"})
#: The nice value (and autogroup nice value) a timed spec's processes run at.
NICE = -10

_PROC = "/proc"


def descendants(root: int, parents: Mapping[int, int]) -> list[int]:
    """``root`` and every process below it, given each process's parent (``parents[pid] = ppid``)."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(sorted(children.get(pid, ()), reverse=True))
    return found


def autogroup_nice(text: str) -> int | None:
    """The nice value in ``/proc/<pid>/autogroup`` (``/autogroup-42 nice 0``), ``None`` if unreadable."""
    parts = text.split()
    if len(parts) == 3 and parts[1] == "nice":
        with contextlib.suppress(ValueError):
            return int(parts[2])
    return None


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"{_PROC}/{pid}/stat", encoding="ascii", errors="replace") as stat:
            text = stat.read()
    except OSError:
        return None
    return text.rpartition(")")[2].split()  # after the command name, which may hold spaces


def _parents() -> dict[int, int]:
    parents = {}
    for entry in os.listdir(_PROC):
        if entry.isdigit() and (fields := _stat_fields(int(entry))) is not None:
            parents[int(entry)] = int(fields[1])
    return parents


def _threads(pid: int) -> list[int]:
    try:
        return [int(tid) for tid in os.listdir(f"{_PROC}/{pid}/task")]
    except OSError:
        return []


class _Saved:
    """What was changed, to put back: thread nice values, and autogroup nice values by leader."""

    def __init__(self) -> None:
        self.threads: dict[int, int] = {}
        self.autogroups: dict[int, int] = {}

    def raise_thread(self, tid: int) -> None:
        try:
            before = os.getpriority(os.PRIO_PROCESS, tid)
            if before > NICE:
                os.setpriority(os.PRIO_PROCESS, tid, NICE)
                self.threads[tid] = before
        except OSError as err:
            log.debug("precedence: thread %d left at its priority: %s", tid, err)

    def raise_autogroup(self, leader: int) -> None:
        path = f"{_PROC}/{leader}/autogroup"
        try:
            with open(path, encoding="ascii") as group:
                before = autogroup_nice(group.read())
            if before is None or before <= NICE:
                return
            with open(path, "w", encoding="ascii") as group:
                group.write(str(NICE))
            self.autogroups[leader] = before
        except OSError as err:
            log.debug("precedence: autogroup of session %d left as it was: %s", leader, err)

    def restore(self) -> None:
        for tid, nice in self.threads.items():
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, tid, nice)
        for leader, nice in self.autogroups.items():
            with (
                contextlib.suppress(OSError),
                open(f"{_PROC}/{leader}/autogroup", "w", encoding="ascii") as group,
            ):
                group.write(str(nice))


@contextlib.contextmanager
def precedence(cluster_pid: int, spec_pid: int | None = None) -> Iterator[int]:
    """Raise the priority of ``cluster_pid``'s process tree (and of ``spec_pid``'s threads) while
    the block runs; yields how many threads were raised."""
    saved = _Saved()
    tree = descendants(cluster_pid, _parents())
    members = set(tree)
    for pid in tree:
        for tid in _threads(pid):
            saved.raise_thread(tid)
        fields = _stat_fields(pid)
        if fields is not None and int(fields[3]) == pid:  # a session leader of the tree: its autogroup
            saved.raise_autogroup(pid)
    if spec_pid is not None and spec_pid not in members:
        for tid in _threads(spec_pid):
            saved.raise_thread(tid)
    log.info(
        "precedence: %d threads and %d sessions of the cluster at nice %d while the timed spec runs",
        len(saved.threads),
        len(saved.autogroups),
        NICE,
    )
    try:
        yield len(saved.threads)
    finally:
        saved.restore()
