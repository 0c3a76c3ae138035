"""How a run of the serial suite on embedded clusters is spread over xdist workers (hooks of the ``nrop`` plugin).

A suite run without a kubeconfig collects in the pytest process itself, as a serial run does;
then, knowing the selection, it decides how many workers to start (:func:`nrop.suite.plugin.lanes.worker_count`
over the spec durations in ``durations.json``, the machine's available memory and the cores the run may use
(:func:`usable_cores`: its CPU affinity and its cgroups' CPU quotas), or ``-n N`` when
given: the plugin holds xdist back until this point) and starts them itself
(:class:`~nrop.suite.plugin.workerstart.LaneSession`: the first one before the run's loop, the
others while it runs, so a lane starts once its worker has collected). Each worker gets a
*lane* of the plan (:func:`nrop.suite.plugin.lanes.plan`): its specs longest first, one cluster per
profile it needs; :class:`LaneScheduling`, the xdist scheduler of such a run, hands every worker
its lane one spec ahead (xdist runs a spec once it knows the next one) from when that worker has
collected (not when the last one has), and a worker whose lane
is done takes the shortest spec of its current profile not yet handed out from the lane
expected to end last, when that ends the run sooner (a lane's running spec counted for what
is left of its expected time), so an estimate that was off costs no extra cluster; with none of
its profile to take, it takes that lane's shortest spec of another profile when the run still
ends sooner counting a cluster start (:data:`HELP_START_SECONDS`): the lanes of a profile with
few specs end minutes before the others. A worker starts preparing its
first cluster as it starts (told its profile here,
:data:`~nrop.suite.plugin.runstate.FIRST_PROFILE_INPUT`), and its next one while its current spec
runs (:mod:`nrop.suite.plugin.targeting`), once that spec is expected to end in about a cluster
start (:func:`nrop.suite.plugin.lanes.prepare_delays`, told here too).

A run that chose one worker or none stays in the pytest process (serial), as does ``-n 0``, a run against a
kubeconfig (the specs disturb the whole cluster), a dry run and ``--collect-only``.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from nrop.suite.plugin import lanes
from nrop.suite.plugin.runstate import (
    CONTEXT_FIXTURE,
    FIRST_PROFILE_INPUT,
    PREPARE_AFTER_INPUT,
    PROFILE,
    state,
)

__all__ = [
    "DIST",
    "DURATIONS_FILE",
    "LaneScheduling",
    "available_memory",
    "cpu_quotas",
    "load_durations",
    "usable_cores",
]

log = logging.getLogger(__name__)

#: The measured spec durations, by :func:`nrop.suite.plugin.lanes.spec_key` (``bench/suite.py --update-durations``).
DURATIONS_FILE = Path(__file__).with_name("durations.json")
#: What a worker that helps another lane with a spec of another profile counts for starting that
#: profile's cluster mid-run: 7 to 15 s measured when few start together, up to 88 s when ten do.
HELP_START_SECONDS = 30.0
#: xdist's ``--dist`` of a run spread by this module (shown by ``-v``; no ``--dist`` choice: the plugin sets it).
DIST = "nrop-lanes"


def load_durations(path: Path | None = None) -> dict[str, float]:
    """The measured spec durations (:data:`DURATIONS_FILE` unless ``path``); none (every spec
    estimated alike) if the file is missing or broken."""
    path = path or DURATIONS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {str(key): float(value) for key, value in data.items()}
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        log.warning("no spec durations from %s (%s): every spec is estimated alike", path, exc)
        return {}


def available_memory(meminfo: Path = Path("/proc/meminfo")) -> int:
    """Bytes of memory the machine can give without swapping (``MemAvailable``)."""
    try:
        for line in meminfo.read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


#: Where the cgroup filesystems are mounted: v2's one hierarchy at the root, v1's one per controller.
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: The cgroups of this process, one ``id:controllers:path`` line each (v2's controllers empty).
MEMBERSHIP = Path("/proc/self/cgroup")


def usable_cores(cgroup_root: Path = CGROUP_ROOT, membership: Path = MEMBERSHIP) -> float:
    """The cores this process may use: those it may run on (its CPU affinity), fewer when a CPU
    quota of its cgroups (:func:`cpu_quotas`) allows less, a share of a core counted (1.5 cores
    carry half again the workers of one); one at least."""
    try:
        cores: float = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1.0, min([cores, *cpu_quotas(cgroup_root, membership)]))


def cpu_quotas(cgroup_root: Path = CGROUP_ROOT, membership: Path = MEMBERSHIP) -> list[float]:
    """The CPU quotas, in cores, of this process's cgroups and of their ancestors (a parent's quota
    caps its children): v2's ``cpu.max`` (``quota period``, or ``max``) and v1's ``cpu`` controller
    (``cpu.cfs_quota_us`` over ``cpu.cfs_period_us``, ``-1`` for none). ``podman run --cpus`` sets
    one or the other, and so does a CI runner that shares its host; in a container the process's
    cgroup is often the root of what it sees. Unreadable files count as no quota."""
    try:
        entries = membership.read_text(encoding="ascii").splitlines()
    except OSError:
        entries = []
    places = [(cgroup_root, True)]  # the root as mounted: a container's own cgroup
    for entry in entries:
        fields = entry.split(":", 2)
        if len(fields) != 3:
            continue
        _, controllers, path = fields
        if controllers == "":
            base, v2 = cgroup_root, True
        elif "cpu" in controllers.split(","):
            base, v2 = cgroup_root / controllers, False  # mounted as "cpu,cpuacct", or as "cpu"
            if not base.is_dir():
                base = cgroup_root / "cpu"
        else:
            continue
        place = base / path.strip("/")
        places += [(place, v2)] + [
            (parent, v2) for parent in place.parents if base in (parent, *parent.parents)
        ]
    quotas = []
    for place, v2 in dict.fromkeys(places):
        quota = _quota(place, v2)
        if quota is not None:
            quotas.append(quota)
    return quotas


def _quota(place: Path, v2: bool) -> float | None:
    try:
        if v2:
            quota, period = (place / "cpu.max").read_text(encoding="ascii").split()[:2]
        else:
            quota = (place / "cpu.cfs_quota_us").read_text(encoding="ascii").strip()
            period = (place / "cpu.cfs_period_us").read_text(encoding="ascii").strip()
        if quota in ("max", "-1"):
            return None
        return int(quota) / int(period)
    except (OSError, ValueError, ZeroDivisionError):
        return None


def _specs(items: Sequence[pytest.Item], durations: Mapping[str, float]) -> list[lanes.Spec]:
    specs = []
    for item in items:
        profile = (
            item.stash.get(PROFILE, None) if CONTEXT_FIXTURE in getattr(item, "fixturenames", ()) else None
        )
        specs.append(lanes.Spec(item.nodeid, profile, lanes.estimate(lanes.spec_key(item.nodeid), durations)))
    return specs


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """After selection, in the pytest process of a run that may be spread: choose the workers, start them."""
    config = session.config
    run = state(config)
    if not run.spreads or not session.items:
        return
    planned_with = run.options.spec_durations if run.options is not None else None
    specs = _specs(session.items, load_durations(planned_with))
    requested = run.requested_workers
    cores = usable_cores()
    memory = available_memory()
    workers = requested if requested is not None else lanes.worker_count(specs, memory, cores)
    if workers < 1 or (requested is None and workers < 2):
        return
    plan = lanes.plan(specs, workers, lanes.CLUSTER_SWITCH_SECONDS, lanes.first_clusters(workers, cores))
    run.lanes = {f"gw{index}": [spec.nodeid for spec in lane.specs] for index, lane in enumerate(plan)}
    run.estimates = {spec.nodeid: spec for spec in specs}
    how = (
        "-n"
        if requested is not None
        else f"chosen for the selection and this machine: {cores:g} cores, {memory / 2**30:.1f} GiB available"
    )
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is not None:
        terminal.write_line(
            f"nrop: {workers} workers ({how}), each with its own embedded clusters; "
            f"planned {lanes.makespan(plan):.0f}s of wall time for {sum(s.seconds for s in specs):.0f}s of specs"
        )
    _start_workers(session, workers)


def _start_workers(session: pytest.Session, workers: int) -> None:
    """Start xdist now, as ``-n workers`` would have at the start of the session."""
    from nrop.suite.plugin.workerstart import LaneSession

    config = session.config
    config.option.numprocesses = workers
    config.option.tx = ["popen"] * workers
    config.option.dist = DIST
    dsession = LaneSession(config)
    # registered after pytest's own plugins, its pytest_runtestloop runs the loop instead of theirs
    config.pluginmanager.register(dsession, "dsession")
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is not None:
        terminal.showfspath = False
    dsession.pytest_sessionstart(session)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: tell each worker the profile of its lane's first cluster, and when to prepare its later ones."""
    run = state(node.config)
    if run.lanes is None:
        return
    lane = [run.estimates[nodeid] for nodeid in run.lanes.get(node.workerinput["workerid"], [])]
    node.workerinput[PREPARE_AFTER_INPUT] = lanes.prepare_delays(lane)
    first = next((spec.profile for spec in lane if spec.profile is not None), None)
    if first is not None:
        node.workerinput[FIRST_PROFILE_INPUT] = first


