"""Leader election over a ``coordination.k8s.io/v1`` Lease, decided as pure functions of plain data.

This is client-go's ``tryAcquireOrRenew`` (``tools/leaderelection/leaderelection.go``) without
the I/O, the one rule both the operator (:mod:`nrop.operator.leaderelection`, upstream's
controller-runtime manager) and the scheduler (:mod:`nrop.sched.leaderelection`, kube-scheduler)
follow. Given the lease record last observed, *when this candidate first observed it* (its own
monotonic clock, never the timestamps written in the lease: other hosts' clocks may be skewed),
the current time and the candidate's identity, :func:`decide` says whether to create the lease,
acquire it, renew it, wait, or give leadership up. :func:`record_for` and :func:`released` build
the record to write; each component's loop does the reading and writing. Both name a candidate
as their upstreams do, ``<hostname>_<uuid>`` (:func:`candidate_identity`): every process is a
new candidate, a container restarted in the same pod included.

A lease is valid while ``observed_at + leaseDurationSeconds > now``; its holder keeps it by
rewriting ``renewTime`` (a candidate whose identity already holds it renews at once), a newcomer
takes an empty or expired lease and bumps ``leaseTransitions``.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Decision",
    "LeaseRecord",
    "Observation",
    "candidate_identity",
    "decide",
    "lease_valid",
    "observe",
    "record_for",
    "released",
]


def candidate_identity(hostname: str) -> str:
    """A process's identity in an election: ``<hostname>_<uuid>``, as controller-runtime's manager
    and kube-scheduler build it (a new UUID per call: one per process)."""
    return f"{hostname}_{uuid.uuid4()}"


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The leader-election fields of a Lease's spec."""

    holder: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int = 0

    @classmethod
    def from_lease(cls, lease: dict[str, Any]) -> LeaseRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            lease_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def spec(self) -> dict[str, Any]:
        """The Lease ``spec`` carrying this record (client-go writes an empty holder as ``""``)."""
        return {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.lease_transitions,
        }


@dataclass(frozen=True, slots=True)
class Observation:
    """A lease record and the local monotonic time at which it was first seen in this form."""

    record: LeaseRecord
    observed_at: float


def observe(previous: Observation | None, record: LeaseRecord, now: float) -> Observation:
    """The observation after reading ``record`` at ``now``: the clock restarts only when it changed."""
    if previous is not None and previous.record == record:
        return previous
    return Observation(record, now)


def lease_valid(observation: Observation, now: float) -> bool:
    return observation.observed_at + observation.record.lease_duration_seconds > now


class Decision(enum.StrEnum):
    CREATE = "create"  # there is no Lease object yet
    ACQUIRE = "acquire"  # empty or expired: take it (a new leadership term)
    RENEW = "renew"  # we hold it: rewrite renewTime
    WAIT = "wait"  # someone else holds a valid lease
    LOST = "lost"  # we were leading, and someone else now holds a valid lease


def decide(observation: Observation | None, now: float, me: str, leading: bool) -> Decision:
    """What candidate ``me`` should do given the lease it observed (``None``: no Lease exists)."""
    if observation is None:
        return Decision.CREATE
    record = observation.record
    if record.holder == me:
        return Decision.RENEW
    if record.holder and lease_valid(observation, now):
        return Decision.LOST if leading else Decision.WAIT
    return Decision.ACQUIRE


def record_for(
    decision: Decision, current: LeaseRecord | None, me: str, duration_seconds: int, stamp: str
) -> LeaseRecord:
    """The record to write for a CREATE, ACQUIRE or RENEW decision at wall time ``stamp``."""
    if decision is Decision.RENEW and current is not None:
        # A renewal keeps the term's acquire time and transition count.
        return LeaseRecord(me, duration_seconds, current.acquire_time, stamp, current.lease_transitions)
    if decision is Decision.ACQUIRE and current is not None:
        return LeaseRecord(me, duration_seconds, stamp, stamp, current.lease_transitions + 1)
    if decision is Decision.CREATE:
        return LeaseRecord(me, duration_seconds, stamp, stamp, 0)
    raise ValueError(f"no record to write for decision {decision.value!r}")


def released(current: LeaseRecord, stamp: str) -> LeaseRecord:
    """The record a leader writes when it steps down: no holder, a one-second lease (client-go's release)."""
    return LeaseRecord("", 1, stamp, stamp, current.lease_transitions)
