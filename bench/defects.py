"""Benchmark of what the suite catches: one serial-suite run per seeded defect, and the kill table.

Each defect of ``bench/defects/catalog.yaml`` is a realistic bug of one component of the stack
(scheduler, exporter, kubelet, operator, numacell), injected at run time: the run's environment
names it (``NROP_DEFECT``) and puts ``bench/defects`` on ``PYTHONPATH``, whose ``sitecustomize``
applies it in the processes of that component (``docs/defects.md``). Nothing of the product is
edited. Runs ``pytest serial --tier-up-to N`` (default tier0) once with no defect (the baseline,
which must be all green) and once per defect, each with its own embedded clusters and its own
``--report-dir``, then prints the kill table, one row per defect: caught or not, by how many
specs, the first spec to fail and after how long (from the start of the run, cluster start
included), and whether the failure text of the junit names the broken component (its pointers:
its name, NRT words, the scheduler's event...). The table also goes to ``kill-table.md`` in the
report directory. A defect whose target changed since it was written is reported "stale" and not
run; one whose component never started is "not applied"; a run that fails nothing but skips specs
the baseline ran is "skipped" (not caught: the suite skips on a cluster that looks unsuitable).

    python bench/defects.py [--defects id,id|all] [--tier-up-to N] [-n N] [--parallel K] [--workers-budget W]
                            [--report-dir DIR] [--no-baseline] [--update-durations]
    python bench/defects.py --report-dir DIR --from-report   # judge DIR's runs again, run nothing
    python bench/defects.py --check      # every defect still applies to the code as it is
    python bench/defects.py --list       # the catalog

Without ``-n``, the runs are planned from what each took last time (``bench/defects/durations.json``,
written by ``--update-durations``): the longest first, each with the workers the suite's own rule
chooses for its durations, as many at once as a budget of workers allows (the machine's memory and
cores, or ``--workers-budget``). A defect whose specs fail waits out their timeouts: its run is
long, and more workers shorten it.

Never run in CI: one suite run per defect takes minutes.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from nrop.suite.plugin import lanes, precedence
from nrop.suite.plugin.distributing import available_memory, usable_cores
from nrop.suite.plugin.labels import EXTRA_LABEL
from nrop.suite.plugin.lanes import MEMORY_PER_WORKER, MEMORY_RESERVE

ROOT = Path(__file__).resolve().parent.parent
DEFECTS_DIR = ROOT / "bench" / "defects"
JUNIT = "e2e-serial-run.xml"
TABLE = "kill-table.md"
DEFECT_LOG = "defect-log.jsonl"
#: a row's detail (why stale, what was skipped) is cut to this many characters in the table
DETAIL_CHARS = 200
#: the run's live output, each line after its seconds since the start
LIVE_LOG = "pytest.log"
BASELINE = "baseline"
#: what each run of the last full table took (``--update-durations``), to plan the next one
DURATIONS = DEFECTS_DIR / "durations.json"
#: in a run's report directory: the spec durations its lanes were planned with
PLANNED_DURATIONS = "planned-durations.json"
#: the share of a core one worker of a tier0-1 run uses on average: the baseline with four
#: workers took 123 CPU-s in 488 s on the 2-core machine (2026-11-29)
CPU_PER_WORKER = 0.063
#: the share of the cores the planned workers may use on average; the rest absorbs the peaks
#: (cluster starts, pod bursts) that make specs flaky when the cores are saturated
CPU_SHARE = 0.67
#: workers of one run: at least two (one is no spreading), at most this many
MOST_WORKERS_PER_RUN = 12
#: the workers a run past its planned wall time still counts (its last lanes)
TAIL_WORKERS = 2
#: how often the runs' planned walls are looked at while waiting for the budget
RECHECK_SECONDS = 10.0
#: workers of a run with nothing measured (a new defect, another tier)
UNKNOWN_RUN_WORKERS = 4
#: a run gets as few workers as end it within this share of the table's ideal length (all its
#: runs' spec-seconds over the budget): each worker costs a cluster start and its share of the
#: ramp, and the table is bound by its worker-seconds. At tier0-1 on 2 cores (21 workers, about
#: 49 ideal minutes) a healthy run gets two workers instead of five to seven, the table's runs 64
#: workers in all instead of 178: 51 minutes and 2,805 CPU-s, against 59 and 4,085 at the same
#: machine speed (docs/defects.md).
RUN_SHARE_OF_TABLE = 0.5
_NODEID = re.compile(r"(serial/\S+::\S+)")
_FAILED = re.compile(r"\b(FAILED|ERROR)\b")


def _load_bench(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def _load_seeding() -> ModuleType:
    """``bench/defects/seeding.py``, the catalog and check shared with the injected processes."""
    return _load_bench("seeding", DEFECTS_DIR / "seeding.py")


seeding = _load_seeding()
#: ``bench/suite.py``: its junit reading keys specs as the suite's ``durations.json`` does
benchsuite = _load_bench("bench_suite", ROOT / "bench" / "suite.py")


# -- reading a run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """One test case of a run's junit."""

    key: str
    outcome: str  # passed | failure | error | skipped
    seconds: float
    #: the failure (or error) message and text, the skip message; "" when it passed
    text: str = ""
    #: the spec's tier label ("" when untiered) and whether it is one of the project's own (label extra)
    tier: str = ""
    extra: bool = False

    @property
    def failed(self) -> bool:
        return self.outcome in ("failure", "error")


