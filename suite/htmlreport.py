"""The HTML report of a suite run: ``report.html``, one self-contained page (no scripts, no network).

Per test: outcome, duration, spec text, tier and labels, the failure message, the NRT diff
(before/after) and, for each node, a picture of every NUMA zone's occupancy at the failure —
allocatable against used (allocatable minus available) for CPUs, memory, hugepages and devices —
as inline SVG, so a reader sees at a glance which zone was full. Failed tests come first and open.

Pure: :func:`render` turns :class:`ReportEntry` values into a string; the plugin collects the
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

__all__ = ["ReportEntry", "ZoneUsage", "failure_page", "render", "zone_pictures", "zone_usage"]

_OUTCOME_ORDER = {"failed": 0, "error": 1, "passed": 2, "skipped": 3}
_COLOURS = {"failed": "#c62828", "error": "#c62828", "passed": "#2e7d32", "skipped": "#9e9e9e"}
_BAR_WIDTH = 220
_BAR_HEIGHT = 14


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

    @property
    def tier(self) -> str:
        return next((lab for lab in self.labels if lab.startswith("tier")), "untiered")


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
"""


def render(
    records: Sequence[ReportEntry],
    *,
    title: str = "numaresources serial suite",
    wall_time: float | None = None,
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
        f"{''.join(rows)}</table>"
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
