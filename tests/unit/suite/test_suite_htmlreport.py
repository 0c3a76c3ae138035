"""The HTML report: zone occupancy arithmetic, one entry from a test's phase reports, and what a reader
sees of a failed test (in a real browser)."""

from __future__ import annotations

import shutil
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from _pytest._code.code import ReprFileLocation

from nrop.suite.htmlreport import ReportEntry, ZoneUsage, failure_page, render, zone_usage
from nrop.suite.reports import report_entry

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def res(name: str, allocatable: str, available: str) -> dict[str, str]:
    return {"name": name, "capacity": allocatable, "allocatable": allocatable, "available": available}


def nrt(node: str, *zones: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "metadata": {"name": node},
        "zones": [{"name": f"node-{i:02d}", "type": "Node", "resources": r} for i, r in enumerate(zones)],
    }


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        pytest.param([res("cpu", "18", "18")], [ZoneUsage("cpu", Fraction(18), Fraction(0))], id="idle"),
        pytest.param(
            [res("cpu", "18", "4")], [ZoneUsage("cpu", Fraction(18), Fraction(14))], id="partly-used"
        ),
        pytest.param(
            [res("memory", "2Gi", "0"), res("cpu", "1500m", "500m")],
            [
                ZoneUsage("cpu", Fraction(3, 2), Fraction(1)),
                ZoneUsage("memory", Fraction(2**31), Fraction(2**31)),
            ],
            id="sorted-by-name-milli-exact",
        ),
        pytest.param([res("example.com/deviceA", "0", "0")], [], id="nothing-allocatable-not-drawn"),
        pytest.param(
            [res("cpu", "4", "6")], [ZoneUsage("cpu", Fraction(4), Fraction(0))], id="never-negative"
        ),
    ],
)
def test_zone_usage(resources: list[dict[str, str]], expected: list[ZoneUsage]) -> None:
    assert zone_usage({"resources": resources}) == expected


FAILED = ReportEntry(
    nodeid="serial/test_x.py::test_fails",
    outcome="failed",
    duration=12.5,
    description="[test_id:47575] should fail on purpose",
    test_id="47575",
    labels=("tier0", "feature:tmpol"),
    message="AssertionError: pod stayed Pending",
    nrt_diff="worker-0 node-00 cpu: 18 -> 0",
    nrts=(nrt("worker-0", [res("cpu", "18", "0"), res("memory", "20Gi", "10Gi")], [res("cpu", "20", "20")]),),
)
PASSED = ReportEntry(nodeid="serial/test_x.py::test_ok", outcome="passed", duration=1.0, labels=("tier1",))


def test_render_puts_failures_first_with_diff_and_zone_pictures() -> None:
    page = render([PASSED, FAILED], wall_time=13.5)
    assert page.index("test_fails") < page.index("test_ok")
    assert "worker-0 node-00 cpu: 18 -&gt; 0" in page
    assert page.count('class="zone"') == 2
    assert "18 / 18" in page and "10.00Gi / 20.00Gi" in page
    assert "1 failed, 1 passed in 13.5 s" in page
    assert "<script" not in page and "http" not in page


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_a_browser_shows_the_failed_test_open_with_its_zone_pictures(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    report.write_text(render([PASSED, FAILED]), encoding="utf-8")
    assert CHROMIUM is not None
    dom = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            report.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    # The browser parsed it: the failed test is an open <details> holding the diff and one figure per zone.
    failed = dom[dom.index('<details class="test failed" open') :]
    failed = failed[: failed.index("</details>")]
    assert 'class="nrt-diff"' in failed
    assert failed.count('<figure class="zone"') == 2
    assert 'aria-label="cpu used 18 / 18"' in failed


# ----------------------------------------------------------------- one entry from the phase reports

PROPS = [
    ("test_id", "47575"),
    ("tier", "tier0"),
    ("labels", "tier0,feature:tmpol"),
    ("spec", "[test_id:47575] x"),
]
SNAPSHOT = {"nrt_diff": "worker-0:\n  node-00: cpu -4", "nrts": [nrt("worker-0", [res("cpu", "18", "14")])]}


class Traceback:
    """A failure as pytest keeps it: a crash location and a traceback to print."""

    reprcrash = ReprFileLocation("t.py", 7, "AssertionError: pod stayed Pending")

    def toterminal(self, tw: Any) -> None:
        tw.line("def test(): ...\nE   AssertionError: pod stayed Pending")


def phase(when: str, outcome: str, longrepr: Any = None, **extra: Any) -> pytest.TestReport:
    return pytest.TestReport(
        "t.py::test",
        ("t.py", 1, "test"),
        {},
        outcome,
        longrepr,
        when,
        duration=1.5,
        user_properties=PROPS,
        **extra,
    )


@pytest.mark.parametrize(
    ("phases", "outcome", "message", "diff"),
    [
        pytest.param(
            [phase("setup", "passed"), phase("call", "passed"), phase("teardown", "passed")], "passed", "", "",
            id="passed",
        ),
        pytest.param(
            [phase("setup", "passed"), phase("call", "failed", Traceback(), nrop_failure=SNAPSHOT)],
            "failed", "t.py:7: AssertionError: pod stayed Pending", SNAPSHOT["nrt_diff"], id="crash-line-not-traceback",
        ),
        pytest.param(
            [phase("setup", "passed"), phase("call", "failed", "AssertionError: pending", nrop_failure=SNAPSHOT),
             phase("teardown", "passed")],
            "failed", "AssertionError: pending", SNAPSHOT["nrt_diff"], id="call-failed-with-snapshot",
        ),
        pytest.param(
            [phase("setup", "passed"), phase("call", "passed"),
             phase("teardown", "failed", "cooldown failed", nrop_failure=SNAPSHOT)],
            "error", "[teardown] cooldown failed", SNAPSHOT["nrt_diff"], id="cooldown-is-an-error",
        ),
        pytest.param(
            [phase("setup", "skipped", ("t.py", 3, "Skipped: no second node")), phase("teardown", "passed")],
            "skipped", "no second node", "", id="skipped-with-reason",
        ),
        pytest.param(
            [phase("setup", "passed"), phase("call", "failed", "boom"),
             phase("teardown", "failed", "cooldown failed", nrop_failure=SNAPSHOT)],
            "failed", "boom\n\n[teardown] cooldown failed", SNAPSHOT["nrt_diff"], id="both-failed-first-snapshot",
        ),
    ],
)  # fmt: skip
def test_report_entry(phases: list[pytest.TestReport], outcome: str, message: str, diff: str) -> None:
    entry = report_entry("t.py::test", phases)
    assert (entry.outcome, entry.message, entry.nrt_diff) == (outcome, message, diff)
    assert entry.duration == pytest.approx(1.5 * len(phases))
    assert (entry.test_id, entry.labels, entry.description) == (
        "47575",
        ("tier0", "feature:tmpol"),
        "[test_id:47575] x",
    )
    assert len(entry.nrts) == (1 if diff else 0)
    failed = [p for p in phases if p.failed]
    assert entry.traceback == "\n\n".join(p.longreprtext for p in failed)


def test_failure_page_is_a_page_of_its_own() -> None:
    page = failure_page("t.py::test", "worker-0:\n  node-00: cpu -4", FAILED.nrts)
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert page.count('class="zone"') == 2 and "node-00: cpu -4" in page