def junit_specs(junit: Path) -> list[Spec]:
    """The test cases of a junit file, with their failure text."""
    found = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        key = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome, text = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag
                text = "\n".join(filter(None, (child.get("message"), child.text)))
                break
        extra = [child.text or "" for child in case if child.tag in ("system-out", "system-err")]
        props = {prop.get("name"): prop.get("value") or "" for prop in case.iter("property")}
        found.append(
            Spec(
                key,
                outcome,
                float(case.get("time") or 0),
                "\n".join([text, *extra]).strip(),
                props.get("tier", ""),
                EXTRA_LABEL in props.get("labels", "").split(","),
            )
        )
    return found


def timed_lines(text: str) -> list[tuple[float, str]]:
    """The live output as ``pytest.log`` keeps it (each line after its seconds since the start)."""
    found = []
    for line in text.splitlines():
        seconds, _, rest = line.strip().partition(" ")
        try:
            found.append((float(seconds), rest))
        except ValueError:
            continue
    return found


def first_failure(lines: Iterable[tuple[float, str]]) -> tuple[str, float] | None:
    """The first spec the live output (``-v``) reports FAILED or ERROR, and when, in seconds from the start."""
    for seconds, line in lines:
        nodeid = _NODEID.search(line)
        if nodeid and _FAILED.search(line):
            return nodeid.group(1), seconds
    return None


def pointers_in(text: str, pointers: Sequence[str]) -> list[str]:
    """The component's pointers that ``text`` contains."""
    return [p for p in pointers if p in text]


# -- judging a run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """What one suite run left: its specs, the live output's first failure, the defect log, its exit code."""

    specs: list[Spec]
    first: tuple[str, float] | None
    log: list[dict[str, object]]
    exit_code: int
    seconds: float
    report_dir: Path


@dataclass(frozen=True)
class Row:
    """One line of the kill table."""

    defect: str
    component: str
    verdict: str  # yes | no | stale | not applied | no report
    failed: int = 0
    first_spec: str = ""
    first_seconds: float | None = None
    named: list[str] = field(default_factory=list)
    detail: str = ""
    #: of the failing specs: upstream's tier0 ones, and upstream's (not the project's extras)
    failed_upstream_tier0: int = 0
    failed_upstream: int = 0
    #: the pointers the first failing spec's own failure text contains (what a CI reader sees first)
    first_named: list[str] = field(default_factory=list)


