"""Client-side rate limiting: a token bucket with QPS and burst, as client-go's ``flowcontrol``.

The bucket starts full (``burst`` tokens), refills at ``qps`` tokens per second up to
``burst``, and every request takes one token.  A request that finds the bucket empty
still takes its token (the count goes negative) and is told how long to wait, so
concurrent callers queue up in order — the arithmetic of ``golang.org/x/time/rate``'s
reservations, which client-go's token-bucket limiter wraps.

This module is pure: the caller passes the time in and does the sleeping.
"""

from __future__ import annotations

from dataclasses import dataclass

from nrop.sched.errors import ConfigError

__all__ = ["DEFAULT_SCHEDULER_RATE_LIMIT", "RateLimit", "TokenBucket"]


@dataclass(frozen=True, slots=True)
class RateLimit:
    """Requests per second and the burst allowed above it (``clientConnection.qps`` / ``burst``)."""

    qps: float
    burst: int

    def __post_init__(self) -> None:
        if not self.qps > 0:
            raise ConfigError("qps", f"Invalid value: {self.qps!r}: must be greater than zero")
        if self.burst < 1:
            raise ConfigError("burst", f"Invalid value: {self.burst!r}: must be at least 1")


#: kube-scheduler's ``clientConnection`` defaults (KubeSchedulerConfiguration v1).
DEFAULT_SCHEDULER_RATE_LIMIT = RateLimit(qps=50.0, burst=100)


class TokenBucket:
    """A token bucket over an external clock: :meth:`reserve` says how long a request must wait."""

    def __init__(self, limit: RateLimit, now: float) -> None:
        self.limit = limit
        self._tokens = float(limit.burst)
        self._last = now

    @property
    def tokens(self) -> float:
        """Tokens left at the last reservation (negative: requests already queued for later)."""
        return self._tokens

    def reserve(self, now: float) -> float:
        """Take one token at time ``now``; returns the delay in seconds before the request may go."""
        # A clock that went backwards refills nothing (x/time/rate does the same).
        elapsed = max(0.0, now - self._last)
        self._last = max(self._last, now)
        self._tokens = min(float(self.limit.burst), self._tokens + elapsed * self.limit.qps)
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.limit.qps
