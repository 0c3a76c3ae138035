"""What a run of the serial suite leaves behind for people and for CI.

* JUnit ``e2e-serial-run.xml`` in the report directory (upstream's file name), every test
  case carrying the properties ``test_id``, ``tier``, ``labels`` and ``spec`` (the full text);
* allure results, when allure-pytest is active (``--alluredir``), with the same labels and
  the failure diagnostics attached;
* the failure diagnostics themselves, as report sections of the failed test: the events of
  the test namespace, the NRT difference from the NRTs the test started with, and the
  secondary scheduler's log since the test began (:func:`scheduler_log_window`; a long one
  keeps its beginning and its end, :func:`head_and_tail`), each pod headed with its start;
* a one-screen summary at the end: passed / failed / skipped per tier, skip reasons grouped,
  and the wall time;
* ``report.html`` in the report directory (:mod:`nrop.suite.plugin.htmlreport`): one entry per spec
  built from its phase reports (with where and when it ran, for the timeline); a failure
  carries the NRT diff and the NRTs at the failure (:data:`FAILURE_ATTR`), drawn as zone
  occupancy pictures, which also go to allure.

Diagnostics never raise: a dump that cannot be produced says why instead, so it cannot hide
the failure it documents.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nrop.api.metatime import parse_time
from nrop.suite.plugin import htmlreport
from nrop.suite.plugin.htmlreport import ClusterSpan, ReportEntry
from nrop.suite.plugin.lanes import TARGET_SECONDS
from nrop.suite.plugin.specs import SpecInfo

__all__ = [
    "FAILURE_ATTR",
    "HTML_NAME",
    "JUNIT_NAME",
    "NO_TIER",
    "FailureDiagnostics",
    "HtmlCollector",
    "RunSummary",
    "attach_to_allure",
    "failure_diagnostics",
    "head_and_tail",
    "report_entry",
    "scheduler_log_window",
    "skip_reason",
    "spec_properties",
    "write_html_report",
]

log = logging.getLogger(__name__)

JUNIT_NAME = "e2e-serial-run.xml"
HTML_NAME = "report.html"
#: attribute of a failed phase's test report holding ``FailureDiagnostics.html_payload()``
#: (plain data: pytest and xdist carry extra report attributes over to the controller)
FAILURE_ATTR = "nrop_failure"
NRT_DIFF_TITLE = "NRT difference from the start of the test"
#: The section of :mod:`nrop.suite.plugin.crosscheck`'s findings (first when there is one).
CROSSCHECK_TITLE = "what the nodes' kubelets report against the NRTs"
NO_TIER = "no tier"
SCHEDULER_POD_LABEL = "app=secondary-scheduler"
#: Seconds of scheduler log a failure report shows when the test's start is unknown.
SCHEDULER_LOG_SECONDS = 300
#: Added to the time since the test namespace was created (clock skew, the log line's own delay).
SCHEDULER_LOG_MARGIN = 10
#: Characters of each scheduler pod's log kept: its first and its last ones.
_LOG_HEAD_CHARS = 8_000
_LOG_TAIL_CHARS = 20_000
_MESSAGE_CHARS = 20_000


def spec_properties(info: SpecInfo) -> list[tuple[str, str]]:
    """The JUnit properties of a spec's test case."""
    return [
        ("test_id", info.test_id or ""),
        ("tier", info.tier or ""),
        ("labels", ",".join(info.labels)),
        ("spec", info.full_text),
    ]


# ------------------------------------------------------------------------------ the summary