def judge(
    defect_id: str, component: str, pointers: Sequence[str], run: Run, baseline: Sequence[Spec] = ()
) -> Row:
    """The kill-table row of a defect run: a defect is caught when a spec that the baseline passed fails.

    Specs that already failed in the baseline prove nothing and are not counted. The failure text
    of the failing specs is searched for the component's ``pointers``. A run with no failure that
    skipped specs the baseline ran is not caught either, but says so (``skipped``): the suite
    skips rather than fails when the cluster looks unsuitable, and a CI gate stays green.
    """
    stale = [entry for entry in run.log if entry.get("outcome") == "stale"]
    if stale:
        return Row(defect_id, component, "stale", detail=str(stale[0].get("detail", "")))
    before = {s.key: s.outcome for s in baseline}
    failing = [s for s in run.specs if s.failed and before.get(s.key) not in ("failure", "error")]
    applied = any(entry.get("outcome") == "applied" for entry in run.log)
    if not failing:
        if not run.specs:
            known = f" (exit code {run.exit_code})" if run.exit_code >= 0 else ""
            return Row(defect_id, component, "no report", detail=f"no junit{known}")
        if not applied:
            return Row(defect_id, component, "not applied")
        skipped = [
            s for s in run.specs if s.outcome == "skipped" and before.get(s.key, "passed") != "skipped"
        ]
        if skipped:
            reason = skipped[0].text.splitlines()[0] if skipped[0].text else ""
            return Row(
                defect_id,
                component,
                "skipped",
                named=_named(skipped, pointers),
                detail=f"{len(skipped)} specs skipped: {reason}",
            )
        return Row(defect_id, component, "no")
    first_spec, first_seconds = run.first if run.first else (failing[0].key, None)
    first = next((s for s in failing if s.key == junit_key(first_spec)), failing[0])
    upstream = [s for s in failing if not s.extra]
    return Row(
        defect_id,
        component,
        "yes",
        len(failing),
        first_spec,
        first_seconds,
        _named(failing, pointers),
        failed_upstream_tier0=sum(1 for s in upstream if s.tier == "tier0"),
        failed_upstream=len(upstream),
        first_named=pointers_in(first.text, pointers),
    )


def junit_key(nodeid: str) -> str:
    """The :attr:`Spec.key` (junit ``classname::name``) of a pytest node id; ``nodeid`` when it is one already."""
    path, _, rest = nodeid.partition(".py::")
    if not rest:
        return nodeid
    *classes, name = rest.split("::")
    return ".".join([path.replace("/", "."), *classes]) + "::" + name


def _named(specs: Sequence[Spec], pointers: Sequence[str]) -> list[str]:
    found = {p for s in specs for p in pointers_in(s.text, pointers)}
    return [p for p in pointers if p in found]


def stale_row(defect_id: str, component: str, reason: str) -> Row:
    return Row(defect_id, component, "stale", detail=reason)


