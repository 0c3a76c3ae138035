"""Go durations (``metav1.Duration`` in the CRs: ``10s``, ``1m30s``, ``500ms``) parsed and printed as Go does.

Pure. (The exporter has the same rules in ``nrop.rte.config``; that module pulls the
Kubernetes and gRPC clients, which the operator's pure modules must not import.)
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["format_duration", "parse_duration"]

_UNITS: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds of a Go duration string; ``ValueError`` naming the text when it is not one."""
    value = text.strip()
    sign = -1.0 if value.startswith("-") else 1.0
    body = value.lstrip("+-")
    if body == "0":
        return 0.0
    if not body:
        raise ValueError(f"time: invalid duration {text!r}")
    total, pos = 0.0, 0
    while pos < len(body):
        match = _PART.match(body, pos)
        if match is None:
            raise ValueError(f"time: invalid duration {text!r}")
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    return sign * total


def format_duration(seconds: float) -> str:
    """Go's ``Duration.String()`` for whole milliseconds and more (``0s``, ``5s``, ``1m30s``, ``1h0m0s``)."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    if seconds < 1:
        return f"{sign}{_trim(seconds * 1000)}ms"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{sign}{int(hours)}h{int(minutes)}m{_trim(secs)}s"
    if minutes:
        return f"{sign}{int(minutes)}m{_trim(secs)}s"
    return f"{sign}{_trim(secs)}s"


def _trim(value: float) -> str:
    text = f"{value:.9f}".rstrip("0").rstrip(".")
    return text or "0"
