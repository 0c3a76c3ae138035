"""How a run is spread over workers (nrop.suite.plugin.lanes): the durations' keys and estimates, the plan, the worker count."""

from __future__ import annotations

import pytest

from nrop.suite.plugin import lanes
from nrop.suite.plugin.lanes import Spec

GiB = 2**30


@pytest.mark.parametrize(
    ("nodeid", "key"),
    [
        ("serial/test_x.py::T::test_y[84310]", "test_x.py::T::test_y[84310]"),
        ("/tests/serial/test_x.py::test_y", "test_x.py::test_y"),
        ("test_x.py::test_y", "test_x.py::test_y"),
    ],
)
def test_spec_key_drops_the_tests_directory(nodeid: str, key: str) -> None:
    assert lanes.spec_key(nodeid) == key


@pytest.mark.parametrize(
    ("key", "durations", "seconds"),
    [
        ("t.py::a", {"t.py::a": 12.5, "t.py::b": 1.0}, 12.5),
        ("t.py::new", {"t.py::a": 10.0, "t.py::b": 30.0, "u.py::c": 90.0}, 20.0),
        ("v.py::new", {"t.py::a": 10.0, "t.py::b": 20.0, "u.py::c": 90.0}, 20.0),
        ("t.py::nothing-on-file", {}, 0.0),
    ],
)
def test_estimate(key: str, durations: dict[str, float], seconds: float) -> None:
    assert lanes.estimate(key, durations) == seconds


def d(name: str, seconds: float) -> Spec:
    return Spec(name, "default", seconds)


def c(name: str, seconds: float) -> Spec:
    return Spec(name, "container-scope", seconds)


def ids(plan: list[lanes.Lane]) -> list[list[str]]:
    return [[spec.nodeid for spec in lane.specs] for lane in plan]


@pytest.mark.parametrize(
    ("specs", "workers", "startup", "expected", "makespan"),
    [
        pytest.param(
            [d("short", 10), d("long", 100), d("medium", 50), d("short2", 10)], 2, 0,
            [["long"], ["medium", "short", "short2"]], 100, id="longest-first",
        ),
        pytest.param(
            [c("c1", 60), c("c2", 60), c("c3", 60), d("d1", 30), d("d2", 30)], 4, 25,
            [["c1"], ["c2"], ["c3"], ["d1", "d2"]], 85, id="a-profile-spread-over-clusters-of-its-own",
        ),
        pytest.param(
            [c("c1", 10), c("c2", 10), d("d1", 10), d("d2", 10)], 2, 25,
            [["c1", "c2"], ["d1", "d2"]], 45, id="short-specs-share-a-cluster-rather-than-start-one",
        ),
        pytest.param(
            [d("d1", 100), c("c1", 30), d("d2", 20), d("d3", 20)], 2, 10,
            [["d1"], ["c1", "d2", "d3"]], 110, id="a-lane-runs-its-profiles-one-after-the-other",
        ),
        pytest.param(
            [Spec("plain", None, 1), d("d1", 5)], 1, 25,
            [["plain", "d1"]], 31, id="a-test-without-a-cluster-costs-no-start",
        ),
        pytest.param([d("d1", 5)], 3, 25, [["d1"], [], []], 30, id="more-workers-than-specs"),
    ],
)  # fmt: skip
def test_plan(
    specs: list[Spec], workers: int, startup: float, expected: list[list[str]], makespan: float
) -> None:
    plan = lanes.plan(specs, workers, startup)
    assert ids(plan) == expected
    assert lanes.makespan(plan) == makespan
    assert sorted(n for lane in ids(plan) for n in lane) == sorted(s.nodeid for s in specs)


