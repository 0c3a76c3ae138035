"""Time for the embedded cluster: an injectable clock and the two Kubernetes timestamp formats.

Shared by the API server, the controllers and the emulated kubelets, so it lives
above all three; the ``Clock`` protocol is what tests replace to move time by hand.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


def rfc3339(when: datetime) -> str:
    """``metav1.Time``: whole seconds, UTC, ``Z``."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(when: datetime) -> str:
    """``metav1.MicroTime``: six fractional digits, UTC, ``Z``."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> datetime:
    """Parse RFC 3339 (``Z`` or an offset, with or without fractions, as kopf sends isoformat())."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)
