"""Lease-based leader election with client-go's semantics (the I/O loop around :mod:`nrop.api.leases`).

:class:`LeaderElector` tries to acquire the Lease every ``retryPeriod`` (jittered by
1.2, as client-go), calls ``on_started`` once it leads, renews every ``retryPeriod``,
and stops leading when a renewal has not succeeded for ``renewDeadline`` or when the
lease shows another holder — whichever comes first (client-go would keep retrying
until the deadline, which cannot succeed while another holder's lease is valid).
Writes are optimistic: a PUT carries the resourceVersion that was read, and a 409
simply means another candidate won this round.  While leading, a renewal first
writes over the lease it last wrote without reading it (client-go's fast path).

``run()`` returns when leadership is lost; ``on_stopped`` is called whenever ``run``
ends (as client-go's ``OnStoppedLeading``), and the ``on_started`` task is cancelled.
Cancelling ``run()`` is the graceful stop: with ``release_on_cancel`` a leader then
empties the lease so another candidate takes over at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from nrop.api.leases import (
    Decision,
    LeaseRecord,
    Observation,
    candidate_identity,
    decide,
    lease_valid,
    observe,
    record_for,
    released,
)
from nrop.api.metatime import from_unix_nanos, rfc3339_micro
from nrop.api.restapi import LEASES, ApiError, NotFoundError
from nrop.sched.config.election import JITTER_FACTOR, ElectionTiming
from nrop.sched.kubeclient import KubeClient

__all__ = ["LeaderElectionConfig", "LeaderElector", "default_identity"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]


def default_identity() -> str:
    """kube-scheduler's candidate identity: this host's name and a UUID (:func:`candidate_identity`)."""
    return candidate_identity(socket.gethostname())


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Which Lease to contend for and how (KubeSchedulerConfiguration ``leaderElection``)."""

    namespace: str = "kube-system"
    name: str = "kube-scheduler"
    timing: ElectionTiming = field(default_factory=ElectionTiming)
    release_on_cancel: bool = False


class LeaderElector:
    """One candidate for one Lease; ``clock`` is monotonic seconds, ``wall_ns`` the wall time in ns."""

    def __init__(
        self,
        client: KubeClient,
        config: LeaderElectionConfig,
        *,
        identity: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_ns: Callable[[], int] = time.time_ns,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.client = client
        self.config = config
        self.identity = identity or default_identity()
        self._clock = clock
        self._wall_ns = wall_ns
        self._rand = rand
        self._observation: Observation | None = None
        self._lease: Obj | None = None
        self._leading = False
        self._lost = False

    @property
    def is_leader(self) -> bool:
        return self._leading

    @property
    def observed_holder(self) -> str:
        """The holder of the lease as last read or written ("" if none or not read yet)."""
        return self._observation.record.holder if self._observation else ""

    @property
    def _where(self) -> str:
        return f"{self.config.namespace}/{self.config.name}"

    async def run(self, on_started: Callable[[], Awaitable[None]], on_stopped: Callable[[], None]) -> None:
        started: asyncio.Task[None] | None = None
        try:
            await self._acquire()
            self._leading = True
            log.info("%s: %s became the leader", self._where, self.identity)
            started = asyncio.get_running_loop().create_task(_call(on_started), name="leading")
            await self._renew()
        finally:
            was_leading, self._leading = self._leading, False
            if started is not None:
                started.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await started
            if was_leading and self.config.release_on_cancel:
                await self._release()
            on_stopped()

    # -- the loops

    async def _acquire(self) -> None:
        timing = self.config.timing
        log.info("%s: %s is attempting to acquire the lease", self._where, self.identity)
        while not await self._try_acquire_or_renew():
            await asyncio.sleep(timing.retry_period * (1 + JITTER_FACTOR * self._rand()))

    async def _renew(self) -> None:
        timing = self.config.timing
        while True:
            deadline = self._clock() + timing.renew_deadline
            while not await self._try_acquire_or_renew():
                if self._lost:
                    log.info("%s: lease taken over by %s; stopped leading", self._where, self.observed_holder)
                    return
                if self._clock() + timing.retry_period >= deadline:
                    log.info(
                        "%s: failed to renew the lease within %.1fs; stopped leading",
                        self._where,
                        timing.renew_deadline,
                    )
                    return
                await asyncio.sleep(timing.retry_period)
            await asyncio.sleep(timing.retry_period)

    # -- one round

    def _stamp(self) -> str:
        return rfc3339_micro(from_unix_nanos(self._wall_ns()))

    async def _write(self, lease: Obj, record: LeaseRecord) -> bool:
        body = {**lease, "spec": {**(lease.get("spec") or {}), **record.spec()}}
        try:
            self._lease = await self.client.update(LEASES, body, self.config.namespace)
        except ApiError as exc:
            log.debug("%s: writing the lease failed: %s", self._where, exc)
            return False
        self._observation = Observation(record, self._clock())
        return True

    async def _try_acquire_or_renew(self) -> bool:
        self._lost = False
        timing = self.config.timing
        now = self._clock()
        # Fast path: a leader with a valid lease writes over what it wrote last, without reading.
        if (
            self._leading
            and self._lease is not None
            and self._observation is not None
            and self._observation.record.holder == self.identity
            and lease_valid(self._observation, now)
        ):
            record = record_for(
                Decision.RENEW,
                self._observation.record,
                self.identity,
                timing.lease_duration_seconds,
                self._stamp(),
            )
            if await self._write(self._lease, record):
                return True
        try:
            lease = await self.client.get(LEASES, self.config.name, self.config.namespace)
        except NotFoundError:
            return await self._create()
        except ApiError as exc:
            log.warning("%s: reading the lease failed: %s", self._where, exc)
            return False
        self._lease = lease
        self._observation = observe(self._observation, LeaseRecord.from_lease(lease), now)
        decision = decide(self._observation, now, self.identity, self._leading)
        if decision is Decision.LOST:
            self._lost = True
            return False
        if decision is Decision.WAIT:
            log.debug("%s: held by %s, not expired yet", self._where, self._observation.record.holder)
            return False
        record = record_for(
            decision, self._observation.record, self.identity, timing.lease_duration_seconds, self._stamp()
        )
        return await self._write(lease, record)

    async def _create(self) -> bool:
        record = record_for(
            Decision.CREATE, None, self.identity, self.config.timing.lease_duration_seconds, self._stamp()
        )
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.config.name, "namespace": self.config.namespace},
            "spec": record.spec(),
        }
        try:
            self._lease = await self.client.create(LEASES, body, self.config.namespace)
        except ApiError as exc:
            log.debug("%s: creating the lease failed: %s", self._where, exc)
            return False
        self._observation = Observation(record, self._clock())
        return True

    async def _release(self) -> None:
        if (
            self._lease is None
            or self._observation is None
            or self._observation.record.holder != self.identity
        ):
            return
        record = released(self._observation.record, self._stamp())
        if await self._write(self._lease, record):
            log.info("%s: released the lease", self._where)
        else:
            log.warning("%s: could not release the lease; it expires on its own", self._where)


async def _call(fn: Callable[[], Awaitable[None]]) -> None:
    # A failing on_started does not end the term (client-go neither); say so loudly.
    try:
        await fn()
    except Exception:
        log.exception("the on_started callback of the leader failed")
