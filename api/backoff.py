"""Exponential back-off between failed attempts, shared by the exporter and the scheduler's reflectors."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Backoff"]


@dataclass
class Backoff:
    """``initial`` seconds, times ``factor`` per failure, capped at ``maximum``; ``reset()`` after a success."""

    initial: float = 0.5
    factor: float = 2.0
    maximum: float = 10.0
    failures: int = 0

    def delay(self, failures: int) -> float:
        """The wait after ``failures`` earlier consecutive failures (none: ``initial``)."""
        return min(self.maximum, self.initial * self.factor**failures)

    def next_delay(self) -> float:
        delay = self.delay(self.failures)
        self.failures += 1
        return delay

    def reset(self) -> None:
        self.failures = 0