@pytest.hookimpl(optionalhook=True, trylast=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist: a worker that finished its session (its last spec, AfterSuite, its clusters
    stopped, its results sent) exits now rather than with every other at the run's end, where
    ten or twenty interpreters tearing down at once held up the last lane's exit (1.6 s of the
    controller's wait for its workers at the end of tier0). Its remaining hooks still run
    first: execnet waits for the worker's pytest to return. The last one is left to xdist's
    own teardown, which then waits for every worker process, those gone early included."""
    dsession = node.config.pluginmanager.getplugin("dsession")
    if error is None and dsession is not None and len(dsession.nodemanager.group) > 1:
        node.gateway.exit()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LaneScheduling | None:
    run = state(config)
    if run.lanes is None:
        return None
    return LaneScheduling(config, run.lanes, run.estimates)


class LaneScheduling:
    """xdist scheduling of a planned run: each worker its lane, one spec ahead; then same-profile help.

    ``lanes`` maps worker ids (``gw0``…) to node ids in run order; ``estimates`` gives each node
    id's profile and expected seconds. A worker that crashed leaves its unfinished specs to
    the others (any profile), a replacement worker has no lane of its own.
    """

    def __init__(
        self,
        config: pytest.Config,
        lanes_by_worker: Mapping[str, Sequence[str]],
        estimates: Mapping[str, lanes.Spec],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.clock = clock
        #: When each worker's first pending spec (the one it runs) became its first.
        self.running_since: dict[Any, float] = {}
        self.lanes = {worker: deque(ids) for worker, ids in lanes_by_worker.items()}
        self.estimates = estimates
        self.orphans: deque[str] = deque()
        self.node2pending: dict[Any, list[int]] = {}
        self.collections: dict[Any, list[str]] = {}
        self.collection: list[str] | None = None
        self.current: dict[Any, str | None] = {}

    @property
    def nodes(self) -> list[Any]:
        return list(self.node2pending)

    @property
    def collection_is_completed(self) -> bool:
        """Whether :meth:`schedule` may run: as soon as one worker has collected. xdist calls it
        after each worker's collection, so a worker starts its lane once it has collected, not
        once the last (lowest-priority) worker has."""
        return bool(self.collections)

    def _unsent(self) -> bool:
        return bool(self.orphans) or any(self.lanes.values())

    @property
    def tests_finished(self) -> bool:
        if (
            self.collection is None
            or self._unsent()
            or any(node not in self.collections for node in self.nodes)
        ):
            return False
        return all(len(pending) < 2 for pending in self.node2pending.values())

    @property
    def has_pending(self) -> bool:
        return self._unsent() or any(self.node2pending.values())

    def add_node(self, node: Any) -> None:
        assert node not in self.node2pending
        self.node2pending[node] = []

    def add_node_collection(self, node: Any, collection: Sequence[str]) -> None:
        """The first collection is the run's; one that differs is reported as a failed collection
        and the run stops (every worker shut down, nothing more sent), as xdist's own schedulers do."""
        assert node in self.node2pending
        if self.collection is None:
            self.collection = list(collection)
            self._reconcile_plan()
        elif list(collection) != self.collection:
            from xdist.report import report_collection_diff

            first = next(iter(self.collections))
            message = report_collection_diff(self.collection, collection, first.gateway.id, node.gateway.id)
            self.config.hook.pytest_collectreport(
                report=pytest.CollectReport(node.gateway.id, "failed", longrepr=message, result=[])
            )
            self.lanes.clear()
            self.orphans.clear()
            for other in self.nodes:
                other.shutdown()
            return
        self.collections[node] = list(collection)

    def _reconcile_plan(self) -> None:
        """What the workers collected but the plan does not know (a plan is made from the same
        selection: nothing, unless the workers' collection differs) runs wherever there is room;
        what the plan names but nobody collected is dropped."""
        assert self.collection is not None
        planned = {nodeid for ids in self.lanes.values() for nodeid in ids}
        self.orphans.extend(nodeid for nodeid in self.collection if nodeid not in planned)
        known = set(self.collection)
        for ids in self.lanes.values():
            for nodeid in [nodeid for nodeid in ids if nodeid not in known]:
                ids.remove(nodeid)

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        self.node2pending[node].remove(item_index)
        self.running_since[node] = self.clock()
        self._refill(node)

    def mark_test_pending(self, item: str) -> None:
        raise NotImplementedError

    def remove_pending_tests_from_node(self, node: Any, indices: Sequence[int]) -> None:
        raise NotImplementedError

    def remove_node(self, node: Any) -> str | None:
        pending = self.node2pending.pop(node)
        self.current.pop(node, None)
        left = self.lanes.pop(node.gateway.id, deque())
        if not pending:
            self.orphans.extend(left)
            return None
        assert self.collection is not None
        crashed = self.collection[pending[0]]
        self.orphans.extend([*(self.collection[index] for index in pending[1:]), *left])
        for other in self.nodes:
            self._refill(other)
        return crashed

    def schedule(self) -> None:
        """Called after each worker's collection: every worker that has collected gets its lane's
        next specs (all lanes' first specs before any worker helps another)."""
        assert self.collection_is_completed
        ready = [node for node in self.nodes if node in self.collections]
        for node in ready:
            self._refill(node, helping=False)
        for node in ready:
            self._refill(node)

    def _refill(self, node: Any, *, helping: bool = True) -> None:
        """Keep ``node`` two specs ahead from its lane (then orphans, then, ``helping``, another lane's);
        with nothing more for it, shut it down: its last spec runs, then its clusters close."""
        if node.shutting_down or self.collection is None or node not in self.collections:
            return
        pending = self.node2pending[node]
        sent: list[int] = []
        while len(pending) + len(sent) < 2:
            nodeid = self._next_for(node, helping, [*pending, *sent])
            if nodeid is None:
                break
            sent.append(self.collection.index(nodeid))
        if sent:
            if not pending:
                self.running_since[node] = self.clock()
            pending.extend(sent)
            node.send_runtest_some(sent)
        elif helping and len(pending) < 2:
            node.shutdown()

    def _next_for(self, node: Any, helping: bool, queued: Sequence[int]) -> str | None:
        own = self.lanes.get(node.gateway.id)
        if own:
            return self._take(node, own.popleft())
        if self.orphans:
            return self._take(node, self.orphans.popleft())
        profile = self.current.get(node)
        if not helping or profile is None:
            return None
        ends = self._left(node, queued)
        return self._help(node, ends, profile, 0.0) or self._help(node, ends, None, HELP_START_SECONDS)

    def _help(self, node: Any, ends: float, profile: str | None, start: float) -> str | None:
        """The shortest spec of ``profile`` (``None``: of any other profile than the worker's, which
        costs it ``start`` seconds) of the lane expected to end last, if the worker, running it after
        what it has (``ends`` seconds), still ends no later than that lane without it."""
        own = self.current.get(node)

        def fits(nodeid: str) -> bool:
            return self._profile(nodeid) == profile if profile is not None else self._profile(nodeid) != own

        candidates = [
            (self._lane_end(worker), worker, nodeid)
            for worker, ids in self.lanes.items()
            for nodeid in [next((n for n in reversed(ids) if fits(n)), None)]
            if nodeid is not None
        ]
        if not candidates:
            return None
        victim_ends, worker, nodeid = max(candidates, key=lambda c: c[0])
        seconds = self._seconds(nodeid)
        if ends + start + seconds > victim_ends - seconds:
            return None
        self.lanes[worker].remove(nodeid)
        return self._take(node, nodeid)

    def _left(self, node: Any, queued: Sequence[int]) -> float:
        """Expected seconds until ``node`` is through ``queued`` (its pending specs, the first one
        running): what is left of the first one's expected time, and the others'."""
        assert self.collection is not None
        seconds = [self._seconds(self.collection[index]) for index in queued]
        if seconds and node in self.running_since:
            seconds[0] = max(0.0, seconds[0] - (self.clock() - self.running_since[node]))
        return sum(seconds)

    def _lane_end(self, worker: str) -> float:
        """Expected seconds until the worker's lane is done: its specs sent and not done (the
        running one for what is left of it), and the rest."""
        node = next((n for n in self.node2pending if n.gateway.id == worker), None)
        queued = self.node2pending.get(node, []) if node is not None else []
        return self._left(node, queued) + sum(self._seconds(n) for n in self.lanes[worker])

    def _take(self, node: Any, nodeid: str) -> str:
        profile = self._profile(nodeid)
        if profile is not None:
            self.current[node] = profile
        return nodeid

    def _profile(self, nodeid: str) -> str | None:
        spec = self.estimates.get(nodeid)
        return spec.profile if spec is not None else None

    def _seconds(self, nodeid: str) -> float:
        spec = self.estimates.get(nodeid)
        return spec.seconds if spec is not None else 0.0
