"""bench/suite.py: how a run's measured spec durations merge into the suite's durations.json."""

from __future__ import annotations

import pytest
from _helpers_bench import ROOT, load

suite = load("bench_suite", ROOT / "bench" / "suite.py")
KEY = "test_x.py::TestY::test_z"


@pytest.mark.parametrize(
    ("known", "outcome", "seconds", "waited", "expected"),
    [
        pytest.param({KEY: 20.9}, "passed", 60.0, 0.0, 60.0, id="passed-replaces-longer"),
        pytest.param({KEY: 90.0}, "passed", 60.0, 0.0, 60.0, id="passed-replaces-shorter"),
        pytest.param({}, "passed", 60.0, 10.0, 50.0, id="cluster-wait-left-out"),
        pytest.param({KEY: 20.9}, "failure", 235.2, 37.7, 197.5, id="failure-raises"),
        pytest.param({KEY: 60.0}, "failure", 5.0, 0.0, 60.0, id="early-failure-does-not-lower"),
        pytest.param({}, "failure", 5.0, 0.0, 5.0, id="failure-of-an-unknown-spec-counts"),
        pytest.param({KEY: 60.0}, "error", 300.0, 0.0, 60.0, id="error-ignored"),
        pytest.param({KEY: 60.0}, "skipped", 0.1, 0.0, 60.0, id="skip-ignored"),
        pytest.param({}, "skipped", 0.1, 0.0, None, id="skip-adds-nothing"),
    ],
)
def test_merged_durations(
    known: dict[str, float], outcome: str, seconds: float, waited: float, expected: float | None
) -> None:
    case = suite.Case(KEY, "x", seconds, outcome, waited)
    merged = suite.merged_durations({**known, "other.py::test_o": 1.0}, [case])
    assert merged.get(KEY) == expected
    assert merged["other.py::test_o"] == 1.0
    assert list(merged) == sorted(merged)


@pytest.mark.parametrize(
    ("known", "runs", "expected"),
    [
        pytest.param(
            {KEY: 27.0}, [("passed", 16.0), ("passed", 17.0), ("passed", 16.2)], 16.2, id="median-of-three"
        ),
        pytest.param({KEY: 27.0}, [("passed", 16.0), ("passed", 30.0)], 23.0, id="median-of-two"),
        pytest.param(
            {KEY: 27.0}, [("passed", 16.0), ("failure", 90.0)], 16.0, id="a-pass-outweighs-a-failure"
        ),
        pytest.param(
            {KEY: 27.0}, [("failure", 40.0), ("failure", 90.0)], 90.0, id="failures-raise-to-the-longest"
        ),
    ],
)
def test_several_runs_merge_into_one_entry(
    known: dict[str, float], runs: list[tuple[str, float]], expected: float
) -> None:
    cases = [suite.Case(KEY, "x", seconds, outcome, 0.0) for outcome, seconds in runs]
    assert suite.merged_durations(known, cases)[KEY] == expected


def _run(tier: int, seconds: float, cpu: float = 100.0) -> object:
    return suite.Run(
        tier=tier,
        seconds=seconds,
        exit_code=0,
        counts={"passed": 24},
        workers=10,
        memory=0,
        cpu_seconds=cpu,
        load_before=0.0,
        load_after=0.0,
        report_dir=ROOT / "no-such-report",
    )


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        pytest.param([(0, 104.0)], [], id="one-run-no-spread"),
        pytest.param(
            [(0, 92.4), (0, 112.7), (0, 101.0)],
            [
                "tier0..0: 3 runs, wall least/median/most 92.4/101.0/112.7 s, CPU 100/100/100 s; "
                "median OVER 100s, 1 of 3 runs within"
            ],
            id="median-over-one-within",
        ),
        pytest.param(
            [(0, 99.0), (0, 100.0)],
            [
                "tier0..0: 2 runs, wall least/median/most 99.0/99.5/100.0 s, CPU 100/100/100 s; "
                "median within 100s, 2 of 2 runs within"
            ],
            id="target-inclusive",
        ),
        pytest.param(
            [(1, 500.0), (1, 510.0)],
            ["tier0..1: 2 runs, wall least/median/most 500.0/505.0/510.0 s, CPU 100/100/100 s"],
            id="tier-without-target",
        ),
        pytest.param(
            [(0, 95.0), (99, 520.0), (0, 105.0), (99, 500.0)],
            [
                "tier0..0: 2 runs, wall least/median/most 95.0/100.0/105.0 s, CPU 100/100/100 s; "
                "median within 100s, 1 of 2 runs within",
                "all: 2 runs, wall least/median/most 500.0/510.0/520.0 s, CPU 100/100/100 s; "
                "median OVER 360s, 0 of 2 runs within",
            ],
            id="interleaved-tiers",
        ),
    ],
)
def test_spread(runs: list[tuple[int, float]], expected: list[str]) -> None:
    assert suite.spread([_run(tier, seconds) for tier, seconds in runs]) == expected


def test_spread_reports_cpu_least_median_most() -> None:
    runs = [_run(0, 100.0, cpu) for cpu in (120.0, 90.4, 101.0)]
    assert "CPU 90/101/120 s" in suite.spread(runs)[0]


def test_figures_show_the_cpu_of_each_run() -> None:
    head, row = suite.figures([_run(0, 101.0, 117.0)])
    assert head.index("CPU s") + len("CPU s") == row.index("117") + len("117")  # right-aligned under it
    assert row.split()[6] == "117"


def test_children_cpu_counts_a_waited_for_child() -> None:
    import subprocess
    import sys

    before = suite.children_cpu()
    subprocess.run([sys.executable, "-c", "sum(range(3_000_000))"], check=True)
    assert suite.children_cpu() > before
