"""Leader election on a ``coordination.k8s.io/v1`` Lease, so that one operator replica reconciles.

The identity is controller-runtime's, the host name (in a pod, the pod's name) and a UUID of the
process (:func:`nrop.api.leases.candidate_identity`): a new process, even a container restarted in the same pod,
is a new candidate and waits for its predecessor's lease to expire. A leader does not give the
Lease up when it stops: upstream's manager leaves ``LeaderElectionReleaseOnCancel`` false, so
its successor leads ``leaseDurationSeconds`` after it first sees the Lease unchanged. The
leader renews every ``retry`` seconds; if it cannot renew within ``renew_deadline`` it
stops the process (the kubelet restarts it and it competes again).

The rule (may this identity take the Lease now?) is client-go's, as upstream's
controller-runtime manager follows it, in :mod:`nrop.api.leases`: another holder's lease
expires ``leaseDurationSeconds`` after this candidate *observed* its record change, by this
process's monotonic clock, not by the ``renewTime`` written with another host's clock.
:class:`LeaderElector` does the reads and writes.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import urllib3

from nrop.api.leases import Decision, LeaseRecord, Observation, decide, observe, record_for
from nrop.api.metatime import from_unix_nanos, rfc3339_micro
from nrop.operator.kubeapi import Api, ApiException

__all__ = ["LeaderElector"]

log = logging.getLogger(__name__)
#: Failures that end one attempt but not the process: the API server answering an error, or not at all.
_TRANSIENT = (ApiException, urllib3.exceptions.HTTPError, OSError)


@dataclass
class LeaderElector:
    """One candidate for one Lease; ``clock`` is monotonic seconds, ``wall_ns`` the wall time in ns."""

    api: Api
    namespace: str
    name: str
    identity: str
    lease_duration: int = 15
    renew_deadline: float = 10.0
    retry: float = 2.0
    clock: Callable[[], float] = time.monotonic
    wall_ns: Callable[[], int] = time.time_ns
    _observation: Observation | None = field(default=None, init=False, repr=False)
    _leading: bool = field(default=False, init=False, repr=False)

    def _path(self, with_name: bool = True) -> str:
        base = f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases"
        return f"{base}/{self.name}" if with_name else base

    def _stamp(self) -> str:
        return rfc3339_micro(from_unix_nanos(self.wall_ns()))

    def try_acquire(self) -> bool:
        """One round of client-go's tryAcquireOrRenew: True when this identity holds the Lease now."""
        now = self.clock()
        try:
            lease: dict[str, Any] | None = self.api.raw_get(self._path())
        except ApiException as exc:
            if exc.status != 404:
                raise
            lease = None
        if lease is None:
            record = record_for(Decision.CREATE, None, self.identity, self.lease_duration, self._stamp())
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": self.name},
                    "spec": record.spec()}  # fmt: skip
            try:
                self.api.raw_post(self._path(False), body)
            except ApiException as exc:
                if exc.status == 409:
                    return False
                raise
            return self._won(record)
        self._observation = observe(self._observation, LeaseRecord.from_lease(lease), now)
        decision = decide(self._observation, now, self.identity, self._leading)
        if decision in (Decision.WAIT, Decision.LOST):
            self._leading = False
            return False
        record = record_for(
            decision, self._observation.record, self.identity, self.lease_duration, self._stamp()
        )
        lease["spec"] = {**(lease.get("spec") or {}), **record.spec()}
        try:
            self.api.raw_put(self._path(), lease)
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        return self._won(record)

    def _won(self, record: LeaseRecord) -> bool:
        self._observation = Observation(record, self.clock())
        self._leading = True
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