@dataclass
class RunSummary:
    """Outcomes per tier, built from the test reports (works the same under xdist)."""

    outcomes: dict[str, str] = field(default_factory=dict)
    tiers: dict[str, str] = field(default_factory=dict)
    skip_reasons: Counter[str] = field(default_factory=Counter)

    def add(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        if "tier" not in props:
            return  # not a spec of the suite
        nodeid = report.nodeid
        self.tiers[nodeid] = str(props["tier"]) or NO_TIER
        previous = self.outcomes.get(nodeid)
        if report.failed:
            self.outcomes[nodeid] = "failed"
        elif report.skipped and previous is None:
            self.outcomes[nodeid] = "skipped"
            self.skip_reasons[skip_reason(report)] += 1
        elif report.when == "call" and report.passed and previous is None:
            self.outcomes[nodeid] = "passed"

    def table(self) -> list[tuple[str, Counter[str]]]:
        per_tier: dict[str, Counter[str]] = {}
        for nodeid, outcome in self.outcomes.items():
            per_tier.setdefault(self.tiers[nodeid], Counter())[outcome] += 1
        return sorted(per_tier.items(), key=lambda kv: (kv[0] == NO_TIER, kv[0]))

    def lines(self, wall_seconds: float) -> list[str]:
        if not self.outcomes:
            return []
        out = [f"{'tier':<8} {'passed':>7} {'failed':>7} {'skipped':>8}"]
        totals: Counter[str] = Counter()
        for tier, counts in self.table():
            totals.update(counts)
            out.append(f"{tier:<8} {counts['passed']:>7} {counts['failed']:>7} {counts['skipped']:>8}")
        out.append(f"{'total':<8} {totals['passed']:>7} {totals['failed']:>7} {totals['skipped']:>8}")
        if self.skip_reasons:
            out.append("skipped because:")
            out.extend(f"  {count:>3} x {reason}" for reason, count in self.skip_reasons.most_common())
        out.append(f"wall time {wall_seconds:.1f}s")
        return out


def skip_reason(report: pytest.TestReport) -> str:
    """The first line of a skipped report's reason."""
    longrepr = report.longrepr
    reason = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ").strip().splitlines()[0] if reason.strip() else "(no reason)"


# ------------------------------------------------------------------------- failure diagnostics


def _safe(title: str, produce: Any) -> tuple[str, str]:
    try:
        text = produce()
    except Exception as exc:  # the dump documents a failure; it must not replace it
        text = f"(could not collect: {type(exc).__name__}: {exc})"
    return title, text or "(none)"


def _events_text(events: Sequence[dict[str, Any]]) -> str:
    def when(event: dict[str, Any]) -> str:
        return str(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or "")

    lines = []
    for event in sorted(events, key=when):
        obj = event.get("involvedObject") or {}
        source = event.get("reportingComponent") or (event.get("source") or {}).get("component") or ""
        lines.append(
            f"{when(event)} {event.get('type', '')} {obj.get('kind', '')}/{obj.get('name', '')} "
            f"{event.get('reason', '')} [{source}]: {event.get('message', '')}"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class FailureDiagnostics:
    """What is collected when a spec fails: the report sections and the NRTs at that moment."""

    sections: list[tuple[str, str]]
    #: the NRT objects at the failure ([] when they could not be listed)
    nrts: list[dict[str, Any]]
    #: ``nrt_diff`` from the NRTs the test started with ("" when it could not be made)
    nrt_diff: str
    #: what the nodes' kubelets report against the NRTs (:mod:`nrop.suite.plugin.crosscheck`; embedded clusters)
    findings: list[str] = field(default_factory=list)

    def html_payload(self) -> dict[str, Any]:
        """The part the HTML report needs, as plain data (travels on the test report, also under xdist):
        the NRTs, and the sections other than the NRT difference (the events, the scheduler's log)."""
        evidence = [[title, text] for title, text in self.sections if title != NRT_DIFF_TITLE]
        return {"nrt_diff": self.nrt_diff, "nrts": self.nrts, "evidence": evidence}


def scheduler_log_window(namespace_created: str | None, *, now: datetime) -> tuple[int, str]:
    """The ``sinceSeconds`` of the scheduler logs in a failure report, and how to say it: from
    :data:`SCHEDULER_LOG_MARGIN` seconds before the test namespace was created (the spec's
    start), or the last :data:`SCHEDULER_LOG_SECONDS` when that time is unknown. A fixed
    window lost the beginning of a spec that had waited five minutes for its failure."""
    if namespace_created:
        try:
            started = parse_time(namespace_created)
        except ValueError:
            started = None
        if started is not None:
            seconds = max(0, math.ceil((now - started).total_seconds())) + SCHEDULER_LOG_MARGIN
            return seconds, f"log since the test namespace was created at {namespace_created}"
    return SCHEDULER_LOG_SECONDS, f"last {SCHEDULER_LOG_SECONDS}s"


def head_and_tail(text: str, head: int, tail: int) -> str:
    """``text`` whole when it has at most ``head + tail`` characters; else its first ``head`` and
    last ``tail`` characters, whole lines, with how many were left out between them."""
    if len(text) <= head + tail:
        return text
    first = text[:head]
    first = first[: first.rfind("\n") + 1] or first
    last = text[-tail:]
    if text[-tail - 1] != "\n":  # it starts mid-line: from the next whole line
        last = last[last.find("\n") + 1 :] or last
    left_out = len(text) - len(first) - len(last)
    return f"{first}[… {left_out} characters left out …]\n{last}"


def failure_diagnostics(fxt: Any, *, events: bool = True) -> FailureDiagnostics:
    """Diagnostics of a failed test that used the per-test fixture ``fxt``.

    ``events=False`` leaves out the namespace events and the scheduler log (a failing
    teardown has deleted the namespace already; the NRTs are what matters then).
    """
    from nrop.suite.e2e import kube as k
    from nrop.suite.e2e.nrt import compare as nrtcompare

    kube = fxt.kube
    namespace = fxt.namespace
    sections: list[tuple[str, str]] = []
    if events:
        sections.append(
            _safe(f"events in namespace {namespace}", lambda: _events_text(kube.list(k.EVENT, namespace)))
        )
    nrts: list[dict[str, Any]] = []
    diff = ""
    try:
        nrts = list(kube.list(k.NRT))
        diff = nrtcompare.nrt_diff(fxt.initial_nrts, nrts)
        sections.append((NRT_DIFF_TITLE, diff))
    except Exception as exc:  # the dump documents a failure; it must not replace it
        sections.append((NRT_DIFF_TITLE, f"(could not collect: {type(exc).__name__}: {exc})"))
    findings: list[str] = []
    cluster_dir = getattr(fxt.config, "cluster_dir", None)
    if events or cluster_dir is not None:
        from nrop.suite.e2e.nrt.updates import exporter_refresh_period
        from nrop.suite.plugin import crosscheck

        lines: list[str] = []

        def cross_check() -> str:
            if events:
                lines.extend(crosscheck.admission_findings(kube.list(k.POD, namespace)))
            if cluster_dir is not None and nrts:
                lines.extend(
                    crosscheck.embedded_findings(
                        cluster_dir,
                        nrts,
                        list_nrts=lambda: list(kube.list(k.NRT)),
                        refresh_period=exporter_refresh_period(kube),
                    )
                )
            return "\n".join(lines) or "(nothing: they agree)"

        sections.insert(0, _safe(CROSSCHECK_TITLE, cross_check))
        # the nodes that could not be read are notes of the section, not findings
        findings = [line for line in lines if not line.startswith("(")]
    if not events:
        return FailureDiagnostics(sections, nrts, diff, findings)
    operator_ns = getattr(fxt.config, "operator_namespace", "numaresources")

    def scheduler_logs() -> str:
        pods = kube.list(k.POD, operator_ns, label_selector=SCHEDULER_POD_LABEL)
        created = (getattr(fxt, "namespace_obj", None) or {}).get("metadata", {}).get("creationTimestamp")
        seconds, since = scheduler_log_window(created, now=datetime.now(tz=UTC))
        chunks = []
        for pod in pods:
            name = pod["metadata"]["name"]
            started = (pod.get("status") or {}).get("startTime")
            start = f"started {started}" if started else "not started"
            text = kube.pod_logs(operator_ns, name, since_seconds=seconds)
            chunks.append(
                f"--- {operator_ns}/{name} ({start}; {since})\n"
                f"{head_and_tail(text, _LOG_HEAD_CHARS, _LOG_TAIL_CHARS)}"
            )
        return "\n".join(chunks)

    sections.append(_safe("secondary scheduler logs", scheduler_logs))
    return FailureDiagnostics(sections, nrts, diff, findings)


def attach_to_allure(
    info: SpecInfo | None,
    sections: Iterable[tuple[str, str]] = (),
    html_pages: Iterable[tuple[str, str]] = (),
) -> None:
    """Labels and attachments (text ``sections``, ``html_pages``) for the running allure test case.

    A no-op without allure.
    """
    try:
        import allure
    except ImportError:  # allure-pytest is a dependency, but keep the suite usable without it
        return
    try:
        if info is not None:
            if info.test_id:
                allure.dynamic.label("test_id", info.test_id)
            for label in info.labels:
                allure.dynamic.tag(label)
            allure.dynamic.description(info.full_text)
        for title, text in sections:
            allure.attach(text, name=title, attachment_type=allure.attachment_type.TEXT)
        for title, page in html_pages:
            allure.attach(page, name=title, attachment_type=allure.attachment_type.HTML)
    except Exception as exc:  # allure outside of a running test case
        log.debug("allure attachment skipped: %s", exc)


# ------------------------------------------------------------------------------ report.html


def _clip(text: str) -> str:
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS] + "…"


def _phase_message(report: pytest.TestReport) -> str:
    """Where and why a phase failed: the crash line of its traceback (all of it when there is none)."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = f"{crash.path}:{crash.lineno}: {crash.message}" if crash is not None else report.longreprtext
    text = _clip(text)
    return text if report.when == "call" else f"[{report.when}] {text}"


def report_entry(nodeid: str, phases: Sequence[pytest.TestReport]) -> ReportEntry:
    """One test of ``report.html`` from its setup/call/teardown reports.

    Outcome as pytest counts it: a failed call is ``failed``, a failed setup or teardown
    (e.g. the cooldown) ``error``; the message is where and why each phase failed (the
    traceback goes along, folded), or the skip reason.
    The NRT diff and the NRTs at the failure come from the first failed phase that carries
    them (:data:`FAILURE_ATTR`, set by the plugin). The lane is the xdist worker that ran it
    (``main`` without xdist), the times those of the first and last phase, of which the setup
    waited :data:`~nrop.suite.plugin.lanes.TARGET_SECONDS` for the target.
    """
    props = dict(phases[0].user_properties) if phases else {}
    failed = [r for r in phases if r.failed]
    if any(r.when == "call" for r in failed):
        outcome = "failed"
    elif failed:
        outcome = "error"
    elif any(r.skipped for r in phases):
        outcome = "skipped"
    else:
        outcome = "passed"
    traceback = "\n\n".join(_clip(r.longreprtext) for r in failed)
    if failed:
        message = "\n\n".join(_phase_message(r) for r in failed)
    elif outcome == "skipped":
        message = next(skip_reason(r) for r in phases if r.skipped)
    else:
        message = ""
    snapshot = next((getattr(r, FAILURE_ATTR) for r in failed if getattr(r, FAILURE_ATTR, None)), {})
    labels = str(props.get("labels") or "")
    return ReportEntry(
        nodeid=nodeid,
        outcome=outcome,
        duration=sum(float(r.duration or 0.0) for r in phases),
        description=str(props.get("spec") or ""),
        test_id=str(props.get("test_id") or "") or None,
        labels=tuple(label for label in labels.split(",") if label),
        message=message,
        traceback=traceback,
        nrt_diff=str(snapshot.get("nrt_diff") or ""),
        nrts=tuple(snapshot.get("nrts") or ()),
        evidence=tuple((str(title), str(text)) for title, text in snapshot.get("evidence") or ()),
        lane=str(next((r.worker_id for r in phases if getattr(r, "worker_id", None)), "main")),
        start=min((float(r.start) for r in phases if getattr(r, "start", None)), default=0.0),
        stop=max((float(r.stop) for r in phases if getattr(r, "stop", None)), default=0.0),
        waited=float(props.get(TARGET_SECONDS) or 0.0),
    )


@dataclass
class HtmlCollector:
    """The phase reports of every spec, in the order they ran (the controller's view under xdist)."""

    phases: dict[str, list[pytest.TestReport]] = field(default_factory=dict)

    def add(self, report: pytest.TestReport) -> None:
        if "spec" in dict(report.user_properties):
            self.phases.setdefault(report.nodeid, []).append(report)

    def entries(self) -> list[ReportEntry]:
        return [report_entry(nodeid, phases) for nodeid, phases in self.phases.items()]


def write_html_report(
    report_dir: Path, entries: Sequence[ReportEntry], wall_seconds: float, spans: Sequence[ClusterSpan] = ()
) -> Path:
    """Write ``report.html`` into ``report_dir``; returns its path."""
    report_dir.mkdir(parents=True, exist_ok=True)
    path = report_dir / HTML_NAME
    path.write_text(htmlreport.render(entries, wall_time=wall_seconds, spans=spans), encoding="utf-8")
    return path
