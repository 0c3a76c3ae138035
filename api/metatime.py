"""Kubernetes timestamps: ``metav1.Time`` and ``metav1.MicroTime`` as the API writes them, and
their parsing.

Every component that writes a timestamp into an object (the embedded API server and kubelets,
the operator's conditions, the scheduler's leases and conditions, the exporter's readiness
condition) formats it here. Pure.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["from_unix_nanos", "parse_time", "rfc3339", "rfc3339_micro"]


def rfc3339(when: datetime) -> str:
    """``metav1.Time``: whole seconds, UTC, ``Z``."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(when: datetime) -> str:
    """``metav1.MicroTime``: six fractional digits, UTC, ``Z``."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_unix_nanos(nanos: int) -> datetime:
    """A wall-clock time in nanoseconds since the epoch, to the microsecond (no float rounding)."""
    seconds, rest = divmod(nanos, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=rest // 1000)


def parse_time(text: str) -> datetime:
    """Parse RFC 3339 (``Z`` or an offset, with or without fractions, as kopf sends isoformat())."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)