@pytest.mark.parametrize(
    ("specs", "first", "expected", "makespan"),
    [
        pytest.param(
            [d("d60", 60), d("d30a", 30), d("d30b", 30)], [10, 40],
            [["d60", "d30b"], ["d30a"]], 100, id="a-worker-ready-later-gets-less",
        ),
        pytest.param(
            [c("c1", 30), d("d1", 25), d("d2", 25)], [10, 40],
            [["d1", "d2"], ["c1"]], 70, id="by-profile-the-most-to-the-worker-ready-first",
        ),
        pytest.param(
            [d("d1", 10), c("c1", 10)], [10, 100],
            [["c1", "d1"], []], 70, id="a-lane-s-second-cluster-costs-startup",
        ),
        pytest.param(
            [c("c0", 30), d("d1", 60), d("d2", 100)], [20, 50],
            [["d1", "c0"], ["d2"]], 150, id="the-lane-with-most-to-run-to-the-worker-ready-first",
        ),
    ],
)  # fmt: skip
def test_plan_with_first_clusters_ready_one_after_the_other(
    specs: list[Spec], first: list[float], expected: list[list[str]], makespan: float
) -> None:
    plan = lanes.plan(specs, len(first), 40, first)
    assert ids(plan) == expected
    assert lanes.makespan(plan) == makespan


def test_plan_without_first_clusters_counts_startup_for_each() -> None:
    specs = [d("d60", 60), d("d30a", 30), d("d30b", 30)]
    assert ids(lanes.plan(specs, 2, 25)) == [["d60"], ["d30a", "d30b"]]
    assert ids(lanes.plan(specs, 2, 25, [25, 25])) == [["d60"], ["d30a", "d30b"]]


def test_plan_needs_a_first_cluster_per_worker() -> None:
    with pytest.raises(ValueError, match="2 workers need 2 first cluster starts, not 1"):
        lanes.plan([d("d1", 1)], 2, 10, [10])


def test_plan_needs_a_worker() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        lanes.plan([d("d1", 1)], 0, 10)


def test_a_lane_lists_its_profiles_in_the_order_it_starts_them() -> None:
    (lane,) = lanes.plan([d("d1", 100), c("c1", 30), Spec("plain", None, 1)], 1, 10)
    assert lane.profiles == ["default", "container-scope"]
    assert [s.nodeid for s in lane.specs] == ["plain", "d1", "c1"]


@pytest.mark.parametrize(
    ("specs", "expected"),
    [
        pytest.param(
            [d("d100", 100), d("d40", 40), d("d30", 30), d("d10", 10), c("c20", 20)],
            ["d100", "d40", "d10", "d30", "c20"], id="the-next-cluster-behind-the-shortest-long-enough",
        ),
        pytest.param(
            [d("d10", 10), d("d5", 5), c("c1", 1)],
            ["d5", "d10", "c1"], id="none-long-enough-the-longest",
        ),
        pytest.param(
            [d("d100", 100), d("d10", 10), d("d5", 5)],
            ["d100", "d10", "d5"], id="the-last-profile-longest-first",
        ),
    ],
)  # fmt: skip
def test_a_profile_before_another_ends_with_the_spec_its_next_cluster_starts_behind(
    specs: list[Spec], expected: list[str]
) -> None:
    assert lanes.PREPARE_COVER_SECONDS == 25
    (lane,) = lanes.plan(specs, 1, 10)
    assert [s.nodeid for s in lane.specs] == expected


@pytest.mark.parametrize(
    ("specs", "delays"),
    [
        pytest.param([d("d100", 100), c("c1", 10)], {"d100": 55.0}, id="prepared-when-a-cover-is-left"),
        pytest.param([d("d20", 20), c("c1", 10)], {"d20": 0.0}, id="a-short-spec-prepares-at-once"),
        pytest.param(
            [Spec("plain", None, 50), d("d1", 100), d("d2", 40), c("c1", 10), Spec("plain2", None, 5)],
            {"d2": 7.0}, id="only-from-a-cluster-to-one-of-another-profile",
        ),
        pytest.param([d("d1", 100), d("d2", 100)], {}, id="one-profile-nothing-to-prepare"),
    ],
)  # fmt: skip
def test_prepare_delays(specs: list[Spec], delays: dict[str, float]) -> None:
    assert (lanes.PREPARE_COVER_SECONDS, lanes.PREPARE_EARLY) == (25, 0.2)
    assert lanes.prepare_delays(specs) == pytest.approx(delays)


