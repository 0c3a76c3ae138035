"""Waiting for the NodeResourceTopology objects to be updated (upstream ``GetUpdated`` and
``GetUpdatedForNode``), how often the exporter refreshes them and how often the scheduler's
cache takes them in.

:func:`refresh_period_of` and :func:`exporter_refresh_period` read the ``infoRefreshPeriod``
of the NUMAResourcesOperators, :func:`scheduler_resync_period` the active ``cacheResyncPeriod``
of the NUMAResourcesSchedulers. The two pollers :func:`get_updated` and
:func:`get_updated_for_node` are thin loops over :func:`nrop.suite.e2e.wait.polling.wait_for` with
upstream's rule (:func:`~nrop.suite.e2e.nrt.compare.is_nrt_unchanged`, ``isEqualNRT``): an NRT
counts as updated only once it was re-published (another ``resourceVersion``) with other
zones or attributes, list order included. An unchanged node passes only because the
exporter, as upstream's, writes each zone's resources in Go map order, which usually
differs from one refresh to the next (see :mod:`nrop.rte.decisions.scan`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nrop.api.durations import parse_duration
from nrop.suite.e2e import kube as k
from nrop.suite.e2e.nrt.compare import is_nrt_unchanged, to_string_nrt
from nrop.suite.e2e.nrt.topologies import NRTLike, find, list_nrts, nrt_name
from nrop.suite.e2e.wait.polling import wait_for

__all__ = [
    "DEFAULT_REFRESH_PERIOD",
    "UPDATE_INTERVAL",
    "exporter_refresh_period",
    "get_updated",
    "get_updated_for_node",
    "refresh_period_of",
    "scheduler_resync_period",
]

log = logging.getLogger(__name__)

#: The operator's default ``infoRefreshPeriod``.
DEFAULT_REFRESH_PERIOD = 10.0
#: Upstream's poll interval of ``GetUpdated`` and ``GetUpdatedForNode``.
UPDATE_INTERVAL = 5.0


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


def scheduler_resync_period(kube: k.Kube) -> float:
    """The longest active ``cacheResyncPeriod`` (the NRS status) of the cluster's
    NUMAResourcesSchedulers; 0 when none runs the over-reserve cache."""
    try:
        scheds = kube.list(k.NROSCHED)
    except k.UnknownKindError:
        return 0.0
    periods = []
    for nrs in scheds:
        raw = (nrs.get("status") or {}).get("cacheResyncPeriod")
        if raw:
            try:
                periods.append(parse_duration(str(raw)))
            except ValueError:
                log.warning("ignoring invalid cacheResyncPeriod %r", raw)
    return max(periods, default=0.0)


@dataclass
class _Updates:
    """NRTs seen by an update wait; ``to_dict`` keeps failure messages short."""

    nrts: list[dict[str, Any]]
    unchanged: list[str]
    missing: list[str]

    def to_dict(self) -> str:
        return f"not updated={self.unchanged} missing={self.missing}"


def _updated(
    get: Callable[[], list[dict[str, Any]]],
    reference: Sequence[NRTLike],
    timeout: float,
    interval: float,
    immediate: bool,
    description: str,
    not_updated: str,
) -> _Updates:
    names = [nrt_name(nrt) for nrt in reference]

    def look() -> _Updates:
        current = get()
        missing = [n for n in names if find(current, n) is None]
        unchanged = [
            nrt_name(ref)
            for ref in reference
            if (now := find(current, nrt_name(ref))) is not None and is_nrt_unchanged(ref, now)
        ]
        for name in missing:
            log.error("missing NRT for %s", name)
        for name in unchanged:
            log.warning(not_updated, name)
        return _Updates(current, unchanged, missing)

    return wait_for(
        look,
        lambda u: not u.missing and not u.unchanged,
        description,
        timeout,
        interval=interval,
        fixed_rate=True,
        terminal=lambda u: bool(u.missing),
        immediate=immediate,
    )


def get_updated(
    kube: k.Kube, reference: Sequence[NRTLike], timeout: float, *, interval: float = UPDATE_INTERVAL
) -> list[dict[str, Any]]:
    """The NRT list once every NRT of ``reference`` was updated (``GetUpdated``).

    The first look comes after one ``interval`` (5s, as upstream), also for an empty
    ``reference``, which then returns that list. A reference NRT that is gone ends the wait
    at once; ``WaitTimeout`` when the NRTs did not update within ``timeout``.
    """
    log.info("Waiting up to %gs to get %d NRT objects updated", timeout, len(reference))
    seen = _updated(
        lambda: list_nrts(kube),
        reference,
        timeout,
        interval,
        False,
        f"NRTs {[nrt_name(nrt) for nrt in reference]} to be updated",
        "NRT for %s not yet updated",
    )
    log.info("Detected changes on all %d NRT objects", len(reference))
    return seen.nrts


def get_updated_for_node(
    kube: k.Kube, reference: NRTLike, timeout: float, *, interval: float = UPDATE_INTERVAL
) -> dict[str, Any]:
    """The node's NRT once it was updated since ``reference`` (``GetUpdatedForNode``).

    The first look is immediate, then every ``interval`` (5s); a gone NRT ends the wait at once.
    """
    name = nrt_name(reference)
    log.info("NRT change: reference is %s", to_string_nrt(reference))
    try:
        seen = _updated(
            lambda: [nrt] if (nrt := kube.get_or_none(k.NRT, name)) else [],
            [reference],
            timeout,
            interval,
            True,
            f"NRT {name} to be updated",
            "NRT %s not updated yet",
        )
    except AssertionError:
        log.info("NRT change: finished, equalZones=true")
        raise
    log.info("NRT change: finished, equalZones=false")
    return seen.nrts[0]