def markdown_table(rows: Sequence[Row]) -> list[str]:
    """The kill table as markdown lines."""
    out = [
        "| defect | component | caught | failing specs | upstream's tier0 | upstream's | first to fail | after"
        " | first failure names the component | any failure names it |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        after = f"{r.first_seconds:.0f} s" if r.first_seconds is not None else "-"
        shown = r.verdict in ("yes", "skipped")
        named = "-" if not shown else f"yes ({', '.join(r.named)})" if r.named else "no"
        first_named = (
            "-" if r.verdict != "yes" else f"yes ({', '.join(r.first_named)})" if r.first_named else "no"
        )
        detail = r.detail if len(r.detail) <= DETAIL_CHARS else r.detail[: DETAIL_CHARS - 1] + "…"
        caught = r.verdict if not r.detail else f"{r.verdict}: {detail}"
        first = f"`{r.first_spec}`" if r.first_spec else "-"
        counts = f"{r.failed} | {r.failed_upstream_tier0} | {r.failed_upstream}" if r.failed else "- | - | -"
        out.append(
            f"| {r.defect} | {r.component} | {caught} | {counts} | {first} | {after} | {first_named} | {named} |"
        )
    return out


def baseline_verdict(run: Run) -> str:
    """One line on the baseline: all green, or which specs failed (they are left out of the table's counts)."""
    failed = [s.key for s in run.specs if s.failed]
    if not run.specs:
        return f"baseline: no junit (exit code {run.exit_code}): the table cannot be trusted"
    if failed:
        return f"baseline NOT green: {len(failed)} failing ({', '.join(failed)}); those specs are not counted"
    took = f", {run.seconds:.0f} s" if run.seconds else ""
    return f"baseline: all green ({len(run.specs)} specs{took})"


# -- planning the runs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """What a run took last time: each spec's seconds as its junit gives them, by spec key."""

    specs: Mapping[str, float]

    def lanes_specs(self) -> list[lanes.Spec]:
        """Its specs as the suite's planner sees them (all on one profile: the sum is what counts)."""
        return [lanes.Spec(key, "default", seconds) for key, seconds in sorted(self.specs.items())]

    def wall(self, workers: int, cores: float) -> float:
        """Its planned wall time with ``workers``, cluster starts included (the suite's own plan)."""
        return lanes.makespan(lanes.plan(self.lanes_specs(), workers, lanes.cluster_start(workers, cores)))


def workers_for(
    expected: Expected | None, cores: float, most: int = MOST_WORKERS_PER_RUN, within: float | None = None
) -> int:
    """A run's workers: what the suite itself would choose for those durations (the fewest
    whose plan ends near the soonest one, :func:`nrop.suite.plugin.lanes.worker_count`) with
    memory for ``most`` of them, and two at least; fewer where its plan still ends ``within``
    that many seconds (a table's runs share one budget of workers: each worker more costs a
    cluster start and its share of the ramp); :data:`UNKNOWN_RUN_WORKERS` with nothing
    measured."""
    if expected is None or not expected.specs:
        return min(UNKNOWN_RUN_WORKERS, most)
    memory = MEMORY_RESERVE + most * MEMORY_PER_WORKER
    chosen = max(2, lanes.worker_count(expected.lanes_specs(), memory, cores))
    if within is None:
        return chosen
    return next((n for n in range(2, chosen) if expected.wall(n, cores) <= within), chosen)


def plan_runs(
    runs: Sequence[str], expected: Mapping[str, Expected], budget: int, cores: float
) -> list[tuple[str, int]]:
    """The order the runs start in, each with its workers: the longest expected first (runs with
    nothing measured last), none with more than half the ``budget`` workers, so that a wide run
    waiting for the budget is not passed over by narrower ones for long, and each as few as end
    within :data:`RUN_SHARE_OF_TABLE` of the table's ideal length (every measured spec-second
    over the budget)."""
    most = max(2, min(budget // 2, MOST_WORKERS_PER_RUN))  # two of the widest runs fit at once
    ideal = sum(sum(e.specs.values()) for run, e in expected.items() if run in runs) / max(budget, 1)
    within = ideal * RUN_SHARE_OF_TABLE
    planned = [(run, workers_for(expected.get(run), cores, most, within)) for run in runs]
    walls = planned_walls(planned, expected, cores)
    planned.sort(key=lambda item: -walls.get(item[0], 0.0))
    return planned


def planned_walls(
    planned: Sequence[tuple[str, int]], expected: Mapping[str, Expected], cores: float
) -> dict[str, float]:
    """Each measured run's planned wall time with its workers."""
    return {run: expected[run].wall(workers, cores) for run, workers in planned if run in expected}


def workers_budget(memory: int, cores: float) -> int:
    """How many workers all the runs at once may have: what the memory holds, and no more than
    use :data:`CPU_SHARE` of the cores on average."""
    by_memory = max(0, memory - MEMORY_RESERVE) // MEMORY_PER_WORKER
    by_cpu = math.floor(cores * CPU_SHARE / CPU_PER_WORKER)
    return max(2, min(by_memory, by_cpu))


def reservation(need: int, free: int, releases: Sequence[tuple[float, int]]) -> tuple[float, int] | None:
    """When the first pending run, which needs ``need`` workers, can start (seconds from now) and
    the workers then spare beside it, as the running runs reach their planned ends (``releases``:
    in how many seconds, and how many workers each then gives back); ``None`` if those ends do
    not free enough (the rest is held by tails that end when they end)."""
    if need <= free:
        return 0.0, free - need
    for when, given in sorted(releases):
        free += given
        if free >= need:
            return when, free - need
    return None


def next_to_start(
    pending: Sequence[tuple[str, int]],
    free: int,
    running: int,
    walls: Mapping[str, float] | None = None,
    releases: Sequence[tuple[float, int]] = (),
) -> int | None:
    """Which pending run starts now (its index), or ``None``: the first in plan order if its
    workers fit in ``free`` (or nothing runs: a run wider than the budget still runs, alone);
    else a later one that fits and does not delay the first (EASY backfilling): it ends, by its
    planned wall time (``walls``), before the first's :func:`reservation`, or takes only workers
    spare beside it then. Without a reservation (nothing planned) the first later run that fits
    starts, which can keep a wide run waiting for as long as narrower ones fill the gaps."""
    if not pending:
        return None
    if pending[0][1] <= free or running == 0:
        return 0
    booked = reservation(pending[0][1], free, releases) if walls is not None else None
    for index, (run, workers) in enumerate(pending[1:], start=1):
        if workers > free:
            continue
        if booked is None:
            return index
        when, spare = booked
        wall = walls.get(run) if walls is not None else None
        if workers <= spare or (wall is not None and wall <= when):
            return index
    return None


def _stored_runs(path: Path, tier: int) -> dict[str, dict[str, Any]]:
    """The runs ``path`` holds, by name, if it was measured at ``tier`` (else none); raises
    ``OSError``, ``ValueError``, ``KeyError``, ``TypeError`` or ``AttributeError`` when unreadable."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if int(data["tier"]) != tier:
        return {}
    return {str(run): dict(specs.items()) for run, specs in data["runs"].items()}


_UNREADABLE = (OSError, ValueError, KeyError, TypeError, AttributeError)


def load_expected(path: Path, tier: int) -> dict[str, Expected]:
    """The runs :data:`DURATIONS` measured at ``tier`` (none when it holds another tier or is unreadable)."""
    try:
        stored = _stored_runs(path, tier)
        return {run: Expected({str(k): float(v) for k, v in specs.items()}) for run, specs in stored.items()}
    except _UNREADABLE as exc:
        print(
            f"no run durations from {path} ({exc}): every run gets {UNKNOWN_RUN_WORKERS} workers", flush=True
        )
        return {}


def measured(junit: Path) -> Expected | None:
    """What a run's junit says its specs took, in whole seconds (``None`` without a junit or
    specs). The seconds a spec waited for its cluster are kept: with a defect, that wait can be
    BeforeSuite failing (every spec of ``rte-no-tm-attributes`` errors there, after minutes)."""
    if not junit.exists():
        return None
    found = {case.key: round(case.seconds) for case in benchsuite.cases(junit)}
    return Expected(found) if found else None


def write_durations(path: Path, tier: int, commit: str, junits: Mapping[str, Path]) -> None:
    """Record what each run's specs took (runs with a junit), keeping the other runs' entries of the same tier."""
    try:
        kept = _stored_runs(path, tier)
    except _UNREADABLE:
        kept = {}
    for name, junit in junits.items():
        if (got := measured(junit)) is not None:
            kept[name] = dict(sorted(got.specs.items()))
    header = {"tier": tier, "commit": commit, "date": datetime.date.today().isoformat()}
    lines = [json.dumps(header)[:-1] + ', "runs": {']
    lines += [f"  {json.dumps(name)}: {json.dumps(kept[name])}," for name in sorted(kept)]
    if len(lines) > 1:
        lines[-1] = lines[-1].rstrip(",")
    lines.append("}}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def held(workers: int, elapsed: float, wall: float | None, alive: int | None = None) -> int:
    """The workers a running run counts against the budget: those of its xdist workers still at
    work (``alive``, from :class:`WorkerWatch`), or, before they are seen, all of them until it
    outlives its planned wall time (``None``: unknown), then :data:`TAIL_WORKERS`: its lanes
    were planned to end by then."""
    if alive is not None:
        return min(workers, alive)
    if wall is None or elapsed < wall:
        return workers
    return min(workers, TAIL_WORKERS)


def children_by_parent(proc: Path = Path("/proc")) -> dict[int, list[int]]:
    """Every process's children, by parent pid (the suite's reader of ``/proc``, one read of each
    process's ``stat``)."""
    tree: dict[int, list[int]] = {}
    for pid, (ppid, _) in precedence.processes(str(proc)).items():
        tree.setdefault(ppid, []).append(pid)
    return tree


class WorkerWatch:
    """The xdist workers each running run still has at work: the children of its pytest process
    that hold an embedded cluster (their own children) or have not started one yet. A worker with
    nothing more to run closes its clusters and exits (the suite's ``pytest_testnodedown``), a
    process without children until the run reaps it: it counts no more. ``None`` before the run
    has spawned its workers."""

    def __init__(self, tree: Callable[[], Mapping[int, Sequence[int]]] = children_by_parent) -> None:
        self._tree = tree
        self._pids: dict[str, int] = {}
        self._with_cluster: set[int] = set()

    def started(self, run: str, pid: int) -> None:
        self._pids[run] = pid

    def alive(self, run: str) -> int | None:
        pid = self._pids.get(run)
        if pid is None:
            return None
        tree = self._tree()
        workers = tree.get(pid, ())
        if not workers:
            return None
        at_work = 0
        for worker in workers:
            if tree.get(worker):
                self._with_cluster.add(worker)
                at_work += 1
            elif worker not in self._with_cluster:
                at_work += 1  # its first cluster is not up yet
        return at_work


def run_planned(
    planned: Sequence[tuple[str, int]],
    budget: int,
    parallel: int | None,
    start: Callable[[str, int], Run],
    walls: Mapping[str, float] | None = None,
    *,
    recheck: float = RECHECK_SECONDS,
    clock: Callable[[], float] = time.monotonic,
    alive: Callable[[str], int | None] = lambda run: None,
) -> dict[str, Run]:
    """Run ``start(run, workers)`` for every planned run, as many at once as ``budget`` workers
    (and ``parallel`` runs, when given) allow, in plan order with later runs filling the gaps
    they leave without delaying the next in order (:func:`next_to_start`). A running run counts
    the workers it has ``alive``, or, before they are seen, all of them until its planned wall
    time (``walls``) and only its tail past it (:func:`held`)."""
    pending = list(planned)
    results: dict[str, Run] = {}
    done = threading.Condition()
    running: dict[str, tuple[int, float]] = {}  # run -> (workers, started)
    threads = []

    def free() -> int:
        now = clock()
        return budget - sum(
            held(workers, now - started, (walls or {}).get(run), alive(run))
            for run, (workers, started) in running.items()
        )

    def releases() -> list[tuple[float, int]]:
        # In how long each running run reaches its planned end, and the workers it then gives back.
        now = clock()
        out = []
        for run, (workers, started) in running.items():
            wall = (walls or {}).get(run)
            if wall is not None and now - started < wall:
                out.append((started + wall - now, workers - held(workers, wall, wall)))
        return out

    def one(run: str, workers: int) -> None:
        try:
            results[run] = start(run, workers)
        finally:
            with done:
                del running[run]
                done.notify_all()

    while pending:
        with done:
            while True:
                index = (
                    None
                    if parallel and len(running) >= parallel
                    else next_to_start(pending, free(), len(running), walls, releases())
                )
                if index is not None:
                    break
                done.wait(recheck)
            run, workers = pending.pop(index)
            running[run] = (workers, clock())
        thread = threading.Thread(target=one, args=(run, workers), name=run)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    return results


# -- running ---------------------------------------------------------------------------------------


def load_run(report_dir: Path, exit_code: int, seconds: float) -> Run:
    """A run as its report directory keeps it: junit, timed live output, defect log."""
    junit = report_dir / JUNIT
    log = report_dir / LIVE_LOG
    return Run(
        junit_specs(junit) if junit.exists() else [],
        first_failure(timed_lines(log.read_text(encoding="utf-8"))) if log.exists() else None,
        seeding.read_log(report_dir / DEFECT_LOG),
        exit_code,
        seconds,
        report_dir,
    )


def run_env(environ: Mapping[str, str], defect_id: str | None, report_dir: Path) -> dict[str, str]:
    """The environment of a suite run: unbuffered (its output is timed line by line) and, for a
    defect run, the defect, its log and the hook's directory on PYTHONPATH."""
    env = {**environ, "PYTHONUNBUFFERED": "1"}
    for name in (seeding.ENV_DEFECT, seeding.ENV_LOG):
        env.pop(name, None)
    if defect_id is None:
        return env
    env[seeding.ENV_DEFECT] = defect_id
    env[seeding.ENV_LOG] = str(report_dir / DEFECT_LOG)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(DEFECTS_DIR), environ.get("PYTHONPATH"))))
    return env


