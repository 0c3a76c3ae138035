"""What both controllers share: the context of a run, one lock per object, the reconciliation of a
CR (:func:`reconcile_cr`), status writes, how a CR controller hooks into kopf
(:func:`register_cr_controller`), and the periodic resync of every CR (:func:`resync_forever`).

A reconciliation reads its CR afresh, decides, applies and writes the status only when it
changed (conditions compared without ``lastTransitionTime``), so the watch event its
own status write causes ends in a no-op. Reconciliations of one object never overlap.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import kopf

from nrop.api.backoff import Backoff
from nrop.api.metatime import rfc3339
from nrop.api.platform import Platform
from nrop.api.tlsprofiles import Settings
from nrop.operator import metrics
from nrop.operator.decisions import conditions, naming
from nrop.operator.decisions.conditions import Reason, Step, Type
from nrop.operator.kubeapi import Api, ApiException, Kind, error_message
from nrop.operator.requeueing import Requeue

__all__ = [
    "TRANSIENT",
    "Context",
    "CustomResource",
    "now",
    "reconcile_cr",
    "register_cr_controller",
    "resync_forever",
    "retrying",
    "write_status",
]

T = TypeVar("T")
#: API answers worth another attempt at once: conflicts, throttling, server trouble.
TRANSIENT: Final = frozenset({409, 429, 500, 502, 503, 504})
ATTEMPTS: Final = 4

log = logging.getLogger(__name__)


def now() -> str:
    return rfc3339(datetime.datetime.now(datetime.UTC))


@dataclass
class Context:
    """One operator process: its client, namespace, image and environment, the exporters'
    metrics TLS settings from the cluster's TLS profile (None: the cluster has no profile), and
    the platform."""

    api: Api
    namespace: str
    image: str
    environ: Mapping[str, str]
    metrics_tls: Settings | None = None
    #: The cluster's platform, detected at start (upstream's operator does the same).
    platform: Platform = Platform.KUBERNETES
    #: Reconciliations again without an event (``None``: only events and the resync; tests).
    requeue: Requeue | None = None
    _locks: dict[tuple[str, str], threading.Lock] = field(default_factory=lambda: defaultdict(threading.Lock))
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def lock(self, kind: str, name: str) -> threading.Lock:
        with self._guard:
            return self._locks[(kind, name)]


def retrying(action: Callable[[], T], sleep: Callable[[float], None] = time.sleep) -> T:
    """Run ``action``, again with back-off after a transient API error (at most ``ATTEMPTS`` times)."""
    backoff = Backoff(initial=0.2, maximum=2.0)
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return action()
        except ApiException as exc:
            if exc.status not in TRANSIENT or attempt == ATTEMPTS:
                raise
            delay = backoff.next_delay()
            log.info("transient API error %s %s: retrying in %.1fs", exc.status, exc.reason, delay)
            sleep(delay)
    raise AssertionError("unreachable")


def _comparable(status: Mapping[str, Any]) -> dict[str, Any]:
    result = dict(status)
    result["conditions"] = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status.get("conditions") or []
    ]
    return result


def write_status(api: Api, kind: Kind, obj: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """Patch the status when it differs from the object's; True when it was written."""
    old = obj.get("status") or {}
    if _comparable(old) == _comparable(status) and conditions.conditions_equal(
        old.get("conditions") or [], status.get("conditions") or []
    ):
        return False
    # Merge patch: keys that disappeared are nulled.
    patch = {**{k: None for k in old if k not in status}, **status}
    api.patch_status(kind, obj["metadata"]["name"], patch)
    return True


@dataclass(frozen=True)
class CustomResource:
    """What a controller reconciles: its kind, the metrics label of its controller and the
    conditions it reports besides the standard ones."""

    kind: Kind
    controller: str
    extra_conditions: tuple[Type, ...] = ()


def reconcile_cr(
    ctx: Context,
    cr: CustomResource,
    name: str,
    sync: Callable[[Mapping[str, Any], dict[str, Any]], Step],
    finish: Callable[[dict[str, Any], int], None] | None = None,
) -> Step | None:
    """One reconciliation of the CR ``name``; its resulting step (None: skipped).

    Skips a CR that is gone, being deleted or paused by annotation. ``sync`` applies the desired
    objects, fills ``status`` and returns the step (retried on transient API errors; an API error
    that stays is ``Degraded``/``InternalError``). The conditions follow the step, ``finish``
    completes the status (with the CR's generation), which is written only when it changed.
    A step still in progress or failed is reconciled again later (:mod:`.requeueing`).
    """
    step = _reconcile_cr(ctx, cr, name, sync, finish)
    if ctx.requeue is not None:
        ctx.requeue.after_step((cr.kind.kind, name), step, lambda: reconcile_cr(ctx, cr, name, sync, finish))
    return step


