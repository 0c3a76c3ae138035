"""Leader election on a ``coordination.k8s.io/v1`` Lease, so that one operator replica reconciles.

The identity is the pod name: a container restarted in the same pod (after a crash or a
``kill -9``) takes its Lease back at once instead of waiting for it to expire. The
leader renews every ``retry`` seconds; if it cannot renew within ``renew_deadline`` it
stops the process (the kubelet restarts it and it competes again).

:func:`decide` (may this identity take the Lease now?) is pure; :class:`LeaderElector`
does the reads and writes.
"""

from __future__ import annotations

import datetime
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import urllib3

from nrop.api.metatime import parse_time, rfc3339_micro
from nrop.operator.kubeapi import Api, ApiException

__all__ = ["LeaderElector", "decide"]

log = logging.getLogger(__name__)
#: Failures that end one attempt but not the process: the API server answering an error, or not at all.
_TRANSIENT = (ApiException, urllib3.exceptions.HTTPError, OSError)


def _parse(ts: str | None) -> float:
    if not ts:
        return 0.0
    return parse_time(ts).timestamp()


def _format(now: float) -> str:
    return rfc3339_micro(datetime.datetime.fromtimestamp(now, datetime.UTC))


def decide(lease_spec: Mapping[str, Any], identity: str, now: float) -> bool:
    """True when ``identity`` may hold the Lease: it holds it, nobody does, or it expired."""
    holder = lease_spec.get("holderIdentity") or ""
    if holder in ("", identity):
        return True
    renewed = _parse(lease_spec.get("renewTime") or lease_spec.get("acquireTime"))
    return now > renewed + float(lease_spec.get("leaseDurationSeconds") or 15)


@dataclass
class LeaderElector:
    api: Api
    namespace: str
    name: str
    identity: str
    lease_duration: int = 15
    renew_deadline: float = 10.0
    retry: float = 2.0
    clock: Callable[[], float] = time.time

    def _path(self, with_name: bool = True) -> str:
        base = f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases"
        return f"{base}/{self.name}" if with_name else base

    def try_acquire(self) -> bool:
        now = self.clock()
        try:
            lease = self.api.raw_get(self._path())
        except ApiException as exc:
            if exc.status != 404:
                raise
            lease = None
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.lease_duration,
            "renewTime": _format(now),
        }
        if lease is None:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": self.name},
                    "spec": {**spec, "acquireTime": _format(now), "leaseTransitions": 0}}  # fmt: skip
            try:
                self.api.raw_post(self._path(False), body)
            except ApiException as exc:
                if exc.status == 409:
                    return False
                raise
            return True
        current = lease.get("spec") or {}
        if not decide(current, self.identity, now):
            return False
        if current.get("holderIdentity") != self.identity:
            spec["acquireTime"] = _format(now)
            spec["leaseTransitions"] = int(current.get("leaseTransitions") or 0) + 1
        lease["spec"] = {**current, **spec}
        try:
            self.api.raw_put(self._path(), lease)
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        return True

    def acquire(self, stop: threading.Event) -> bool:
        """Block until this identity leads (True) or ``stop`` is set (False)."""
        while not stop.is_set():
            try:
                if self.try_acquire():
                    log.info("leading as %s (Lease %s/%s)", self.identity, self.namespace, self.name)
                    return True
            except _TRANSIENT as exc:
                log.warning("leader election: %s", getattr(exc, "reason", exc))
            stop.wait(self.retry)
        return False

    def release(self) -> None:
        """Give the Lease up (holder emptied) so that a successor leads at once; errors only logged."""
        try:
            lease = self.api.raw_get(self._path())
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            lease["spec"] = {**spec, "holderIdentity": "", "leaseDurationSeconds": 1}
            self.api.raw_put(self._path(), lease)
            log.info("released the Lease %s/%s", self.namespace, self.name)
        except _TRANSIENT as exc:
            log.warning("releasing the Lease: %s", getattr(exc, "reason", exc))

    def keep(self, stop: threading.Event) -> None:
        """Renew until ``stop``; exit the process when the lease is lost."""
        last = self.clock()
        while not stop.wait(self.retry):
            try:
                if self.try_acquire():
                    last = self.clock()
                    continue
                log.error("lost the Lease %s/%s to another replica: exiting", self.namespace, self.name)
                os._exit(1)
            except _TRANSIENT as exc:
                log.warning("renewing the Lease: %s", getattr(exc, "reason", exc))
            if self.clock() - last > self.renew_deadline:
                log.error(
                    "could not renew the Lease %s/%s in %.0fs: exiting",
                    self.namespace,
                    self.name,
                    self.renew_deadline,
                )
                os._exit(1)
