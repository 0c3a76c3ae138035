"""The HTML report of a suite run: ``report.html``, one self-contained page (no scripts, no network).

At the top, the timeline of the run (:func:`timeline`): one lane per worker (``main`` for a
serial run), each spec a bar from its setup to its teardown coloured by outcome and labelled
with its test_id (paler while its setup waited for its cluster), and above the specs each
embedded cluster while it was being prepared (cluster, stack, BeforeSuite) in a colour of its
own, on one time axis, so a reader sees which lane ended the run and what it waited for.

Per test: outcome, duration, spec text, tier and labels, the failure message, the NRT diff
(before/after) and, for each node, a picture of every NUMA zone's occupancy at the failure —
allocatable against used (allocatable minus available) for CPUs, memory, hugepages and devices —
as inline SVG, so a reader sees at a glance which zone was full. Failed tests come first and open.

Pure: :func:`render` turns :class:`ReportEntry` and :class:`ClusterSpan` values into a string; the plugin collects the
records and writes the file. :func:`failure_page` is the same diff and pictures as a page of
their own (the allure attachment of a failed test). :func:`zone_usage` is the arithmetic the
pictures draw.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from nrop.api.quantity import QuantityError, coerce

__all__ = [
    "ClusterSpan",
    "ReportEntry",
    "ZoneUsage",
    "failure_page",
    "render",
    "timeline",
    "zone_pictures",
    "zone_usage",
]

_OUTCOME_ORDER = {"failed": 0, "error": 1, "passed": 2, "skipped": 3}
_COLOURS = {"failed": "#c62828", "error": "#c62828", "passed": "#2e7d32", "skipped": "#9e9e9e"}
_CLUSTER_COLOUR = "#5e35b1"
_BAR_WIDTH = 220
_BAR_HEIGHT = 14
#: the timeline: pixels of the time axis, of the lane names, of a lane's cluster row and spec row
_AXIS_WIDTH = 1000
_LANE_LABEL = 56
_CLUSTER_ROW = 12
_SPEC_ROW = 18
_LANE_GAP = 6
_CHAR_WIDTH = 6.2
#: the steps the time axis may tick at, in seconds (the first that gives at most 12 ticks)
_TICK_STEPS = (5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)


@dataclass(frozen=True)
class ReportEntry:
    """What the report shows of one test."""

    nodeid: str
    outcome: str  # passed | failed | error | skipped
    duration: float
    description: str = ""
    test_id: str | None = None
    labels: tuple[str, ...] = ()
    message: str = ""
    #: the full failure text (traceback), shown folded below the pictures
    traceback: str = ""
    nrt_diff: str = ""
    #: the NRT objects at the end of the test (failures only), as the API returns them
    nrts: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    #: what else was collected at the failure, titled: the namespace's events, the scheduler's log
    evidence: Sequence[tuple[str, str]] = field(default_factory=tuple)
    #: where and when it ran: the worker (``main`` in a serial run), epoch seconds of its
    #: setup's start and its teardown's end (0: not known)
    lane: str = "main"
    start: float = 0.0
    stop: float = 0.0
    #: seconds of its setup spent waiting for its target (a cluster starting)
    waited: float = 0.0

    @property
    def tier(self) -> str:
        return next((lab for lab in self.labels if lab.startswith("tier")), "untiered")


@dataclass(frozen=True)
class ClusterSpan:
    """An embedded cluster (or a kubeconfig target) being prepared: from its start to the end of BeforeSuite."""

    lane: str
    profile: str
    start: float
    stop: float


@dataclass(frozen=True)
class ZoneUsage:
    """One resource of one zone: allocatable and used, as fractions of the same unit."""

    resource: str
    allocatable: Fraction
    used: Fraction

    @property
    def ratio(self) -> float:
        return float(self.used / self.allocatable) if self.allocatable else 0.0


def _amount(value: Any) -> Fraction | None:
    try:
        return coerce(value).fraction
    except (QuantityError, TypeError, ValueError):
        return None


def zone_usage(zone: Mapping[str, Any]) -> list[ZoneUsage]:
    """Allocatable and used (allocatable - available) per resource of an NRT zone, in name order."""
    usage: list[ZoneUsage] = []
    for res in sorted(zone.get("resources") or (), key=lambda r: str(r.get("name", ""))):
        allocatable = _amount(res.get("allocatable", 0))
        available = _amount(res.get("available", 0))
        if allocatable is None or available is None or allocatable <= 0:
            continue
        usage.append(ZoneUsage(str(res.get("name")), allocatable, max(allocatable - available, Fraction(0))))
    return usage


def _format(resource: str, value: Fraction) -> str:
    if resource == "cpu":
        return f"{float(value):g}"
    if resource == "memory" or resource.startswith("hugepages-"):
        return f"{float(value) / 2**30:.2f}Gi"
    return f"{float(value):g}"


def _bar(usage: ZoneUsage) -> str:
    used_w = round(_BAR_WIDTH * min(usage.ratio, 1.0))
    colour = "#c62828" if usage.ratio >= 0.999 else ("#f9a825" if usage.ratio >= 0.75 else "#43a047")
    label = f"{_format(usage.resource, usage.used)} / {_format(usage.resource, usage.allocatable)}"
    return (
        f'<tr><td class="res">{html.escape(usage.resource)}</td><td>'
        f'<svg class="bar" width="{_BAR_WIDTH}" height="{_BAR_HEIGHT}" role="img" '
        f'aria-label="{html.escape(usage.resource)} used {html.escape(label)}">'
        f'<rect width="{_BAR_WIDTH}" height="{_BAR_HEIGHT}" fill="#e0e0e0"/>'
        f'<rect class="used" width="{used_w}" height="{_BAR_HEIGHT}" fill="{colour}"/></svg></td>'
        f"<td>{html.escape(label)}</td></tr>"
    )


def zone_pictures(nrts: Iterable[Mapping[str, Any]]) -> str:
    """Per node, per zone: a table of occupancy bars."""
    parts: list[str] = []
    for nrt in sorted(nrts, key=lambda n: str((n.get("metadata") or {}).get("name", ""))):
        node = str((nrt.get("metadata") or {}).get("name", "?"))
        zones = [z for z in nrt.get("zones") or () if z.get("type", "Node") == "Node"]
        parts.append(f'<div class="node" data-node="{html.escape(node)}"><h4>node {html.escape(node)}</h4>')
        for zone in sorted(zones, key=lambda z: str(z.get("name", ""))):
            name = str(zone.get("name", "?"))
            rows = "".join(_bar(u) for u in zone_usage(zone))
            parts.append(
                f'<figure class="zone" data-zone="{html.escape(name)}"><figcaption>{html.escape(name)}</figcaption>'
                f"<table>{rows}</table></figure>"
            )
        parts.append("</div>")
    return "".join(parts)


def _test_section(record: ReportEntry) -> str:
    failed = record.outcome in ("failed", "error")
    colour = _COLOURS.get(record.outcome, "#616161")
    title = record.description or record.nodeid
    labels = " ".join(f'<span class="label">{html.escape(lab)}</span>' for lab in record.labels)
    body = [
        f'<p class="nodeid">{html.escape(record.nodeid)}</p>',
        f'<p class="labels">{labels}</p>' if labels else "",
    ]
    if record.message:
        body.append(f'<pre class="message">{html.escape(record.message)}</pre>')
    if record.nrt_diff:
        body.append(
            f'<h4>NRT diff (initial → at failure)</h4><pre class="nrt-diff">{html.escape(record.nrt_diff)}</pre>'
        )
    if record.nrts:
        body.append(f'<h4>NUMA zones at failure</h4><div class="zones">{zone_pictures(record.nrts)}</div>')
    for title, text in record.evidence:
        body.append(
            f'<details class="evidence"><summary>{html.escape(title)}</summary><pre>{html.escape(text)}</pre>'
            "</details>"
        )
    if record.traceback:
        body.append(
            f'<details class="traceback"><summary>traceback</summary><pre>{html.escape(record.traceback)}</pre>'
            "</details>"
        )
    test_id = (
        f" [test_id:{html.escape(record.test_id)}]" if record.test_id and record.test_id not in title else ""
    )
    return (
        f'<details class="test {html.escape(record.outcome)}"{" open" if failed else ""}>'
        f'<summary><span class="outcome" style="background:{colour}">{html.escape(record.outcome)}</span> '
        f'<span class="tier">{html.escape(record.tier)}</span> {html.escape(title)}{test_id} '
        f'<span class="duration">{record.duration:.1f} s</span></summary>{"".join(body)}</details>'
    )


def _lane_order(lane: str) -> tuple[int, int, str]:
    digits = "".join(ch for ch in lane if ch.isdigit())
    return (0 if lane == "main" else 1, int(digits) if digits else -1, lane)


def _ticks(seconds: float) -> tuple[int, ...]:
    step = next((s for s in _TICK_STEPS if seconds / s <= 12), _TICK_STEPS[-1])
    return tuple(range(0, int(seconds) + 1, step))


def _clock(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


def _timeline_bar(
    kind: str,
    x: float,
    y: float,
    width: float,
    height: float,
    colour: str,
    label: str,
    title: str,
    pale: float = 0.0,
) -> str:
    """One bar of the timeline; its first ``pale`` pixels paler (a spec waiting for its cluster)."""
    pale = min(pale, width)
    text = ""
    if label and width - pale >= len(label) * _CHAR_WIDTH + 4:
        text = f'<text x="{x + pale + 2:.1f}" y="{y + height - 4:.1f}" class="bar-label">{html.escape(label)}</text>'
    waiting = (
        f'<rect class="waiting" x="{x:.1f}" y="{y:.1f}" width="{pale:.1f}" height="{height}" fill="#fff" '
        f'fill-opacity="0.6"><title>{html.escape(title)}</title></rect>'
        if pale >= 1
        else ""
    )
    return (
        f'<g class="{kind}"><rect x="{x:.1f}" y="{y:.1f}" width="{max(width, 1.0):.1f}" height="{height}" '
        f'fill="{colour}" stroke="#fff" stroke-width="0.5"><title>{html.escape(title)}</title></rect>'
        f"{waiting}{text}</g>"
    )


def timeline(records: Sequence[ReportEntry], spans: Sequence[ClusterSpan] = ()) -> str:
    """The run as an SVG: a lane per worker, its clusters being prepared above its specs ("" if no times)."""
    timed = [r for r in records if r.start and r.stop]
    if not timed and not spans:
        return ""
    began = min([r.start for r in timed] + [s.start for s in spans])
    ended = max([r.stop for r in timed] + [s.stop for s in spans])
    total = max(ended - began, 1.0)
    scale = _AXIS_WIDTH / total
    lanes = sorted({r.lane for r in timed} | {s.lane for s in spans}, key=_lane_order)
    lane_height = _CLUSTER_ROW + _SPEC_ROW + _LANE_GAP
    top = 18
    height = top + lane_height * len(lanes) + 4
    width = _LANE_LABEL + _AXIS_WIDTH + 8
    parts = [
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="timeline of the run: {len(lanes)} lanes, {_clock(total)}">'
    ]
    for tick in _ticks(total):
        x = _LANE_LABEL + tick * scale
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{height - 4}" stroke="#e0e0e0"/>'
            f'<text x="{x + 2:.1f}" y="{top - 6}" class="tick">{_clock(tick)}</text>'
        )
    last_lane = max(lanes, key=lambda lane: max([r.stop for r in timed if r.lane == lane] + [0.0]))
    for index, lane in enumerate(lanes):
        y = top + index * lane_height
        weight = ' font-weight="bold"' if lane == last_lane else ""
        parts.append(
            f'<g class="lane" data-lane="{html.escape(lane)}"><text x="2" y="{y + _CLUSTER_ROW + _SPEC_ROW - 5}" '
            f'class="lane-name"{weight}>{html.escape(lane)}</text>'
        )
        for span in (s for s in spans if s.lane == lane):
            parts.append(
                _timeline_bar(
                    "cluster", _LANE_LABEL + (span.start - began) * scale, y, (span.stop - span.start) * scale,
                    _CLUSTER_ROW, _CLUSTER_COLOUR, span.profile,
                    f"{span.profile} cluster: started at {_clock(span.start - began)}, "
                    f"ready for specs after {span.stop - span.start:.1f} s",
                )
            )  # fmt: skip
        for record in (r for r in timed if r.lane == lane):
            label = record.test_id or record.nodeid.rsplit("::", 1)[-1]
            parts.append(
                _timeline_bar(
                    f"spec {record.outcome}", _LANE_LABEL + (record.start - began) * scale, y + _CLUSTER_ROW,
                    (record.stop - record.start) * scale, _SPEC_ROW, _COLOURS.get(record.outcome, "#616161"), label,
                    f"{record.nodeid}: {record.outcome}, {record.stop - record.start:.1f} s "
                    f"from {_clock(record.start - began)}"
                    + (f", of which {record.waited:.1f} s waiting for its cluster" if record.waited else ""),
                    record.waited * scale,
                )
            )  # fmt: skip
        parts.append("</g>")
    parts.append("</svg>")
    legend = "".join(
        f'<span class="key"><span class="swatch" style="background:{colour}"></span>{name}</span>'
        for name, colour in (
            ("passed", _COLOURS["passed"]),
            ("failed / error", _COLOURS["failed"]),
            ("skipped", _COLOURS["skipped"]),
            ("cluster being prepared (a spec waiting for it: paler)", _CLUSTER_COLOUR),
        )
    )
    return (
        f'<section class="timeline"><h2>Timeline</h2><p class="legend">{legend} — the run ends with lane '
        f"<b>{html.escape(last_lane)}</b> at {_clock(total)}</p>{''.join(parts)}</section>"
    )


_STYLE = """
body{font-family:sans-serif;margin:1.5em;color:#212121}
summary{cursor:pointer;padding:.3em 0}
.outcome{color:#fff;border-radius:3px;padding:0 .4em;font-size:.85em}
.tier,.duration{color:#616161;font-size:.85em}
.label{background:#eceff1;border-radius:3px;padding:0 .3em;margin-right:.2em;font-size:.8em}
pre{background:#fafafa;border:1px solid #e0e0e0;padding:.5em;overflow:auto}
.node{display:inline-block;vertical-align:top;margin:0 1em 1em 0}
.zone{display:inline-block;vertical-align:top;margin:0 .8em 0 0;border:1px solid #e0e0e0;padding:.3em}
.zone td{font-size:.8em;padding:0 .3em}
table.summary td,table.summary th{padding:.2em .8em;text-align:right}
section.timeline{overflow-x:auto}
svg.timeline text{font-family:sans-serif}
svg.timeline .tick{font-size:10px;fill:#757575}
svg.timeline .lane-name{font-size:11px;fill:#424242}
svg.timeline .bar-label{font-size:10px;fill:#fff;pointer-events:none}
.legend .key{margin-right:1em;font-size:.85em}
.swatch{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:middle;border-radius:2px}
"""


def render(
    records: Sequence[ReportEntry],
    *,
    title: str = "numaresources serial suite",
    wall_time: float | None = None,
    spans: Sequence[ClusterSpan] = (),
) -> str:
    """The whole page."""
    outcomes = Counter(r.outcome for r in records)
    tiers = sorted({r.tier for r in records})
    rows = []
    for tier in tiers:
        counts = Counter(r.outcome for r in records if r.tier == tier)
        cells = "".join(f"<td>{counts.get(o, 0)}</td>" for o in ("passed", "failed", "error", "skipped"))
        rows.append(f"<tr><th>{html.escape(tier)}</th>{cells}</tr>")
    ordered = sorted(records, key=lambda r: (_OUTCOME_ORDER.get(r.outcome, 9), r.nodeid))
    wall = f" in {wall_time:.1f} s" if wall_time is not None else ""
    totals = ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items())) or "no tests"
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p class='totals'>{html.escape(totals)}{wall}</p>"
        "<table class='summary'><tr><th></th><th>passed</th><th>failed</th><th>error</th><th>skipped</th></tr>"
        f"{''.join(rows)}</table>{timeline(records, spans)}"
        f"{''.join(_test_section(r) for r in ordered)}</body></html>"
    )


def failure_page(title: str, nrt_diff: str, nrts: Sequence[Mapping[str, Any]]) -> str:
    """One failed test's NRT diff and zone pictures as a self-contained page."""
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h3>{html.escape(title)}</h3>"
        f'<h4>NRT diff (initial → at failure)</h4><pre class="nrt-diff">{html.escape(nrt_diff)}</pre>'
        f'<h4>NUMA zones at failure</h4><div class="zones">{zone_pictures(nrts)}</div></body></html>'
    )