def _reconcile_cr(
    ctx: Context,
    cr: CustomResource,
    name: str,
    sync: Callable[[Mapping[str, Any], dict[str, Any]], Step],
    finish: Callable[[dict[str, Any], int], None] | None,
) -> Step | None:
    kind_name = cr.kind.kind
    metrics.WORKQUEUE_ADDS.labels(cr.controller, cr.controller).inc()
    with ctx.lock(kind_name, name), metrics.measure(cr.controller):
        obj = ctx.api.get(cr.kind, name)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return None
        if (obj["metadata"].get("annotations") or {}).get(
            naming.PAUSE_RECONCILIATION_ANNOTATION
        ) == "enabled":
            log.info("reconciliation of %s paused by annotation", name)
            return None
        status = dict(obj.get("status") or {})
        try:
            step = retrying(lambda: sync(obj, status))
        except ApiException as exc:
            metrics.ERRORS.labels(cr.controller).inc()
            log.warning("reconciling %s %s: %s", kind_name, name, exc)
            step = Step.degraded(Reason.INTERNAL_ERROR, error_message(exc))
        generation = obj["metadata"].get("generation", 0)
        status["conditions"] = conditions.compute(
            status.get("conditions") or [], step, generation, now(), cr.extra_conditions
        )
        if finish is not None:
            finish(status, generation)
        metrics.RECONCILIATIONS.labels(cr.controller, step.type).inc()
        try:
            write_status(ctx.api, cr.kind, obj, status)
        except ApiException as exc:
            metrics.ERRORS.labels(cr.controller).inc()
            log.warning("writing the status of %s %s: %s", kind_name, name, exc.reason)
        return step


def delete_owned(ctx: Context, owned: tuple[Kind, ...], owner_labels: Mapping[str, str]) -> None:
    """Delete every object of the ``owned`` kinds that carries ``owner_labels`` (a CR's cleanup)."""
    for kind in owned:
        for live in ctx.api.list(kind, ctx.namespace if kind.namespaced else None, owner_labels):
            ctx.api.delete(kind, live["metadata"]["name"], live["metadata"].get("namespace"))


def register_cr_controller(
    registry: kopf.OperatorRegistry,
    *,
    prefix: str,
    plural: str,
    kind_name: str,
    reconcile: Callable[[str], Any],
    cleanup: Callable[[str], Any],
    owned: tuple[Kind, ...],
) -> None:
    """The kopf handlers of one CR controller (handler ids ``<prefix>_event`` etc., as before).

    Every event of a live CR reconciles it (the periodic resync is the process's, see
    :func:`resync_forever`); its deletion runs ``cleanup``; an event on an object of an ``owned``
    kind labelled as owned by a ``kind_name`` reconciles the owner the label names (upstream's
    ``Owns``: a deleted or edited operand is put back at once).
    """

    def on_event(name: str, type: str | None, **_: Any) -> None:
        if type != "DELETED":
            reconcile(name)

    def on_delete(name: str, **_: Any) -> None:
        cleanup(name)

    def on_owned(labels: Mapping[str, str], **_: Any) -> None:
        reconcile(labels[naming.OWNER_NAME_LABEL])

    group, version = naming.GROUP, naming.VERSION
    kopf.on.event(group, version, plural, id=f"{prefix}_event", registry=registry)(on_event)
    kopf.on.delete(group, version, plural, id=f"{prefix}_deleted", registry=registry)(on_delete)
    for kind in owned:
        owned_group, _, owned_version = kind.api_version.rpartition("/")
        kopf.on.event(
            owned_group, owned_version, kind.plural, id=f"{prefix}-owned-{kind.plural}",
            labels={naming.OWNER_KIND_LABEL: kind_name}, registry=registry,
        )(on_owned)  # fmt: skip


def resync_forever(
    ctx: Context,
    controllers: Sequence[tuple[Kind, Callable[[str], Any]]],
    interval: float,
    stop: threading.Event,
) -> None:
    """Reconcile every CR of each controller every ``interval`` seconds until ``stop`` is set:
    controller-runtime's periodic resync (``SyncPeriod``), which catches what no event covers
    (node changes, drifted objects). One loop for the process, not a timer per object: kopf's
    per-object timers could outlive the operator's stop by seconds."""
    while not stop.wait(interval):
        for kind, reconcile in controllers:
            try:
                names = [obj["metadata"]["name"] for obj in ctx.api.list(kind)]
            except ApiException as exc:
                log.warning("periodic resync: listing %s: %s", kind.plural, exc.reason)
                continue
            for name in names:
                if stop.is_set():
                    return
                try:
                    reconcile(name)
                except Exception:
                    log.exception("periodic resync of %s %s failed", kind.kind, name)