TIER0_LIKE = [c("unsched1", 56), c("unsched2", 56), c("unsched3", 56), c("cnt", 16)] + [
    d(f"d{i}", seconds)
    for i, seconds in enumerate((44, 34, 33, 31, 29, 18, 16, 16, 15, 13, 10, 10, 10, 8, 6, 6))
]


@pytest.mark.parametrize(
    ("specs", "memory", "workers"),
    [
        pytest.param(TIER0_LIKE, 16 * GiB, 10, id="tier0-like-enough-memory"),
        pytest.param(TIER0_LIKE, 2 * GiB + 3 * lanes.MEMORY_PER_WORKER, 3, id="tier0-like-memory-bound"),
        pytest.param(TIER0_LIKE, 2 * GiB + lanes.MEMORY_PER_WORKER, 0, id="room-for-one-worker-is-serial"),
        pytest.param(TIER0_LIKE, GiB, 0, id="below-the-reserve"),
        pytest.param([d("d1", 60)], 16 * GiB, 0, id="one-spec-is-serial"),
        pytest.param([d("d1", 60), d("d2", 60)], 16 * GiB, 2, id="two-long-specs"),
        pytest.param([d("d1", 1), d("d2", 1)], 16 * GiB, 0, id="a-second-cluster-would-not-pay-off"),
        pytest.param([Spec("a", None, 5), Spec("b", None, 5)], 16 * GiB, 0, id="nothing-needs-a-cluster"),
        pytest.param([c("c1", 60), c("c2", 60), c("c3", 60), d("d1", 30), d("d2", 30)], 16 * GiB, 4, id="profiles"),
    ],
)  # fmt: skip
def test_worker_count(specs: list[Spec], memory: int, workers: int) -> None:
    assert lanes.worker_count(specs, memory, cores=2) == workers


WHOLE_SUITE_LIKE = [d(f"long{i}", 200) for i in range(100)]


@pytest.mark.parametrize(
    ("cores", "memory", "workers"),
    [
        (2, 64 * GiB, 25),  # 2 / 0.08: the cores bound it, not the memory (80 would fit)
        (4, 64 * GiB, 50),
        (8, 128 * GiB, 100),  # one per spec
        (2, 2 * GiB + 10 * lanes.MEMORY_PER_WORKER, 10),  # the memory bounds it
        (0, 64 * GiB, 12),  # an unknown core count counts as one
    ],
    ids=["two-cores", "four-cores", "one-per-spec", "memory-bound", "no-cores-reported"],
)
def test_worker_count_keeps_within_what_the_cores_keep_up_with(cores: int, memory: int, workers: int) -> None:
    assert lanes.worker_count(WHOLE_SUITE_LIKE, memory, cores=cores) == workers


@pytest.mark.parametrize(
    ("workers", "cores", "seconds"),
    # 13 + 3 * workers * (1 + (workers - 1) / 33) / cores
    [(1, 2, 14.5), (6, 2, 23.364), (8, 4, 20.273), (3, 0, 22.545), (22, 2, 67.0)],
)
def test_clusters_starting_together_share_the_cores(workers: int, cores: int, seconds: float) -> None:
    assert lanes.cluster_start(workers, cores) == pytest.approx(seconds, abs=0.001)


def test_workers_first_clusters_are_ready_one_after_the_other() -> None:
    assert lanes.first_clusters(4, 2) == pytest.approx([14.5, 16.091, 17.773, 19.545], abs=0.001)
    assert lanes.first_clusters(4, 2)[-1] == lanes.cluster_start(4, 2)
    assert lanes.cluster_ready(0, 0) == 16.0  # an unknown core count counts as one