def run_suite(
    defect_id: str | None,
    report_dir: Path,
    tier: int,
    extra: Sequence[str],
    on_start: Callable[[int], None] = lambda pid: None,
) -> Run:
    """One ``pytest serial`` run, its live output timed line by line; ``on_start`` gets its pid."""
    report_dir.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "serial",
        "--tier-up-to",
        str(tier),
        "-v",
        "-p",
        "no:cacheprovider",
    ]
    cmd += ["--report-dir", str(report_dir), *extra]
    print(f"[{defect_id or BASELINE}] {' '.join(cmd)}", flush=True)
    started = time.monotonic()
    with (report_dir / LIVE_LOG).open("w", encoding="utf-8", buffering=1) as out:
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=run_env(os.environ, defect_id, report_dir),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        on_start(proc.pid)
        assert proc.stdout is not None
        for line in proc.stdout:
            out.write(f"{time.monotonic() - started:8.1f} {line}")
        exit_code = proc.wait()
    return load_run(report_dir, exit_code, time.monotonic() - started)


def chosen(catalog: Any, value: str) -> list[Any]:
    """The defects ``--defects`` names (``all``, or ids separated by commas), in the order given."""
    if value == "all":
        return list(catalog.defects)
    return [catalog.defect(i.strip()) for i in value.split(",") if i.strip()]


