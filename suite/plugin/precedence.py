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
after it (a thread or process the tree starts during the spec inherits :data:`NICE`; it gets
the value its process, or its nearest ancestor in the tree, had before). Nothing of the spec
changes (its windows, its steps); on a cluster given by kubeconfig nothing is done. Best
effort: a process that ended or a value the kernel refuses (not root) is logged and left.

Pure: :func:`descendants`, :func:`autogroup_nice`, :func:`born_during`. The rest reads and
writes ``/proc`` and the scheduler's priorities.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping

__all__ = ["NICE", "TIMED_SPECS", "autogroup_nice", "born_during", "descendants", "precedence", "processes"]

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


def born_during(
    tree: list[int],
    parents: Mapping[int, int],
    threads: Mapping[int, list[int]],
    seen: set[int],
    before: Mapping[int, int],
    untouched: set[int],
) -> dict[int, int]:
    """The threads of ``tree`` (processes, root first) not in ``seen``, each with the nice value to
    give back: what its process had before (``before[pid]``), else its nearest ancestor's. A
    process in ``untouched`` (there before, not raised) and what it started are left out."""
    born = {}
    for pid in tree:
        ancestor: int | None = pid
        while ancestor is not None and ancestor not in before and ancestor not in untouched:
            ancestor = parents.get(ancestor)
        if ancestor is None or ancestor in untouched:
            continue
        for tid in threads.get(pid, ()):
            if tid not in seen:
                born[tid] = before[ancestor]
    return born


def autogroup_nice(text: str) -> int | None:
    """The nice value in ``/proc/<pid>/autogroup`` (``/autogroup-42 nice 0``), ``None`` if unreadable."""
    parts = text.split()
    if len(parts) == 3 and parts[1] == "nice":
        with contextlib.suppress(ValueError):
            return int(parts[2])
    return None


def processes(proc: str = _PROC) -> dict[int, tuple[int, int]]:
    """Every process's parent and session: ``{pid: (ppid, sid)}``, one read of its ``stat`` (a
    process gone before its ``stat`` is read, or one that does not parse, is left out)."""
    found = {}
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc}/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rpartition(")")[2].split()  # after the command, which may hold spaces
            found[int(entry)] = (int(fields[1]), int(fields[3]))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _parents(found: Mapping[int, tuple[int, int]]) -> dict[int, int]:
    """``{pid: ppid}`` of what :func:`processes` found."""
    return {pid: ppid for pid, (ppid, _) in found.items()}


def _threads(pid: int) -> list[int]:
    try:
        return [int(tid) for tid in os.listdir(f"{_PROC}/{pid}/task")]
    except OSError:
        return []


class _Saved:
    """What was changed, to put back: thread nice values, and autogroup nice values by leader;
    every thread seen, and each process's nice value before (for threads born during the block)."""

    def __init__(self) -> None:
        self.threads: dict[int, int] = {}
        self.autogroups: dict[int, int] = {}
        self.seen: set[int] = set()
        self.before: dict[int, int] = {}
        self.untouched: set[int] = set()

    def raise_thread(self, tid: int) -> None:
        self.seen.add(tid)
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

    def restore(self, roots: list[int]) -> None:
        """Put back what was raised, then lower the threads born under ``roots`` since, which
        inherited :data:`NICE` from a raised thread."""
        for tid, nice in self.threads.items():
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, tid, nice)
        parents = _parents(processes())
        for root in roots:
            tree = descendants(root, parents)
            born = born_during(
                tree, parents, {pid: _threads(pid) for pid in tree}, self.seen, self.before, self.untouched
            )
            for tid, nice in born.items():
                with contextlib.suppress(OSError):
                    if os.getpriority(os.PRIO_PROCESS, tid) == NICE and nice > NICE:
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
    found = processes()
    tree = descendants(cluster_pid, _parents(found))
    roots = [cluster_pid] if spec_pid is None or spec_pid in tree else [cluster_pid, spec_pid]
    for pid in tree + roots[1:]:
        with contextlib.suppress(OSError):
            saved.before[pid] = os.getpriority(os.PRIO_PROCESS, pid)
        for tid in _threads(pid):
            saved.raise_thread(tid)
        if pid in tree and found.get(pid, (0, 0))[1] == pid:  # a session leader of the tree
            saved.raise_autogroup(pid)
    saved.untouched = set(found) - set(saved.before)
    log.info(
        "precedence: %d threads and %d sessions of the cluster at nice %d while the timed spec runs",
        len(saved.threads),
        len(saved.autogroups),
        NICE,
    )
    try:
        yield len(saved.threads)
    finally:
        saved.restore(roots)
