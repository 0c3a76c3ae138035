"""The scheduler's leader-election timing: ``leaderElection``'s three durations, checked as client-go checks them.

The lease rule itself (when to create, acquire, renew or give up a Lease) is client-go's and
lives in :mod:`nrop.api.leases`, shared with the operator; :mod:`nrop.sched.leaderelection`
runs the loop with these durations.
"""

from __future__ import annotations

from dataclasses import dataclass

from nrop.sched.errors import ConfigError

__all__ = ["JITTER_FACTOR", "ElectionTiming"]

#: client-go's jitter of the acquire loop: wait between ``retryPeriod`` and ``2.2 × retryPeriod``.
JITTER_FACTOR = 1.2


@dataclass(frozen=True, slots=True)
class ElectionTiming:
    """The three durations of leader election, in seconds (kube-scheduler's defaults)."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        # The same rules as client-go's NewLeaderElector, named after the configuration fields.
        for name in ("lease_duration", "renew_deadline", "retry_period"):
            if getattr(self, name) <= 0:
                field = _camel(name)
                raise ConfigError(
                    f"leaderElection.{field}", f"must be greater than zero, got {getattr(self, name)}"
                )
        if self.lease_duration <= self.renew_deadline:
            raise ConfigError(
                "leaderElection.leaseDuration",
                f"must be greater than renewDeadline ({self.lease_duration} <= {self.renew_deadline})",
            )
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ConfigError(
                "leaderElection.renewDeadline",
                f"must be greater than retryPeriod*{JITTER_FACTOR} "
                f"({self.renew_deadline} <= {JITTER_FACTOR * self.retry_period:g})",
            )

    @property
    def lease_duration_seconds(self) -> int:
        """What goes into ``spec.leaseDurationSeconds`` (whole seconds, at least one)."""
        return max(1, int(self.lease_duration))


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.title() for part in rest)