def stale_reason(defect: Any) -> str | None:
    """Why the defect cannot be applied to the code as it is (``None``: it can)."""
    try:
        seeding.check(defect)
    except seeding.StaleDefectError as exc:
        return str(exc)
    return None


def _git_head() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or "unknown"


def effort_line(runs: int, seconds: float, cpu_seconds: float) -> str:
    """What the table cost: its wall time and the CPU seconds of every process of its runs."""
    cores = cpu_seconds / seconds if seconds > 0 else 0.0
    return f"{runs} suite runs in {seconds / 60:.0f} min, {cpu_seconds:,.0f} CPU-s ({cores:.2f} cores on average)"


def run_all(to_run: Sequence[str], report_dir: Path, args: argparse.Namespace) -> dict[str, Run]:
    """Every run of the table: with ``-n`` as given, else as :func:`plan_runs` plans them, each
    run's lanes planned with what its specs took last time (``--spec-durations``)."""
    expected = load_expected(DURATIONS, args.tier_up_to)
    watch = WorkerWatch()

    def start(run: str, workers: int) -> Run:
        defect = None if run == BASELINE else run
        extra = ["-n", str(workers)]
        if run in expected:
            (report_dir / run).mkdir(parents=True, exist_ok=True)
            planned_with = report_dir / run / PLANNED_DURATIONS
            planned_with.write_text(json.dumps(dict(expected[run].specs)), encoding="utf-8")
            extra += ["--spec-durations", str(planned_with)]
        return run_suite(
            defect, report_dir / run, args.tier_up_to, extra, lambda pid: watch.started(run, pid)
        )

    if args.workers is not None:
        parallel = args.parallel or 1
        planned = [(run, args.workers) for run in to_run]
        return run_planned(planned, args.workers * parallel, parallel, start, alive=watch.alive)
    cores = usable_cores()
    budget = args.workers_budget or workers_budget(available_memory(), cores)
    planned = plan_runs(to_run, expected, budget, cores)
    walls = planned_walls(planned, expected, cores)
    print(
        f"planned {len(planned)} runs on a budget of {budget} workers: "
        + ", ".join(f"{run} ({workers})" for run, workers in planned),
        flush=True,
    )
    return run_planned(planned, budget, args.parallel, start, walls, alive=watch.alive)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--defects", default="all", help="ids separated by commas, or all (default)")
    parser.add_argument("--tier-up-to", type=int, default=0, help="highest tier run (default 0)")
    parser.add_argument(
        "-n",
        dest="workers",
        type=int,
        help="pass -n N to every run's pytest (default: planned per run from bench/defects/durations.json)",
    )
    parser.add_argument(
        "--parallel",
        type=int,
        help="suite runs at once at most, the baseline among them (each run has its own clusters; "
        "default: 1 with -n, else as many as the workers budget allows)",
    )
    parser.add_argument(
        "--workers-budget",
        type=int,
        help="workers of all the runs at once, when planned (default: what the memory holds and the cores carry)",
    )
    parser.add_argument(
        "--update-durations",
        action="store_true",
        help="record what each run took in bench/defects/durations.json, to plan the next table",
    )
    parser.add_argument(
        "--report-dir",
        type=Path,
        help="where each run's reports and the table go (default: a new temporary directory)",
    )
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip the run without defect (its failures are then not discounted)",
    )
    parser.add_argument(
        "--from-report",
        action="store_true",
        help="run nothing: judge again the runs an earlier --report-dir holds (its baseline and defect directories)",
    )
    parser.add_argument("--check", action="store_true", help="only check that every defect still applies")
    parser.add_argument("--list", action="store_true", help="only print the catalog")
    args = parser.parse_args()
    catalog = seeding.load_catalog()
    if args.list:
        for d in catalog.defects:
            print(f"{d.id:<38} {d.component:<10} {d.description}")
        return 0
    if args.check:
        problems = [(d.id, r) for d in [catalog.runtime, *catalog.defects] if (r := stale_reason(d))]
        for defect_id, reason in problems:
            print(f"defect stale: {defect_id}: {reason}")
        print(f"{len(catalog.defects) + 1 - len(problems)} of {len(catalog.defects) + 1} apply")
        return 1 if problems else 0
    if args.from_report and args.report_dir is None:
        parser.error("--from-report needs --report-dir")
    report_dir = args.report_dir or Path(tempfile.mkdtemp(prefix="nrop-bench-defects-"))
    defects = chosen(catalog, args.defects)
    if args.from_report:
        defects = [d for d in defects if (report_dir / d.id).is_dir()]
    runtime_stale = stale_reason(catalog.runtime)
    header = [
        f"kill table: tier0..{args.tier_up_to}, commit {_git_head()}, {datetime.date.today().isoformat()}"
    ]
    if not args.from_report:
        header.append(benchsuite.speed_line(benchsuite.machine_speed()))
    stale = {d.id: r for d in defects if (r := runtime_stale or stale_reason(d)) is not None}
    for defect_id, reason in stale.items():
        print(f"defect stale: {defect_id}: {reason}")
    to_run = [d.id for d in defects if d.id not in stale]
    if args.from_report:
        runs = {
            i: load_run(report_dir / i, -1, 0.0) for i in [BASELINE, *to_run] if (report_dir / i).is_dir()
        }
    else:
        if not args.no_baseline:
            to_run.insert(0, BASELINE)
        started, cpu_before = time.monotonic(), benchsuite.children_cpu()
        runs = run_all(to_run, report_dir, args)
        header.append(
            effort_line(len(runs), time.monotonic() - started, benchsuite.children_cpu() - cpu_before)
        )
        if args.update_durations:
            write_durations(
                DURATIONS, args.tier_up_to, _git_head(), {i: report_dir / i / JUNIT for i in runs}
            )
            print(f"run durations written to {DURATIONS}", flush=True)
    baseline: list[Spec] = []
    if BASELINE in runs:
        header.append(baseline_verdict(runs[BASELINE]))
        baseline = runs[BASELINE].specs
    rows = []
    for defect in defects:
        if defect.id in stale:
            rows.append(stale_row(defect.id, defect.component, stale[defect.id]))
            continue
        pointers = catalog.components[defect.component].pointers
        rows.append(judge(defect.id, defect.component, pointers, runs[defect.id], baseline))
    lines = [*header, "", *markdown_table(rows)]
    (report_dir / TABLE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n" + "\n".join(lines))
    print(f"\nreports: {report_dir}")
    return 0 if all(r.verdict == "yes" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
