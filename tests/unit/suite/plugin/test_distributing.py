"""The xdist scheduling of a planned run (nrop.suite.plugin.distributing.LaneScheduling), with stand-in workers;
and where the durations and the free memory come from."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from nrop.suite.plugin.distributing import (
    LaneScheduling,
    available_memory,
    cpu_quotas,
    load_durations,
    usable_cores,
)
from nrop.suite.plugin.lanes import Spec


@dataclass(eq=False)
class Worker:
    """What the scheduler uses of an xdist WorkerController: its id, what it was sent, shutdown."""

    id: str
    sent: list[int] = field(default_factory=list)
    shutting_down: bool = False

    @property
    def gateway(self) -> SimpleNamespace:
        return SimpleNamespace(id=self.id)

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def scheduling(
    lanes: dict[str, list[str]], specs: list[Spec]
) -> tuple[LaneScheduling, list[Worker], list[str]]:
    config: Any = SimpleNamespace(getvalue=lambda name: ["popen"] * len(lanes))
    sched = LaneScheduling(config, lanes, {spec.nodeid: spec for spec in specs})
    workers = [Worker(worker) for worker in lanes]
    collection = sorted(spec.nodeid for spec in specs)
    for worker in workers:
        sched.add_node(worker)
    for worker in workers:  # as xdist's DSession does after each worker's collection
        sched.add_node_collection(worker, collection)
        assert sched.collection_is_completed
        sched.schedule()
    return sched, workers, collection


def test_a_worker_starts_its_lane_once_it_has_collected_not_once_all_have() -> None:
    specs = [d("a", 10), d("b", 5), d("c", 5), d("e", 5)]
    config: Any = SimpleNamespace()
    sched = LaneScheduling(config, {"gw0": ["a", "b"], "gw1": ["c", "e"]}, {s.nodeid: s for s in specs})
    first, late = Worker("gw0"), Worker("gw1")
    sched.add_node(first)
    sched.add_node(late)
    collection = sorted(s.nodeid for s in specs)
    assert not sched.collection_is_completed
    sched.add_node_collection(first, collection)
    assert sched.collection_is_completed
    sched.schedule()
    assert [collection[i] for i in first.sent] == ["a", "b"]
    assert late.sent == []
    for index in list(first.sent):
        sched.mark_test_complete(first, index)
    assert not sched.tests_finished  # gw1 has its lane still to collect and run
    sched.add_node_collection(late, collection)
    sched.schedule()
    assert [collection[i] for i in late.sent] == ["c", "e"]


def test_a_collection_that_differs_is_reported_and_stops_the_run() -> None:
    reports: list[Any] = []

    def collectreport(*, report: Any) -> None:  # xdist calls the hook with keywords
        reports.append(report)

    config: Any = SimpleNamespace(hook=SimpleNamespace(pytest_collectreport=collectreport))
    specs = [d("a", 10), d("b", 5), d("c", 5)]
    sched = LaneScheduling(config, {"gw0": ["a", "b"], "gw1": ["c"]}, {s.nodeid: s for s in specs})
    good, odd = Worker("gw0"), Worker("gw1")
    sched.add_node(good)
    sched.add_node(odd)
    sched.add_node_collection(good, ["a", "b", "c"])
    sched.schedule()
    sched.add_node_collection(odd, ["a", "b", "c", "x"])
    assert [r.outcome for r in reports] == ["failed"]
    assert good.shutting_down and odd.shutting_down and odd.sent == []
    assert not sched.has_pending or sched.node2pending[good]  # only what gw0 was already sent


def run_all(sched: LaneScheduling, workers: list[Worker], collection: list[str]) -> dict[str, list[str]]:
    """Each worker finishes its specs in turn (one spec per worker per round) until all are done."""
    done: dict[str, list[str]] = {w.id: [] for w in workers}
    while sched.has_pending:
        progressed = False
        for worker in workers:
            pending = sched.node2pending.get(worker, [])
            if pending and (len(pending) >= 2 or worker.shutting_down):
                done[worker.id].append(collection[pending[0]])
                sched.mark_test_complete(worker, pending[0])
                progressed = True
        assert progressed, "a worker waits for its next spec while nothing else can move"
    assert sched.tests_finished
    return done


def d(name: str, seconds: float) -> Spec:
    return Spec(name, "default", seconds)


@pytest.mark.parametrize(
    ("lanes", "specs", "ran"),
    [
        pytest.param(
            {"gw0": ["a"], "gw1": ["b", "c"]}, [d("a", 10), d("b", 5), d("c", 5)],
            {"gw0": ["a"], "gw1": ["b", "c"]}, id="each-worker-its-lane",
        ),
        pytest.param(
            {"gw0": ["a"], "gw1": ["b", "c", "d", "e"]}, [d("a", 10), d("b", 50), d("c", 10), d("d", 10), d("e", 10)],
            {"gw0": ["a", "e", "d"], "gw1": ["b", "c"]}, id="a-worker-done-early-helps-the-last-lane",
        ),
        pytest.param(
            {"gw0": ["a"], "gw1": ["b", "c", "d"]}, [d("a", 100), d("b", 50), d("c", 10), d("d", 10)],
            {"gw0": ["a"], "gw1": ["b", "c", "d"]}, id="no-help-that-would-end-later",
        ),
        pytest.param(
            {"gw0": ["a"], "gw1": ["b", "c", "d", "e"]},
            [d("a", 10), Spec("b", "container-scope", 100)] + [Spec(n, "container-scope", 10) for n in "cde"],
            {"gw0": ["a", "e", "d"], "gw1": ["b", "c"]}, id="help-that-pays-for-another-cluster",
        ),
        pytest.param(
            {"gw0": ["a"], "gw1": ["b", "c", "d"]},
            [d("a", 10), Spec("b", "container-scope", 30)] + [Spec(n, "container-scope", 10) for n in "cd"],
            {"gw0": ["a"], "gw1": ["b", "c", "d"]}, id="no-help-that-another-cluster-would-make-end-later",
        ),
    ],
)  # fmt: skip
def test_lane_scheduling(lanes: dict[str, list[str]], specs: list[Spec], ran: dict[str, list[str]]) -> None:
    sched, workers, collection = scheduling(lanes, specs)
    assert run_all(sched, workers, collection) == ran
    assert all(worker.shutting_down for worker in workers)


@pytest.mark.parametrize(
    ("done_at", "helped"),
    [(10.0, True), (90.0, False)],
    ids=["early-in-the-long-spec", "late-in-the-long-spec"],
)
def test_a_running_spec_counts_for_what_is_left_of_it(done_at: float, helped: bool) -> None:
    """gw0 is on its last spec while gw1 runs its 100 s spec with 30 s of other-profile specs after
    it: a help (10 s, plus 30 s for a cluster) pays only while much of the long spec is still to run
    (counting the whole 100 s, it would pay in both cases)."""
    now = [0.0]
    specs = [d("a", 10), d("f", 10), Spec("b", "container-scope", 100)]
    specs += [Spec(n, "container-scope", 10) for n in "cde"]
    config: Any = SimpleNamespace()
    lanes = {"gw0": ["a", "f"], "gw1": ["b", "c", "d", "e"]}
    sched = LaneScheduling(config, lanes, {s.nodeid: s for s in specs}, clock=lambda: now[0])
    workers = [Worker("gw0"), Worker("gw1")]
    collection = sorted(s.nodeid for s in specs)
    for worker in workers:
        sched.add_node(worker)
    for worker in workers:
        sched.add_node_collection(worker, collection)
        sched.schedule()
    now[0] = done_at
    sched.mark_test_complete(workers[0], collection.index("a"))
    assert ("e" in [collection[i] for i in workers[0].sent]) is helped
    assert workers[0].shutting_down is not helped


def test_a_crashed_worker_leaves_its_specs_to_the_others() -> None:
    sched, (gw0, gw1), collection = scheduling(
        {"gw0": ["a", "b", "c"], "gw1": ["d"]}, [d("a", 30), d("b", 20), d("c", 10), d("d", 5)]
    )
    assert [collection[i] for i in gw0.sent] == ["a", "b"]
    assert [collection[i] for i in gw1.sent] == ["d", "c"]  # c: gw1 helps from the start
    assert sched.remove_node(gw0) == "a"  # the spec it was running
    assert run_all(sched, [gw1], collection) == {"gw1": ["d", "c", "b"]}


def test_durations_and_memory_have_safe_fallbacks(tmp_path: Path) -> None:
    (tmp_path / "durations.json").write_text('{"test_x.py::test_a": 12.5}')
    assert load_durations(tmp_path / "durations.json") == {"test_x.py::test_a": 12.5}
    assert load_durations(tmp_path / "missing.json") == {}
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\nMemAvailable: 64 kB\n")
    assert available_memory(tmp_path / "meminfo") == 64 * 1024
    assert available_memory(tmp_path / "missing") > 0


V1 = "4:cpu,cpuacct:/job\n3:memory:/job\n"  # a v1 host: the cpu controller's line among others
QUOTA_V1 = {"cpu,cpuacct/job/cpu.cfs_period_us": "100000\n"}


@pytest.mark.parametrize(
    ("membership", "files", "quotas"),
    [
        ("0::/\n", {"cpu.max": "max 100000\n"}, []),
        ("0::/\n", {"cpu.max": "100000 100000\n"}, [1.0]),
        ("0::/\n", {"cpu.max": "250000 100000\n"}, [2.5]),
        ("0::/\n", {"cpu.max": "50000 100000\n"}, [0.5]),
        ("0::/\n", {}, []),
        ("0::/\n", {"cpu.max": "garbage\n"}, []),
        # v2, the quota on the parent of the process's cgroup (a CI job's slice)
        ("0::/ci/job\n", {"ci/cpu.max": "150000 100000\n", "ci/job/cpu.max": "max 100000\n"}, [1.5]),
        # v1: the controller mounted as "cpu,cpuacct", the quota on the process's cgroup
        (V1, {**QUOTA_V1, "cpu,cpuacct/job/cpu.cfs_quota_us": "110000\n"}, [1.1]),
        (V1, {**QUOTA_V1, "cpu,cpuacct/job/cpu.cfs_quota_us": "-1\n"}, []),
        # v1 with the controller mounted as "cpu" only
        (
            "2:cpu:/job\n",
            {"cpu/job/cpu.cfs_quota_us": "200000\n", "cpu/job/cpu.cfs_period_us": "100000\n"},
            [2.0],
        ),
        ("not a cgroup line\n", {"cpu.max": "300000 100000\n"}, [3.0]),  # the root as mounted still counts
    ],
    ids=[
        "no-quota",
        "one-core",
        "two-and-a-half",
        "half-a-core",
        "no-cgroup-file",
        "unreadable",
        "v2-parent",
        "v1",
        "v1-no-quota",
        "v1-cpu-only",
        "odd-membership",
    ],
)
def test_cpu_quotas_are_read_from_the_process_s_cgroups_and_their_parents(
    tmp_path: Path, membership: str, files: dict[str, str], quotas: list[float]
) -> None:
    root = tmp_path / "cgroup"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="ascii")
    root.mkdir(exist_ok=True)
    (tmp_path / "cgroup-membership").write_text(membership, encoding="ascii")
    assert cpu_quotas(root, tmp_path / "cgroup-membership") == pytest.approx(quotas)
    affinity = len(os.sched_getaffinity(0))
    bound = max(1.0, min(quotas)) if quotas else affinity
    assert usable_cores(root, tmp_path / "cgroup-membership") == min(affinity, bound)
