"""The HTML report: zone occupancy arithmetic, one entry from a test's phase reports, what a reader
sees of a failed test and of the run's timeline (in a real browser)."""

from __future__ import annotations

import shutil
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from _pytest._code.code import ReprFileLocation

from nrop.suite.plugin import reports
from nrop.suite.plugin.htmlreport import (
    ClusterSpan,
    ReportEntry,
    ZoneUsage,
    failure_page,
    render,
    timeline,
    zone_usage,
)
from nrop.suite.plugin.reports import report_entry

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
    evidence=(("secondary scheduler logs", "I1129 filter: cannot align <pod>"),),
)
PASSED = ReportEntry(nodeid="serial/test_x.py::test_ok", outcome="passed", duration=1.0, labels=("tier1",))


def test_render_puts_failures_first_with_diff_and_zone_pictures() -> None:
    page = render([PASSED, FAILED], wall_time=13.5)
    assert page.index("test_fails") < page.index("test_ok")
    assert "worker-0 node-00 cpu: 18 -&gt; 0" in page
    assert page.count('class="zone"') == 2
    assert "18 / 18" in page and "10.00Gi / 20.00Gi" in page
    assert (
        "<summary>secondary scheduler logs</summary><pre>I1129 filter: cannot align &lt;pod&gt;</pre>" in page
    )
    assert "1 failed, 1 passed in 13.5 s" in page
    assert "<script" not in page and "http" not in page


def browse(tmp_path: Path, page: Path, *how: str) -> str:
    """What headless chromium makes of ``page`` (``--dump-dom``: the DOM it parsed, on stdout)."""
    assert CHROMIUM is not None
    return subprocess.run(
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
            *how,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_a_browser_shows_the_failed_test_open_with_its_zone_pictures(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    report.write_text(render([PASSED, FAILED]), encoding="utf-8")
    dom = browse(tmp_path, report, "--dump-dom")
    # The browser parsed it: the failed test is an open <details> holding the diff and one figure per zone.
    failed = dom[dom.index('<details class="test failed" open') :]
    failed = failed[: failed.index("</details>")]
    assert 'class="nrt-diff"' in failed
    assert failed.count('<figure class="zone"') == 2
    assert 'aria-label="cpu used 18 / 18"' in failed


# ------------------------------------------------------------------------------------ the timeline

T0 = 1_800_000_000.0
TIMED = [
    ReportEntry(
        "serial/t.py::test_a[85007]",
        "passed",
        76,
        test_id="85007",
        lane="gw0",
        start=T0 + 10,
        stop=T0 + 86,
        waited=20,
    ),
    ReportEntry(
        "serial/t.py::test_b[47577]", "failed", 16, test_id="47577", lane="gw1", start=T0 + 25, stop=T0 + 41
    ),
    ReportEntry("serial/t.py::test_c", "skipped", 1, lane="gw1", start=T0 + 41, stop=T0 + 42),
    ReportEntry("serial/t.py::test_untimed", "passed", 1),
]
SPANS = [ClusterSpan("gw0", "container-scope", T0, T0 + 30), ClusterSpan("gw1", "default", T0 + 1, T0 + 25)]


def test_the_timeline_has_a_lane_per_worker_with_its_clusters_and_specs_on_one_axis() -> None:
    svg = timeline(TIMED, SPANS)
    assert svg.count('class="lane"') == 2 and svg.index('data-lane="gw0"') < svg.index('data-lane="gw1"')
    assert (
        svg.count('class="cluster"') == 2 and svg.count('class="spec ') == 3
    )  # the untimed entry is left out
    # one axis: 86 s over 1000 px; gw0's first spec waits 20 s for its cluster (paler), then runs
    assert '<g class="cluster"><rect x="56.0" y="18.0" width="348.8"' in svg
    assert '<g class="spec passed"><rect x="172.3" y="30.0" width="883.7"' in svg
    assert '<rect class="waiting" x="172.3" y="30.0" width="232.6"' in svg
    assert svg.count('class="waiting"') == 1 and "of which 20.0 s waiting for its cluster" in svg
    assert ">85007</text>" in svg and ">47577</text>" in svg  # labels that fit are written on the bar
    assert "the run ends with lane <b>gw0</b> at 1m26s" in svg
    assert "<title>serial/t.py::test_b[47577]: failed, 16.0 s from 25s</title>" in svg


def test_no_times_no_timeline() -> None:
    assert timeline([PASSED, FAILED]) == ""
    assert "Timeline" not in render([PASSED, FAILED])


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_a_browser_draws_the_timeline(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    report.write_text(render(TIMED, spans=SPANS), encoding="utf-8")
    dom = browse(tmp_path, report, "--dump-dom")
    drawn = dom[dom.index('<svg class="timeline"') : dom.index("</svg>")]
    assert drawn.count("<rect") == 6 and drawn.count('class="lane"') == 2  # 2 clusters, 3 specs, 1 wait
    assert (
        browse(tmp_path, report, f"--screenshot={tmp_path / 'timeline.png'}", "--window-size=1200,600") == ""
    )
    assert (tmp_path / "timeline.png").stat().st_size > 0


# ----------------------------------------------------------------- one entry from the phase reports

PROPS = [
    ("test_id", "47575"),
    ("tier", "tier0"),
    ("labels", "tier0,feature:tmpol"),
    ("spec", "[test_id:47575] x"),
    ("target_seconds", "0.5"),
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
    assert (entry.lane, entry.waited) == ("main", 0.5)
    failed = [p for p in phases if p.failed]
    assert entry.traceback == "\n\n".join(p.longreprtext for p in failed)


def test_failure_page_is_a_page_of_its_own() -> None:
    page = failure_page("t.py::test", "worker-0:\n  node-00: cpu -4", FAILED.nrts)
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert page.count('class="zone"') == 2 and "node-00: cpu -4" in page


def test_a_failure_s_evidence_travels_to_the_report_without_the_nrt_diff_twice() -> None:
    diagnostics = reports.FailureDiagnostics(
        [
            ("events in namespace ns", "Warning FailedScheduling cannot align"),
            (reports.NRT_DIFF_TITLE, "worker-0 node-00 cpu: 18 -> 0"),
            ("secondary scheduler logs", "filter: cannot align"),
        ],
        [],
        "worker-0 node-00 cpu: 18 -> 0",
    )
    assert diagnostics.html_payload()["evidence"] == [
        ["events in namespace ns", "Warning FailedScheduling cannot align"],
        ["secondary scheduler logs", "filter: cannot align"],
    ]
