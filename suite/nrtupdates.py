"""Waiting for the NodeResourceTopology objects to be updated (upstream ``GetUpdated``), and
how often the exporter refreshes them.

:func:`refresh_period_of` and :func:`exporter_refresh_period` read the ``infoRefreshPeriod``
of the NUMAResourcesOperators; :func:`republish_grace` is one refresh period plus a margin.
The two pollers :func:`get_updated` and :func:`get_updated_for_node` are thin loops over
:func:`nrop.suite.waiting.wait_for`: they return once the NRTs changed
(:func:`~nrop.suite.nrtcompare.is_nrt_unchanged` no longer holds) or were re-published
unchanged (after the grace).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nrop.api.durations import parse_duration

from . import kube as k
from .nrt import NRTLike, find, list_nrts, nrt_name
from .nrtcompare import is_nrt_unchanged
from .waiting import wait_for

__all__ = [
    "DEFAULT_REFRESH_PERIOD",
    "REPUBLISH_MARGIN",
    "exporter_refresh_period",
    "get_updated",
    "get_updated_for_node",
    "refresh_period_of",
    "republish_grace",
]

log = logging.getLogger(__name__)

#: The operator's default ``infoRefreshPeriod``, and the margin added to it for a re-publish.
DEFAULT_REFRESH_PERIOD = 10.0
REPUBLISH_MARGIN = 5.0


def refresh_period_of(nrops: Iterable[Mapping[str, Any]]) -> float:
    """The longest ``infoRefreshPeriod`` of the node groups of ``nrops`` (effective config in the
    status, else the spec); 10s (the operator's default) when none sets one."""
    periods = []
    for nrop in nrops:
        status, spec = nrop.get("status") or {}, nrop.get("spec") or {}
        groups = status.get("nodeGroups") or status.get("machineConfigPools") or spec.get("nodeGroups") or ()
        for group in groups:
            raw = (group.get("config") or {}).get("infoRefreshPeriod")
            if raw:
                try:
                    periods.append(parse_duration(str(raw)))
                except ValueError:
                    log.warning("ignoring invalid infoRefreshPeriod %r", raw)
    return max(periods, default=DEFAULT_REFRESH_PERIOD)


def exporter_refresh_period(kube: k.Kube) -> float:
    """:func:`refresh_period_of` the cluster's NUMAResourcesOperators (none: the default)."""
    try:
        return refresh_period_of(kube.list(k.NROP))
    except k.UnknownKindError:
        return DEFAULT_REFRESH_PERIOD


def republish_grace(kube: k.Kube) -> float:
    """After this long an NRT that did not change counts as re-published unchanged.

    Upstream's ``GetUpdated`` waits for different zones or attributes, and its exporter
    emits resources in Go map order, so each periodic refresh looks like a change: the wait
    means "re-published since the reference". An exporter with a stable order changes an
    NRT only when the data change, and the API server keeps the resourceVersion of a no-op
    update: the same meaning is then one refresh period (plus a margin).
    """
    return exporter_refresh_period(kube) + REPUBLISH_MARGIN


@dataclass
class _Updates:
    """NRTs seen by an update wait; ``to_dict`` keeps failure messages short."""

    nrts: list[dict[str, Any]]
    unchanged: list[str]
    missing: list[str]
    elapsed: float

    def to_dict(self) -> str:
        return f"unchanged={self.unchanged} missing={self.missing} after {self.elapsed:.1f}s"


def _changed_or_republished(
    get: Callable[[], list[dict[str, Any]]],
    reference: Sequence[NRTLike],
    timeout: float,
    interval: float,
    grace: float,
    immediate: bool,
) -> list[dict[str, Any]]:
    names = [nrt_name(nrt) for nrt in reference]
    started = time.monotonic()

    def look() -> _Updates:
        current = get()
        missing = [n for n in names if find(current, n) is None]
        unchanged = [
            nrt_name(ref)
            for ref in reference
            if (now := find(current, nrt_name(ref))) is not None and is_nrt_unchanged(ref, now)
        ]
        return _Updates(current, unchanged, missing, time.monotonic() - started)

    seen = wait_for(
        look,
        lambda u: not u.missing and (not u.unchanged or u.elapsed >= grace),
        f"NRTs {names} to be updated",
        timeout,
        interval=interval,
        terminal=lambda u: bool(u.missing),
        immediate=immediate,
    )
    if seen.unchanged:
        log.info("NRTs %s re-published unchanged within %.0fs", seen.unchanged, grace)
    return seen.nrts


def get_updated(
    kube: k.Kube,
    reference: Sequence[NRTLike],
    timeout: float,
    *,
    interval: float = 5.0,
    grace: float | None = None,
) -> list[dict[str, Any]]:
    """The NRT list once every NRT of ``reference`` changed (``GetUpdated``), or was re-published
    unchanged: after ``grace`` (default :func:`republish_grace`; ``math.inf`` = only a change).

    The first look comes after one ``interval``, as upstream; an empty ``reference``
    returns the current list at once. A reference NRT that is gone ends the wait at once;
    ``WaitTimeout`` when the NRTs did not update within ``timeout``.
    """
    if not reference:
        return list_nrts(kube)
    limit = republish_grace(kube) if grace is None else grace
    return _changed_or_republished(lambda: list_nrts(kube), reference, timeout, interval, limit, False)


def get_updated_for_node(
    kube: k.Kube,
    reference: NRTLike,
    timeout: float,
    *,
    interval: float = 5.0,
    grace: float | None = None,
) -> dict[str, Any]:
    """The node's NRT once it differs from ``reference`` (``GetUpdatedForNode``), or was
    re-published unchanged (see :func:`get_updated`)."""
    limit = republish_grace(kube) if grace is None else grace
    name = nrt_name(reference)
    return _changed_or_republished(
        lambda: [nrt] if (nrt := kube.get_or_none(k.NRT, name)) else [],
        [reference],
        timeout,
        interval,
        limit,
        True,
    )[0]
