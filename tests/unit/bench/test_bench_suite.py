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
